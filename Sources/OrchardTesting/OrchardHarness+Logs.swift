import AppleIDEmulator
import InMemoryLogging
import Logging

extension OrchardHarness {
    /// The logger a harness hands Orchard: everything from trace up is kept in `memory`, and info and up is also
    /// printed, as a test run's output always showed it.
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
    public func checkLogsHoldNoSecrets(also extraSecrets: [String] = []) throws {
        let secrets = Set(emulator.issuedSecrets() + extraSecrets).filter { $0.count >= 4 }
        for line in loggedLines {
            if let secret = secrets.first(where: { line.contains($0) }) {
                throw HarnessError("Orchard logged a secret the emulator handed out (\(secret.prefix(12))…): \(line.prefix(300))")
            }
        }
    }
}
