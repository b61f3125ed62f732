import AppleIDEmulator
import InMemoryLogging
import Logging
import SQLKit
import Storage

extension OrchardHarness {
    /// The logger a harness hands Orchard: everything from trace up is kept in `memory`, and info and up is also
    /// printed to the test run's output.
    static func makeLogger(keepingIn memory: InMemoryLogHandler) -> Logger {
        var kept = memory
        kept.logLevel = .trace
        return Logger(label: "test.orchard") { label in
            MultiplexLogHandler([StreamLogHandler.standardOutput(label: label), kept])
        }
    }

    /// Every entry Orchard logged so far, at every level, as text: level, message, metadata and error.
    public var loggedLines: [String] {
        logs.entries.map { entry in
            var line = "\(entry.level) \(entry.message)"
            if !entry.metadata.isEmpty { line += " \(entry.metadata)" }
            if let error = entry.error { line += " error: \(String(reflecting: error))" }
            return line
        }
    }

    /// Throws when a log line holds anything the emulator handed out (a subject, an email, a name, an authorization
    /// code, a refresh or access token, a signed identity token or notification) or one of `extraSecrets`.
    ///
    /// ``with(configure:_:)`` runs it after every test body, so each test through the harness is also a check that
    /// Orchard logs no personal data and no credential, at any level. Names shorter than four characters are not
    /// looked for (they occur inside ordinary words).
    public func checkLogsHoldNoSecrets(also extraSecrets: [String] = []) async throws {
        let stored = (try? await storedSecrets()) ?? []
        let secrets = Set(emulator.issuedSecrets() + extraSecrets + stored).filter { $0.count >= 8 }
        for line in loggedLines {
            if let secret = secrets.first(where: { line.contains($0) }) {
                throw HarnessError("Orchard logged a secret or a stored value of a user (\(secret.prefix(12))…): \(line.prefix(300))")
            }
        }
    }

    /// Every sealed value, hash and digest the test's database holds now: no log line, at any level, may hold one
    /// (a log outlives a deletion, and ciphertext plus a vault key is the plaintext).
    func storedSecrets() async throws -> [String] {
        let columns: [(table: String, columns: [String])] = [
            (
                "accounts",
                [
                    "subject_hash", "sealed_subject", "sealed_email", "sealed_name", "sealed_refresh_token", "sealed_access_token",
                    "sealed_identity_token",
                ]
            ),
            ("sessions", ["token_hash"]),
            ("nonces", ["hash"]),
            ("revocations", ["sealed_token"]),
            ("audit_events", ["subject_digest"]),
            ("notification_inbox", ["subject_digest", "sealed_event"]),
            ("web_flow_states", ["state_hash", "sealed_nonce"]),
        ]
        return try await database.withDatabase { db in
            var values: [String] = []
            for (table, names) in columns {
                for row in try await db.raw("SELECT \(unsafeRaw: names.joined(separator: ", ")) FROM \(unsafeRaw: table)").all() {
                    for name in names {
                        if let value = try row.decodeNil(column: name) ? nil : row.decode(column: name, as: String.self) {
                            values.append(value)
                        }
                    }
                }
            }
            return values
        }
    }
}
