import Accounts
import AppleID
import AppleIDEmulator
import Crypto
import CryptoExtras
import Foundation
import Logging
import OrchardTesting

#if canImport(Glibc)
import Glibc
#endif

/// Identity-token verification in process, one verification at a time: an emulator-signed identity token verified in
/// a loop by Orchard's `AppleTokenVerifier` over a static key set (no HTTP), and, for comparison, the bare RS256
/// signature check on the same bytes through swift-crypto (BoringSSL), the library under Orchard's JWT code.
///
/// `VerifyBenchmark [--seconds 5] [--out DIR]`. With `--out`, writes `token.jwt`, `jwks.json` and `client_id` there so
/// `Benchmarks/scripts/pyjwt_verify.py` can time PyJWT on the very same token and key. Prints one JSON object.
@main
struct VerifyBenchmark {
    static let clientID = "com.example.orchard.app"

    static func main() async throws {
        var seconds = 5.0
        var outDirectory: String?
        var arguments = CommandLine.arguments.dropFirst().makeIterator()
        while let argument = arguments.next() {
            switch argument {
            case "--seconds": seconds = Double(arguments.next() ?? "") ?? seconds
            case "--out": outDirectory = arguments.next()
            default:
                FileHandle.standardError.write(Data("usage: VerifyBenchmark [--seconds S] [--out DIR]\n".utf8))
                exit(64)
            }
        }

        let emulator = try AppleEmulator(
            configuration: AppleEmulatorConfiguration(
                teamID: "EMULATOR01",
                keyID: "EMULATORK1",
                clientIDs: [clientID],
                clientPublicKeyPEM: AppleEmulatorConfiguration.makeClientKey().publicKeyPEM
            )
        )
        let user = emulator.makeUser()
        let code = "c" + UUID().uuidString
        let token = try emulator.signIdentityToken(
            claims: emulator.identityTokenClaims(user: user, clientID: clientID, nonce: "n-\(UUID().uuidString)", authorizationCode: code)
        )
        let jwks = try emulator.jsonWebKeySet()
        let keys = AppleKeySet(
            source: try StaticAppleKeySource(json: jwks),
            clock: SystemWallClock(),
            logger: Logger(label: "verify-benchmark")
        )
        let verifier = AppleTokenVerifier(keys: keys, clientIDs: [clientID], clock: SystemWallClock())
        if let outDirectory {
            try token.write(toFile: outDirectory + "/token.jwt", atomically: true, encoding: .utf8)
            try jwks.write(to: URL(fileURLWithPath: outDirectory + "/jwks.json"))
            try clientID.write(toFile: outDirectory + "/client_id", atomically: true, encoding: .utf8)
        }

        // Orchard's whole verification: parse, alg/kid, key lookup, RS256, iss, aud, exp, iat.
        _ = try await verifier.verifyIdentityToken(token, expectedAudience: clientID)
        let orchard = try await timed(seconds: seconds) {
            _ = try await verifier.verifyIdentityToken(token, expectedAudience: clientID)
        }

        // The RSA operation alone, on the same signing input, signature and key.
        let parts = token.split(separator: ".")
        let signingInput = Data("\(parts[0]).\(parts[1])".utf8)
        let signature = _RSA.Signing.RSASignature(rawRepresentation: try base64URL(String(parts[2])))
        let jwk = try JSONSerialization.jsonObject(with: jwks) as! [String: [[String: String]]]
        let publicKey = try _RSA.Signing.PublicKey(
            n: try base64URL(jwk["keys"]![0]["n"]!),
            e: try base64URL(jwk["keys"]![0]["e"]!)
        )
        let rsaOnly = try await timed(seconds: seconds) {
            let digest = SHA256.hash(data: signingInput)
            guard publicKey.isValidSignature(signature, for: digest, padding: .insecurePKCS1v1_5) else {
                throw VerifyFailure()
            }
        }

        // The claims' JSON alone, as the verifier decodes it (Foundation's JSONDecoder), and Foundation's cheapest JSON
        // reader on the same bytes: together they show how much of the work around the RSA operation is JSON.
        let payload = try base64URL(String(parts[1]))
        let claimsOnly = try await timed(seconds: seconds / 2) {
            _ = try JSONDecoder().decode(AppleIdentityClaims.self, from: payload)
        }
        let serializationOnly = try await timed(seconds: seconds / 2) {
            _ = try JSONSerialization.jsonObject(with: payload)
        }

        let mint = try await accessTokenIssue(seconds: seconds)

        let report: [String: Any] = [
            "orchard_access_token_issue_per_s": mint.perSecond,
            "orchard_verify_per_s": orchard.perSecond,
            "orchard_verify_cpu_s": orchard.cpu,
            "orchard_verify_count": orchard.count,
            "boringssl_rs256_per_s": rsaOnly.perSecond,
            "boringssl_rs256_cpu_s": rsaOnly.cpu,
            "foundation_claims_decode_per_s": claimsOnly.perSecond,
            "foundation_json_serialization_per_s": serializationOnly.perSecond,
            "token_bytes": token.utf8.count,
        ]
        let data = try JSONSerialization.data(withJSONObject: report, options: [.sortedKeys])
        print(String(decoding: data, as: UTF8.self))
    }

    struct VerifyFailure: Error {}

    /// `AccessTokens.issue(sessionToken:)` in a loop: the session read (from memory) and the ES256 signature of a
    /// token, as `POST /v1/session/token` runs them, without HTTP.
    static func accessTokenIssue(seconds: Double) async throws -> (count: Int, perSecond: Double, cpu: Double) {
        let store = InMemoryStore()
        let now = Date()
        let sessionToken = "benchmark-session-token"
        store.edit { tables in
            tables.accounts["acct_bench"] = AccountRecord(
                id: "acct_bench",
                subjectHash: "subject",
                sealedSubject: "v1.k.s",
                sealedEmail: nil,
                isPrivateEmail: true,
                emailForwarding: .enabled,
                sealedName: nil,
                clientID: clientID,
                sealedRefreshToken: nil,
                sealedAccessToken: nil,
                sealedIdentityToken: nil,
                appleCredential: .valid,
                lastValidatedAt: now,
                nextValidationAt: nil,
                createdAt: now,
                updatedAt: now
            )
            let hash = SHA256.hash(data: Data(sessionToken.utf8)).map { String(format: "%02x", $0) }.joined()
            tables.sessions[hash] = SessionRecord(
                id: "sess_bench",
                tokenHash: hash,
                accountID: "acct_bench",
                createdAt: now,
                expiresAt: now.addingTimeInterval(86_400)
            )
        }
        let lifecycle = Lifecycle(
            store: store,
            vault: TokenVault(keys: [try VaultKey(id: "k1", keyBytes: Data(repeating: 7, count: 32))]),
            apple: OfflineAppleGateway(),
            clock: SystemWallClock()
        )
        try await lifecycle.accessTokens.keys.prepare()
        _ = try await lifecycle.accessTokens.issue(sessionToken: sessionToken)
        return try await timed(seconds: seconds) {
            _ = try await lifecycle.accessTokens.issue(sessionToken: sessionToken)
        }
    }

    /// Runs `body` back to back for `seconds`, off the main actor as a server handler would; the rate is per wall second, `cpu` the process's CPU seconds meanwhile.
    static func timed(
        seconds: Double,
        _ body: @Sendable () async throws -> Void
    ) async throws -> (count: Int, perSecond: Double, cpu: Double) {
        let cpuBefore = cpuSeconds()
        let start = ContinuousClock.now
        let deadline = start + .milliseconds(Int(seconds * 1000))
        var count = 0
        while ContinuousClock.now < deadline {
            for _ in 0..<64 { try await body() }
            count += 64
        }
        let elapsed = (ContinuousClock.now - start) / .seconds(1)
        return (count, Double(count) / elapsed, cpuSeconds() - cpuBefore)
    }

    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(Int32(RUSAGE_SELF.rawValue), &usage)
        func s(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
        return s(usage.ru_utime) + s(usage.ru_stime)
    }

    static func base64URL(_ text: String) throws -> Data {
        guard let data = Base64URL.decode(text.utf8) else { throw VerifyFailure() }
        return data
    }
}
