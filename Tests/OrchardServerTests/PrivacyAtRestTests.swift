import Accounts
import AppleIDEmulator
import Foundation
import NIOHTTP1
import OrchardServer
import OrchardTesting
import Testing

@Suite("Personal data at rest")
struct PrivacyAtRestTests {
    @Test("no token, subject, email or name of a signed-up user is in the SQLite files in plaintext or base64")
    func rawByteScan() async throws {
        try await OrchardHarness.with { h in
            let user = h.emulator.makeUser(email: "ada.lovelace@example.com", firstName: "Augusta", lastName: "Byronesque")
            let (response, authorization, _) = try await h.signIn(
                user,
                userDetails: ["name": ["first_name": "Augusta", "last_name": "Byronesque"], "email": "ada.lovelace@example.com"]
            )
            #expect(response.status == 200)
            let exchange = try #require(h.emulator.calls(to: .token).first)
            _ = exchange
            var secrets = [
                user.sub, "ada.lovelace@example.com", "Augusta", "Byronesque", authorization.identityToken, authorization.authorizationCode,
            ]
            for grant in h.emulator.issuedTokens(sub: user.sub) { secrets.append(grant) }
            let files = try await h.databaseBytes()
            #expect(!files.isEmpty)
            for file in files {
                for secret in secrets {
                    for form in [secret, Data(secret.utf8).base64EncodedString()] {
                        #expect(file.bytes.range(of: Data(form.utf8)) == nil, "a personal value was found in \(file.name)")
                    }
                }
            }
        }
    }
}
