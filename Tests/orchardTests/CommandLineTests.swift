import AppleIDEmulator
import Foundation
import OrchardTesting
import Testing

@Suite("The orchard command line", .backendIndependent)
struct CommandLineTests {
    @Test(
        "every command has --help",
        arguments: [
            [], ["serve"], ["demo"], ["apple-emulator"], ["migrate"], ["token"], ["token", "inspect"], ["accounts"],
            ["accounts", "list"], ["accounts", "show"], ["accounts", "history"], ["vault"], ["vault", "status"], ["vault", "rotate"], ["config"],
            ["config", "check"],
            ["transfer"], ["transfer", "export"], ["transfer", "import"], ["transfer", "status"], ["keys"], ["keys", "list"], ["keys", "rotate"],
            ["accounts", "delete"], ["accounts", "import"], ["accounts", "revocations"], ["accounts", "webhooks"], ["operators"],
            ["operators", "add"], ["operators", "list"], ["operators", "remove"], ["notifications"], ["notifications", "list"],
            ["notifications", "doctor"],
        ]
    )
    func help(_ command: [String]) async throws {
        let result = try await OrchardProcess.runInBackground(command + ["--help"])
        #expect(result.status == 0)
        #expect(result.standardOutput.contains("USAGE"))
    }

    @Test("serve with no configuration exits 2 with one line naming the missing setting")
    func serveNeedsConfiguration() async throws {
        let result = try await OrchardProcess.runInBackground(["serve"])
        #expect(result.status == 2)
        #expect(result.standardError.contains("APPLE_TEAM_ID"))
        #expect(result.standardError.split(separator: "\n").count == 1)
    }

    @Test("a wrong setting is named: port, vault keys, access-token lifetimes and names, plain http to a remote Apple")
    func badSettings() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let key = directory.file("key.p8")
        try "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n".write(toFile: key, atomically: true, encoding: .utf8)
        let base = [
            "APPLE_TEAM_ID": "ABCDE12345", "APPLE_KEY_ID": "KEY1", "APPLE_PRIVATE_KEY_FILE": key,
            "APPLE_CLIENT_IDS": "com.example.app", "ORCHARD_VAULT_KEYS": "k1:\(Data(count: 32).base64EncodedString())",
            "ORCHARD_DATABASE_URL": "sqlite:\(directory.file("db.sqlite"))",
        ]
        let port = try await OrchardProcess.runInBackground(["serve"], environment: base.merging(["ORCHARD_PORT": "eighty"]) { $1 })
        #expect(port.status == 2)
        #expect(port.standardError.contains("ORCHARD_PORT"))
        let vault = try await OrchardProcess.runInBackground(["serve"], environment: base.merging(["ORCHARD_VAULT_KEYS": "k1:short"]) { $1 })
        #expect(vault.status == 2)
        #expect(vault.standardError.contains("ORCHARD_VAULT_KEYS"))
        // An access token lives 1 s to 1 hour; an issuer or audience with a space cannot be matched by a verifier.
        for (setting, value) in [
            ("ORCHARD_ACCESS_TOKEN_TTL", "0"), ("ORCHARD_ACCESS_TOKEN_TTL", "3601"), ("ORCHARD_ACCESS_TOKEN_TTL", "five"),
            ("ORCHARD_TOKEN_KEY_LIFETIME", "10"), ("ORCHARD_TOKEN_ISSUER", "https://auth example.com"),
            ("ORCHARD_TOKEN_AUDIENCE", "api,back end"),
        ] {
            let refused = try await OrchardProcess.runInBackground(["serve"], environment: base.merging([setting: value]) { $1 })
            #expect(refused.status == 2, "\(setting)=\(value)")
            #expect(refused.standardError.contains(setting), "\(setting)=\(value): \(refused.standardError)")
        }
        let http = try await OrchardProcess.runInBackground(
            ["serve"],
            environment: base.merging(["APPLE_BASE_URL": "http://apple.example.com"]) { $1 }
        )
        #expect(http.status == 2)
        #expect(http.standardError.contains("APPLE_BASE_URL"))
        // Loopback by IP literal (or `localhost`), not by how a name begins.
        for remote in ["http://127.evil.example", "http://127.0.0.1.evil.example", "http://localhost.evil.example", "http://[::2]:80"] {
            let refused = try await OrchardProcess.runInBackground(["serve"], environment: base.merging(["APPLE_BASE_URL": remote]) { $1 })
            #expect(refused.status == 2, "\(remote)")
            #expect(refused.standardError.contains("APPLE_BASE_URL"), "\(remote): \(refused.standardError)")
        }
        let fast = try await OrchardProcess.runInBackground(
            ["serve"],
            environment: base.merging(["ORCHARD_REFRESH_VALIDATION_INTERVAL": "3600"]) { $1 }
        )
        #expect(fast.status == 2)
        #expect(fast.standardError.contains("ORCHARD_REFRESH_VALIDATION_INTERVAL"))
        let pem = try await OrchardProcess.runInBackground(["serve"], environment: base)
        #expect(pem.status == 2)
        #expect(pem.standardError.contains("APPLE_PRIVATE_KEY_FILE"))
        // The internet-facing settings.
        for (setting, value) in [
            ("ORCHARD_RATE_LIMIT_PER_MINUTE", "-1"), ("ORCHARD_TRUSTED_PROXIES", "10.0.0.0/8, proxy.example"),
            ("ORCHARD_METRICS_PORT", "metrics"), ("ORCHARD_TLS_KEY_FILE", directory.file("tls-key.pem")),
        ] {
            let refused = try await OrchardProcess.runInBackground(["serve"], environment: base.merging([setting: value]) { $1 })
            #expect(refused.status == 2, "\(setting)=\(value)")
            let named = setting == "ORCHARD_TLS_KEY_FILE" ? "ORCHARD_TLS_CERT_FILE" : setting
            #expect(refused.standardError.contains(named), "\(refused.standardError)")
        }
        // A certificate file that is not one, with an otherwise usable configuration.
        try AppleEmulatorConfiguration.makeClientKey().privateKeyPEM.write(toFile: key, atomically: true, encoding: .utf8)
        try "not a certificate".write(toFile: directory.file("cert.pem"), atomically: true, encoding: .utf8)
        let tls = try await OrchardProcess.runInBackground(
            ["serve"],
            environment: base.merging([
                "ORCHARD_TLS_CERT_FILE": directory.file("cert.pem"), "ORCHARD_TLS_KEY_FILE": directory.file("cert.pem"), "ORCHARD_PORT": "0",
            ]) { $1 }
        )
        #expect(tls.status == 2)
        #expect(tls.standardError.contains("ORCHARD_TLS_CERT_FILE"), "\(tls.standardError)")
    }

    @Test("config check prints every effective setting with its source, secrets redacted, and exits 2 on a bad key file")
    func configCheck() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let key = directory.file("key.p8")
        try AppleEmulatorConfiguration.makeClientKey().privateKeyPEM.write(toFile: key, atomically: true, encoding: .utf8)
        let vaultKey = Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        let file = directory.file("orchard.json")
        try #"{"ORCHARD_HOST": "0.0.0.0", "ORCHARD_PORT": 9000, "ORCHARD_WEBHOOK_SECRET": "whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQ="}"#
            .write(toFile: file, atomically: true, encoding: .utf8)
        let environment = [
            "APPLE_TEAM_ID": "ABCDE12345", "APPLE_KEY_ID": "KEY1", "APPLE_PRIVATE_KEY_FILE": key,
            "APPLE_CLIENT_IDS": "com.example.app", "ORCHARD_VAULT_KEYS": "k1:\(vaultKey)", "ORCHARD_PORT": "8443",
            "ORCHARD_DATABASE_URL": "postgres://orchard:hunter2-password@db.example:5432/orchard", "ORCHARD_CONFIG_FILE": file,
            "ORCHARD_WEBHOOK_URLS": "https://hooks.example/plain,https://ops:hook-password@hooks.example:8443/in?token=hook-token#x",
        ]
        let check = try await OrchardProcess.runInBackground(["config", "check"], environment: environment)
        #expect(check.status == 0, "\(check.standardError)")
        let lines = Set(check.standardOutput.split(separator: "\n").map(String.init))
        for expected in [
            "ORCHARD_PORT=8443 (environment)", "ORCHARD_HOST=0.0.0.0 (file)", "ORCHARD_SESSION_TTL=2592000 (default)",
            "ORCHARD_RATE_LIMIT_PER_MINUTE=120 (default)", "APPLE_TEAM_ID=ABCDE12345 (environment)",
            "ORCHARD_VAULT_KEYS=<redacted> (key ids: k1) (environment)", "ORCHARD_WEBHOOK_SECRET=<redacted> (file)",
            "APPLE_PRIVATE_KEY_FILE=<redacted> (environment)",
            "ORCHARD_DATABASE_URL=postgres://orchard:<redacted>@db.example:5432/orchard (environment)",
            "ORCHARD_WEBHOOK_URLS=https://hooks.example/plain,https://<redacted>@hooks.example:8443/in?<redacted>#x (environment)",
        ] {
            #expect(lines.contains(expected), "missing \(expected) in:\n\(check.standardOutput)")
        }
        for secret in [vaultKey, "hunter2-password", "c2VjcmV0LXNlY3JldC1zZWNyZXQ=", "BEGIN PRIVATE KEY", "hook-password", "hook-token"] {
            #expect(!check.standardOutput.contains(secret) && !check.standardError.contains(secret))
        }
        try "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n".write(toFile: key, atomically: true, encoding: .utf8)
        let broken = try await OrchardProcess.runInBackground(["config", "check"], environment: environment)
        #expect(broken.status == 2)
        #expect(broken.standardError.contains("APPLE_PRIVATE_KEY_FILE"))
    }

    @Test(
        "with only APPLE_REDIRECT_URI set, the site and the access tokens' issuer are its origin; a web client id Orchard does not accept is refused"
    )
    func webFlowDefaults() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let key = directory.file("key.p8")
        try AppleEmulatorConfiguration.makeClientKey().privateKeyPEM.write(toFile: key, atomically: true, encoding: .utf8)
        let environment = [
            "APPLE_TEAM_ID": "ABCDE12345", "APPLE_KEY_ID": "KEY1", "APPLE_PRIVATE_KEY_FILE": key,
            "APPLE_CLIENT_IDS": "com.example.app,com.example.web",
            "ORCHARD_VAULT_KEYS": "k1:\(Data(repeating: 7, count: 32).base64EncodedString())",
            "APPLE_REDIRECT_URI": "https://auth.example.com/v1/auth/apple/callback", "APPLE_WEB_CLIENT_ID": "com.example.web",
            "ORCHARD_DATABASE_URL": "sqlite:\(directory.file("orchard.sqlite"))",
        ]
        let check = try await OrchardProcess.runInBackground(["config", "check"], environment: environment)
        #expect(check.status == 0, "\(check.standardError)")
        let lines = Set(check.standardOutput.split(separator: "\n").map(String.init))
        #expect(lines.contains("ORCHARD_TOKEN_ISSUER=https://auth.example.com (default)"), "\(check.standardOutput)")
        #expect(lines.contains("APPLE_WEB_CLIENT_ID=com.example.web (environment)"), "\(check.standardOutput)")
        // The bundle id of another app, or a typo: Apple's identity tokens would name an audience Orchard refuses.
        let foreign = try await OrchardProcess.runInBackground(
            ["config", "check"],
            environment: environment.merging(["APPLE_WEB_CLIENT_ID": "com.example.webb"]) { $1 }
        )
        #expect(foreign.status == 2)
        #expect(foreign.standardError.contains("APPLE_WEB_CLIENT_ID"), "\(foreign.standardError)")
    }

    @Test("a usage error exits 64")
    func usageError() async throws {
        #expect(try await OrchardProcess.runInBackground(["serve", "--no-such-flag"]).status == 64)
        #expect(try await OrchardProcess.runInBackground(["no-such-command"]).status == 64)
    }

    @Test("shell completion scripts for bash, zsh and fish name every command")
    func completionScripts() async throws {
        for shell in ["bash", "zsh", "fish"] {
            let script = try await OrchardProcess.runInBackground(["--generate-completion-script", shell])
            #expect(script.status == 0)
            for command in ["serve", "accounts", "vault", "config", "apple-emulator", "token"] {
                #expect(script.standardOutput.contains(command), "the \(shell) completion lacks \(command)")
            }
        }
    }

    @Test("migrate creates the schema with no other configuration, and is idempotent")
    func migrate() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let env = ["ORCHARD_DATABASE_URL": "sqlite:\(directory.file("orchard.sqlite"))"]
        let first = try await OrchardProcess.runInBackground(["migrate"], environment: env)
        #expect(first.status == 0, "\(first.standardError)")
        #expect(first.standardOutput.contains("applied"))
        #expect(FileManager.default.fileExists(atPath: directory.file("orchard.sqlite")))
        let second = try await OrchardProcess.runInBackground(["migrate"], environment: env)
        #expect(second.standardOutput.contains("up to date"))
    }

    @Test("the configuration file is read, and the environment wins over it")
    func configFile() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let file = directory.file("orchard.json")
        try #"{"ORCHARD_DATABASE_URL": "sqlite:\#(directory.file("from-file.sqlite"))", "ORCHARD_LOG_LEVEL": "error"}"#
            .write(toFile: file, atomically: true, encoding: .utf8)
        #expect(try await OrchardProcess.runInBackground(["migrate"], environment: ["ORCHARD_CONFIG_FILE": file]).status == 0)
        #expect(FileManager.default.fileExists(atPath: directory.file("from-file.sqlite")))
        let env = ["ORCHARD_CONFIG_FILE": file, "ORCHARD_DATABASE_URL": "sqlite:\(directory.file("from-env.sqlite"))"]
        #expect(try await OrchardProcess.runInBackground(["migrate"], environment: env).status == 0)
        #expect(FileManager.default.fileExists(atPath: directory.file("from-env.sqlite")))
        let yaml = directory.file("orchard.yaml")
        try "ORCHARD_DATABASE_URL: sqlite:\(directory.file("from-yaml.sqlite"))\n".write(toFile: yaml, atomically: true, encoding: .utf8)
        #expect(try await OrchardProcess.runInBackground(["migrate"], environment: ["ORCHARD_CONFIG_FILE": yaml]).status == 0)
        #expect(FileManager.default.fileExists(atPath: directory.file("from-yaml.sqlite")))
    }

    @Test("the demo runs the lifecycle with no configuration and exits 0")
    func demo() async throws {
        let result = try await OrchardProcess.runInBackground(["demo"], timeout: 120)
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput.contains("Demo complete."))
        #expect(result.standardOutput.contains("nonce_reused"))
        #expect(result.standardOutput.contains("session_revoked"))
        #expect(result.standardOutput.contains("email_forwarding disabled"))
        #expect(result.standardOutput.contains("apple_revocation pending"))
        #expect(result.standardOutput.contains("nothing found: both users are gone from the files"))
        // A grant ended at Apple is noticed at the next daily validation, which the demo's clock reaches.
        #expect(result.standardOutput.contains("grant_type=refresh_token -> 400 invalid_grant"))
        #expect(result.standardOutput.contains("401 session_revoked (apple_credential_revoked)"))
        #expect(result.standardOutput.contains("apple_credential revoked; nothing was sent to /auth/revoke"))
        // Carol's history says why: Apple's verdict, then the revocation that ended her sessions.
        #expect(result.standardOutput.contains("credential_revoked (invalid_grant)"), "\(result.standardOutput)")
        #expect(result.standardOutput.contains("apple_validation (invalid_grant)"))
        // A Work & School user: org_id in ACCOUNT and in the access token, no email.
        #expect(result.standardOutput.contains("org_id org_demo_school, email (none), email_verified false"))
        #expect(result.standardOutput.contains("carries org_id org_demo_school"))
        // The app moves to another team: Grace (and Henry, imported before) are exported, imported into a second
        // installation, and Grace signs in there.
        #expect(result.standardOutput.contains("exported 2, revoked_before_transfer 1"), "\(result.standardOutput)")
        #expect(result.standardOutput.contains("imported 2, exchanged 2, pending 0, failed 0"))
        #expect(result.standardOutput.contains("Grace signs in there: is_new_account false"))
        // An app arrives from Firebase: Henry is imported and recognised at his next Sign in with Apple.
        #expect(result.standardOutput.contains("--from firebase: imported 1, no_apple_identity 1"), "\(result.standardOutput)")
        #expect(result.standardOutput.contains("Henry signs in with Apple: account fbHenry3Lk9QzT (his Firebase uid)"))
    }
}
