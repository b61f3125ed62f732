import Accounts
import AppleIDEmulator
import Foundation
import Logging
import NIOHTTP1
import OrchardServer
import Prometheus
import Storage

/// The receiving team of the demo's app transfer: its team, its key, and what a second installation needs.
struct DemoReceivingSide {
    static let teamID = "DEMOTEAM02"
    static let keyID = "DEMOKEY002"

    /// Starts installations.
    let demo: Demo
    /// The sending installation's configuration (team `DEMOTEAM01`).
    let sendingConfiguration: OrchardConfiguration
    /// The receiving team's `.p8`.
    let privateKeyPEM: String
    /// Where the receiving installation's database goes.
    let directory: URL
    let logger: Logger

    /// The receiving installation's configuration: its own database and vault key, the receiving team's key, the app's
    /// client id.
    func configuration(clientID: String) -> OrchardConfiguration {
        var configuration = sendingConfiguration
        configuration.database.url = .sqlite(path: directory.appendingPathComponent("orchard-receiving.sqlite").path)
        configuration.vaultKeys = [VaultKey.generate(id: "demo-b")]
        configuration.apple.teamID = Self.teamID
        configuration.apple.keyID = Self.keyID
        configuration.apple.privateKeyPEM = privateKeyPEM
        configuration.apple.clientIDs = [clientID]
        configuration.webFlow.clientID = nil
        return configuration
    }
}

extension DemoScript {
    /// The app moves to another developer team with its users (TN3159): export here, import into a second
    /// installation, and the user signs in there into the same account.
    func appTransfer() async throws {
        step(20, "Grace signs up; then the app moves to another developer team, and its users with it (app transfer)")
        let grace = emulator.makeUser(email: "grace@example.com", isPrivateEmail: false, firstName: "Grace", lastName: "Hopper")
        let signUp = try await signIn(grace, expect: 200, at: nil)
        let account = signUp["account"] as? [String: Any] ?? [:]
        let accountID = try string(account, "id")
        show("POST /v1/auth/apple -> 200, account \(accountID), apple_sub \(abbreviate(try string(account, "apple_sub"))) (team DEMOTEAM01)")

        let side = receivingSide
        let logger = side.logger
        let (sending, _) = try await buildLifecycle(
            OrchardDependencies(
                configuration: side.sendingConfiguration,
                database: database,
                sessionBackend: database.sessionBackend,
                httpClient: http,
                clock: clock,
                registry: PrometheusCollectorRegistry(),
                logger: logger
            )
        )
        let exported = try await sending.transfer.export(target: DemoReceivingSide.teamID, clientIDs: [clientID], logger: logger)
        show(
            "orchard transfer export --target \(DemoReceivingSide.teamID): exported \(exported[.exported]), "
                + "revoked_before_transfer \(exported[.revokedBeforeTransfer]) (Carol, who stopped using it), failed \(exported[.failed])"
        )
        guard let line = exported.lines.first(where: { $0.accountID == accountID }) else { throw DemoError("Grace was not exported") }
        show("Grace's line: account_id \(line.accountID), transfer_sub \(abbreviate(line.transferSub)), no subject, no email")

        try emulator.transfer(clientID: clientID, toTeam: DemoReceivingSide.teamID)
        show("the app moves to team \(DemoReceivingSide.teamID) in App Store Connect (the emulator: POST /_emulator/transfer)")

        // The receiving team's own installation: another database, another vault key, its team's key.
        let configuration = side.configuration(clientID: clientID)
        guard case .sqlite(let path) = configuration.database.url else { throw DemoError("the receiving side is not on SQLite") }
        let receivingDatabase = try await SQLiteDatabaseClient.open(path: path, logger: logger)
        let server = try await side.demo.startOrchard(configuration, database: receivingDatabase, http: http, clock: clock, logger: logger)
        do {
            let (receiving, _) = try await buildLifecycle(
                OrchardDependencies(
                    configuration: configuration,
                    database: receivingDatabase,
                    sessionBackend: receivingDatabase.sessionBackend,
                    httpClient: http,
                    clock: clock,
                    registry: PrometheusCollectorRegistry(),
                    logger: logger
                )
            )
            let imported = try await receiving.transfer.import(exported.lines, logger: logger)
            show(
                "orchard transfer import (second installation, \(server.baseURL)): imported \(imported.imported), "
                    + "exchanged \(imported[.exchanged]), pending \(imported[.imported]), failed \(imported[.failed])"
            )
            let again = try await signIn(grace, expect: 200, at: server.baseURL)
            let moved = again["account"] as? [String: Any] ?? [:]
            show(
                "Grace signs in there: is_new_account \(flag(again["is_new_account"])), account \(try string(moved, "id")), "
                    + "apple_sub \(abbreviate(try string(moved, "apple_sub"))) (team \(DemoReceivingSide.teamID)'s), first_name "
                    + "\((moved["name"] as? [String: Any])?["first_name"] ?? "-")"
            )
        } catch {
            await server.stop()
            await receivingDatabase.close()
            throw error
        }
        await server.stop()
        await receivingDatabase.close()
    }

    /// A native sign-in of `user` at the Orchard at `base` (the demo's by default).
    private func signIn(_ user: EmulatedUser, expect: Int, at base: String?) async throws -> [String: Any] {
        let nonce = try string(try await call(.POST, "/v1/auth/apple/nonce", expect: 201, at: base), "nonce")
        let authorization = try emulator.authorize(user: user, clientID: clientID, nonce: sha256(nonce))
        return try await call(
            .POST,
            "/v1/auth/apple",
            json: [
                "identity_token": authorization.identityToken, "authorization_code": authorization.authorizationCode, "nonce": nonce,
                "user": ["name": ["first_name": user.firstName ?? "", "last_name": user.lastName ?? ""]],
            ],
            expect: expect,
            at: base
        )
    }
}
