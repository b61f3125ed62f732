import Accounts
import AppleIDEmulator
import Foundation
import NIOHTTP1
import OrchardServer
import OrchardTesting
import Testing

extension AccessTokenTests {
    /// Whether PyJWT (with cryptography) is installed: without it the test is skipped, and shown as skipped (under
    /// `CI=true` it runs, and fails for the missing module).
    static let hasPyJWT: Bool = {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", "import jwt, cryptography"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? ChildProcess.start(process)) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }()

    /// Runs PyJWT over `cases` against the harness's key set: one result per case, or `nil` when PyJWT is missing.
    static func pyJWT(_ h: OrchardHarness, _ cases: [[String: String]]) async throws -> [[String: Any]]? {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let file = directory.file("cases.json")
        let spec: [String: Any] = ["jwks_url": h.baseURL + "/.well-known/jwks.json", "cases": cases]
        try JSONSerialization.data(withJSONObject: spec).write(to: URL(fileURLWithPath: file))
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Scripts/verify_access_token.py")
        let output: Data? = try await offThePool {
            let process = Process()
            let pipe = Pipe()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", script.path, file]
            process.standardOutput = pipe
            process.standardError = FileHandle.nullDevice
            try ChildProcess.start(process)
            let data = pipe.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            if process.terminationStatus == 3 { return nil }
            return process.terminationStatus == 0 ? data : Data("[{\"ok\": false, \"error\": \"the script failed\"}]".utf8)
        }
        guard let output else { return nil }
        return try JSONSerialization.jsonObject(with: output) as? [[String: Any]] ?? []
    }

    @Test(
        "PyJWT verifies Orchard's tokens against the served key set: signature, typ, iss, aud, exp; a withdrawn key's fail",
        .enabled(if: hasPyJWT || ProcessInfo.processInfo.environment["CI"] == "true", "PyJWT is not installed (pip install 'pyjwt[crypto]')")
    )
    func verifiedByPyJWT() async throws {
        try await OrchardHarness.with(
            configure: {
                $0.accessTokens.issuer = "https://auth.example.com"
                $0.accessTokens.audiences = ["https://api.example.com"]
            },
            jobs: .byTest,
            { h in
                let session = try await h.signUp(h.emulator.makeUser())
                let valid = try await Self.token(h, session)
                var tampered = Array(valid)
                tampered[tampered.count - 3] = tampered[tampered.count - 3] == "A" ? "B" : "A"

                func check(
                    _ token: String,
                    issuer: String = "https://auth.example.com",
                    audience: String = "https://api.example.com",
                    secondsLater: Int = 0
                ) -> [String: String] {
                    ["token": token, "issuer": issuer, "audience": audience, "seconds_later": String(secondsLater)]
                }
                guard
                    let results = try await Self.pyJWT(
                        h,
                        [
                            check(valid), check(valid, audience: "https://other.example.com"),
                            check(valid, issuer: "https://evil.example.com"), check(valid, secondsLater: 301), check(String(tampered)),
                            check(valid, secondsLater: 290),
                        ]
                    )
                else {
                    Issue.record("PyJWT is not installed (pip install 'pyjwt[crypto]'): the independent verification did not run")
                    return
                }
                let accountID = try #require(try await h.request(.GET, "/v1/session", bearer: session).json["account"] as? [String: Any])["id"]
                #expect(results.count == 6)
                #expect(results[5]["ok"] as? Bool == true, "still valid 290 s later: \(results[5])")
                #expect(results[0]["ok"] as? Bool == true, "\(results[0])")
                #expect(results[0]["sub"] as? String == accountID as? String)
                #expect((results[1]["error"] as? String)?.hasPrefix("InvalidAudienceError") == true, "\(results[1])")
                #expect((results[2]["error"] as? String)?.hasPrefix("InvalidIssuerError") == true, "\(results[2])")
                #expect((results[3]["error"] as? String)?.hasPrefix("ExpiredSignatureError") == true, "\(results[3])")
                #expect((results[4]["error"] as? String)?.hasPrefix("InvalidSignatureError") == true, "\(results[4])")

                // The current key is withdrawn (a compromised key): its tokens fail once the key set is fetched again,
                // and the new key's verify.
                let rotation = try await h.lifecycle.accessTokens.keys.rotate(revokeCurrent: true)
                #expect(rotation.withdrewPrevious)
                let fresh = try await Self.token(h, session)
                let after = try #require(try await Self.pyJWT(h, [check(valid), check(fresh)]))
                #expect((after[0]["error"] as? String)?.hasPrefix("PyJWKClientError") == true, "\(after[0])")
                #expect(after[1]["ok"] as? Bool == true, "\(after[1])")
                #expect(after[1]["kid"] as? String == rotation.newKeyID)
            }
        )
    }
}
