import Accounts
import AppleIDEmulator
import Foundation
import OrchardServer
import Prometheus
import Storage

extension DemoScript {
    /// An app moves to Orchard from Firebase with its users: `orchard accounts import`, then one of them signs in with
    /// Apple and lands in the account Firebase's user id names.
    func importAct() async throws {
        step(19, "An app arrives from Firebase with its users: imported, and the next Sign in with Apple finds them")
        let henry = emulator.makeUser(email: "henry@example.com", isPrivateEmail: false)
        // Firebase Admin's listUsers, as the app's export wrote it: Henry signed in with Apple, Iris with Google.
        let export = """
            {"users": [
              {"uid": "fbHenry3Lk9QzT", "email": "henry@example.com", "emailVerified": true, "displayName": "Henry Moore",
               "metadata": {"creationTime": "Tue, 10 Jan 2023 10:00:00 GMT"},
               "providerData": [{"uid": "\(henry.sub)", "email": "henry@example.com", "providerId": "apple.com"}]},
              {"uid": "fbIris8Wm2", "email": "iris@example.com", "emailVerified": true, "displayName": "Iris Murdoch",
               "metadata": {"creationTime": "Wed, 11 Jan 2023 09:00:00 GMT"},
               "providerData": [{"uid": "1085511", "providerId": "google.com"}]}
            ]}
            """
        let (lifecycle, _) = try await buildLifecycle(
            OrchardDependencies(
                configuration: receivingSide.sendingConfiguration,
                database: database,
                sessionBackend: database.sessionBackend,
                httpClient: http,
                clock: clock,
                registry: PrometheusCollectorRegistry(),
                logger: receivingSide.logger
            )
        )
        let ledger = try ScratchImportLedger()
        defer { ledger.remove() }
        var chunks = [Array(export.utf8)]
        let outcome = try await lifecycle.imports.run(
            source: .firebase,
            clientIDs: [clientID],
            defaultClientID: clientID,
            dryRun: false,
            ledger: ledger,
            nextChunk: { chunks.popLast() }
        )
        show(
            "orchard accounts import users.json --from firebase: imported \(outcome[.imported]), "
                + "no_apple_identity \(outcome[.noAppleIdentity]) (Iris signed in with Google)"
        )
        let (_, account) = try await signIn(henry)
        show(
            "Henry signs in with Apple: account \(try string(account, "id")) (his Firebase uid), email \(account["email"] ?? "-"), "
                + "first_name \((account["name"] as? [String: Any])?["first_name"] ?? "-"), apple_credential \(account["apple_credential"] ?? "?")"
        )
    }
}
