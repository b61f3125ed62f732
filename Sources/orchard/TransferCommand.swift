import Accounts
import AppleID
import ArgumentParser
import AsyncHTTPClient
import Foundation
import Logging
import OrchardServer
import Prometheus
import Storage

/// `orchard transfer export / import / status`: app transfer between developer teams (TN3159).
struct TransferCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "transfer",
        abstract: "Move an app's users to another developer team (TN3159): export on the sending side, import on the receiving side.",
        discussion: """
            The sending installation runs `transfer export --target TEAM_ID --out FILE` before the app moves in App \
            Store Connect; the receiving installation runs `transfer import FILE` after it, within 60 days. Both are \
            resumable: run them again after an interruption, or until nothing is left failed. See docs/app-transfer.md.
            """,
        subcommands: [Export.self, Import.self, Status.self]
    )

    /// `orchard transfer export`.
    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Sending side: ask Apple for each account's transfer identifier and write the file for the receiving team.",
            discussion: """
                Writes FILE anew with one JSON line per exported account: {"account_id", "client_id", "transfer_sub", \
                "name"?}, never a subject or an email. A user Apple refuses (they had stopped using Sign in with Apple \
                with the app) is counted revoked_before_transfer and has no line. Exit 0 when every account is \
                exported or revoked_before_transfer, 1 when some failed (run it again), 2 for configuration errors.
                """
        )

        @Option(help: ArgumentHelp("The receiving team's 10-character Team ID.", valueName: "team-id"))
        var target: String

        @Option(help: ArgumentHelp("Export only this client id's accounts (default: every configured client id).", valueName: "id"))
        var clientID: String?

        @Option(help: ArgumentHelp("Where to write the transfer file (replaced as a whole).", valueName: "file"))
        var out: String

        @Flag(help: "Print the closing counts as one JSON object.")
        var json = false

        func validate() throws {
            guard AppleConfiguration.isTeamID(target) else {
                throw ValidationError("--target must be the receiving team's 10-character Team ID")
            }
        }

        func run() async throws {
            let outcome = try await TransferCommand.withLifecycle { lifecycle, configuration, logger in
                var clientIDs = Set(configuration.apple.allClientIDs)
                if let clientID {
                    guard clientIDs.contains(clientID) else {
                        CommandSupport.fail(ConfigurationError(setting: "--client-id", problem: "\(clientID) is not a configured client id"))
                    }
                    clientIDs = [clientID]
                }
                let report = ProgressReport(unit: "accounts")
                let outcome = try await lifecycle.transfer.export(target: target, clientIDs: clientIDs, logger: logger) { done, total in
                    report.update(done: done, total: total)
                }
                try TransferCommand.write(outcome.lines, to: out)
                return outcome
            }
            TransferCommand.printCounts(TransferCommand.exportCounts { outcome[$0] }, json: json)
            if outcome[.failed] > 0 { throw ExitCode(1) }
        }
    }

    /// `orchard transfer import`.
    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import",
            abstract: "Receiving side: create each account of a transfer file and exchange its transfer identifier at Apple.",
            discussion: """
                Each account keeps its account_id; every line's client_id must be configured here. An account whose \
                exchange has not succeeded yet still signs in (through the identity token's transfer_sub claim), which \
                completes it. Exit 0 when no account is pending or failed, else 1 (run it again); 2 for configuration \
                errors or a file that cannot be read.
                """
        )

        @Argument(help: ArgumentHelp("The file `transfer export` wrote.", valueName: "file"))
        var file: String

        @Flag(help: "Print the closing counts as one JSON object.")
        var json = false

        func run() async throws {
            let outcome = try await TransferCommand.withLifecycle { lifecycle, configuration, logger in
                let lines = TransferCommand.read(file, clientIDs: Set(configuration.apple.allClientIDs))
                let report = ProgressReport(unit: "accounts")
                return try await lifecycle.transfer.import(lines, logger: logger) { done, total in
                    report.update(done: done, total: total)
                }
            }
            TransferCommand.printCounts(TransferCommand.importCounts(imported: outcome.imported) { outcome[$0] }, json: json)
            if outcome[.imported] + outcome[.failed] > 0 { throw ExitCode(1) }
        }
    }

    /// `orchard transfer status`.
    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Count this installation's accounts by transfer state, in the format of export's or import's closing counts.",
            discussion: """
                A sending installation prints exported, revoked_before_transfer and failed; a receiving one imported (every \
                account that came in through an import), exchanged, pending, revoked_before_transfer and failed. An \
                installation with both prints each set under `export.` and `import.` (JSON: {"export": {…}, "import": \
                {…}}); one with neither prints nothing (JSON: {}).
                """
        )

        @Flag(help: "Print the counts as one JSON object.")
        var json = false

        func run() async throws {
            let (exports, imports) = try await CommandSupport.withDatabase(label: "orchard.transfer") { _, database in
                let store = database.store(logger: Logger(label: "orchard.transfer"))
                return (try await store.transferCounts(side: .export), try await store.transferCounts(side: .import))
            }
            var sides: [(name: String, counts: [(String, Int)])] = []
            if exports.values.reduce(0, +) > 0 {
                sides.append(("export", TransferCommand.exportCounts { exports[$0] ?? 0 }))
            }
            if imports.values.reduce(0, +) - (imports[.deleted] ?? 0) > 0 {
                let total = imports.filter { $0.key != .deleted }.values.reduce(0, +)
                sides.append(("import", TransferCommand.importCounts(imported: total) { imports[$0] ?? 0 }))
            }
            if sides.count == 1 {
                TransferCommand.printCounts(sides[0].counts, json: json)
            } else if json {
                let body = sides.map { side in "\"\(side.name)\":" + TransferCommand.jsonObject(side.counts) }.joined(separator: ",")
                Console.line("{\(body)}")
            } else {
                for side in sides {
                    for (name, count) in side.counts { Console.line("\(side.name).\(name): \(count)") }
                }
            }
        }
    }

    // MARK: Shared

    /// The lifecycle with Apple's settings (``CommandSupport/withLifecycle(label:_:)``); an ``AccountsError`` becomes a
    /// message and exit 1, or 2 when Apple refused the team's own credentials.
    static func withLifecycle<T: Sendable>(
        _ body: (Lifecycle, OrchardConfiguration, Logger) async throws -> T
    ) async throws -> T {
        do {
            return try await CommandSupport.withLifecycle(label: "orchard.transfer", body)
        } catch let error as AccountsError {
            Console.error("orchard: \(error.code.rawValue): \(error.reason)\n")
            // Apple refusing the team's own credentials is a configuration error: running again would not help.
            throw ExitCode(error.code == .appleClientRejected ? 2 : 1)
        }
    }

    /// Writes the transfer file anew, readable by its owner only: the lines go to a temporary file that replaces
    /// `path` at once, so an interrupted run never leaves half a file.
    static func write(_ lines: [TransferLine], to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var text = ""
        for line in lines {
            text += String(decoding: try encoder.encode(line), as: UTF8.self) + "\n"
        }
        let url = URL(fileURLWithPath: path)
        let temporary = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).\(getpid()).tmp")
        // Created with mode 600 from the start: the lines are never readable by others, not even for a moment.
        unlink(temporary.path)
        let descriptor = open(temporary.path, O_CREAT | O_EXCL | O_WRONLY, 0o600)
        guard descriptor >= 0 else {
            CommandSupport.fail(ConfigurationError(setting: "--out", problem: "\(path) cannot be written"))
        }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        do {
            try handle.write(contentsOf: Data(text.utf8))
            try handle.synchronize()
            try handle.close()
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            CommandSupport.fail(ConfigurationError(setting: "--out", problem: "\(path) cannot be written"))
        }
        if rename(temporary.path, url.path) != 0 {
            try? FileManager.default.removeItem(at: temporary)
            CommandSupport.fail(ConfigurationError(setting: "--out", problem: "\(path) cannot be written"))
        }
    }

    /// Reads a transfer file, exiting 2 with the line's number when one is not a transfer line, names a client id not
    /// configured here, or repeats an account id; nothing is imported from a file with such a line.
    static func read(_ path: String, clientIDs: Set<String>) -> [TransferLine] {
        guard let data = FileManager.default.contents(atPath: path) else {
            CommandSupport.fail(ConfigurationError(setting: "FILE", problem: "\(path) cannot be read"))
        }
        var lines: [TransferLine] = []
        var seen: Set<String> = []
        for (index, text) in String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let text = text.trimmingCharacters(in: .whitespaces)
            guard !text.isEmpty else { continue }
            func bad(_ problem: String) -> Never {
                CommandSupport.fail(ConfigurationError(setting: "\(path):\(index + 1)", problem: problem))
            }
            guard let line = try? JSONDecoder().decode(TransferLine.self, from: Data(text.utf8)) else {
                bad("is not a transfer line {\"account_id\", \"client_id\", \"transfer_sub\", \"name\"?}")
            }
            guard TransferLine.isValidAccountID(line.accountID) else { bad("account_id must be letters, digits, _ and - (at most 128)") }
            guard !line.transferSub.isEmpty, line.transferSub.count <= 256 else { bad("transfer_sub must be 1 to 256 characters") }
            guard clientIDs.contains(line.clientID) else { bad("client_id \(line.clientID) is not configured here") }
            guard seen.insert(line.accountID).inserted else { bad("account_id \(line.accountID) is given twice") }
            lines.append(line)
        }
        return lines
    }

    /// The sending side's counts, in order: `exported`, `revoked_before_transfer`, `failed`.
    static func exportCounts(_ count: (TransferState) -> Int) -> [(String, Int)] {
        [("exported", count(.exported)), ("revoked_before_transfer", count(.revokedBeforeTransfer)), ("failed", count(.failed))]
    }

    /// The receiving side's counts, in order: `imported`, `exchanged`, `pending` (state `imported`),
    /// `revoked_before_transfer`, `failed`.
    static func importCounts(imported: Int, _ count: (TransferState) -> Int) -> [(String, Int)] {
        [
            ("imported", imported), ("exchanged", count(.exchanged)), ("pending", count(.imported)),
            ("revoked_before_transfer", count(.revokedBeforeTransfer)), ("failed", count(.failed)),
        ]
    }

    /// Counts as one JSON object, keys in the given order.
    static func jsonObject(_ counts: [(String, Int)]) -> String {
        "{" + counts.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }

    /// Prints counts: `name: N` lines, or one JSON object.
    static func printCounts(_ counts: [(String, Int)], json: Bool) {
        if json {
            Console.line(jsonObject(counts))
        } else {
            for (name, count) in counts { Console.line("\(name): \(count)") }
        }
    }
}
