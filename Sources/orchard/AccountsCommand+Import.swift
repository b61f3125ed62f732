import Accounts
import AppleID
public import ArgumentParser
import Foundation
import Logging
import OrchardServer
import Storage

extension ImportSource: ExpressibleByArgument {}

extension AccountsCommand {
    /// `orchard accounts import FILE [--from orchard|firebase|supabase|auth0] [--client-id ID] [--dry-run] [--json]`.
    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import",
            abstract: "Bring an app's existing users from Firebase, Supabase, Auth0 or a JSON Lines file; their next Sign in with Apple finds them.",
            discussion: """
                Each record becomes an account with the source's user id (Firebase uid, Supabase user_id, Auth0 user_id, \
                the line's account_id), its email and name sealed, no session and the Apple credential unknown, so that \
                the user's next identity token signs into it. A record whose account id or Apple subject is already \
                here is skipped, a second one in the file is a duplicate, one without an Apple identity is counted \
                no_apple_identity, and a bad one is invalid, reported by its line (or place in the array) and rule, never \
                its content. Streams the file, migrates the schema, and may run beside a running serve; run it again \
                after an interruption: it imports only what is missing. Needs ORCHARD_VAULT_KEYS and APPLE_CLIENT_IDS \
                (or apple.teams). Exit 0 when no record is invalid, 1 when some are (the others are imported), 2 for a \
                configuration error or a file that cannot be read. See docs/importing.md.
                """
        )

        @Argument(help: ArgumentHelp("The export to read.", valueName: "file"))
        var file: String

        @Option(help: "The file's source: orchard (JSON Lines), firebase, supabase or auth0.")
        var from: ImportSource = .orchard

        @Option(
            name: .customLong("client-id"),
            help: ArgumentHelp("The client id of records that name none (default: the first configured).", valueName: "id")
        )
        var clientID: String?

        @Flag(name: .customLong("dry-run"), help: "Read and check every record, write nothing, and print what would be imported.")
        var dryRun = false

        @Flag(help: "Print the closing counts as one JSON object, with the first 100 invalid records.")
        var json = false

        func run() async throws {
            guard let handle = FileHandle(forReadingAtPath: file) else {
                CommandSupport.fail(ConfigurationError(setting: file, problem: "cannot be opened"))
            }
            defer { try? handle.close() }
            let size = (try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? 0
            let outcome = try await CommandSupport.withDatabase(label: "orchard.accounts") { configuration, database in
                let clientIDs = configuration.apple.allClientIDs
                guard let defaultClientID = clientID ?? clientIDs.first else {
                    CommandSupport.fail(
                        ConfigurationError(setting: "APPLE_CLIENT_IDS", problem: "is required: every imported account belongs to a client id")
                    )
                }
                guard clientIDs.contains(defaultClientID) else {
                    CommandSupport.fail(ConfigurationError(setting: "--client-id", problem: "\(defaultClientID) is not a configured client id"))
                }
                let lifecycle = Lifecycle(
                    store: database.store(logger: Logger(label: "orchard.accounts")),
                    vault: TokenVault(keys: configuration.vaultKeys),
                    apple: OfflineAppleGateway(),
                    clock: SystemWallClock(),
                    configuration: configuration.accounts
                )
                let ledger = try ScratchImportLedger()
                defer { ledger.remove() }
                let report = ProgressReport(unit: "KiB")
                do {
                    return try await lifecycle.imports.run(
                        source: from,
                        clientIDs: Set(clientIDs),
                        defaultClientID: defaultClientID,
                        dryRun: dryRun,
                        ledger: ledger,
                        nextChunk: { try handle.read(upToCount: 1 << 20).map { Array($0) } },
                        progress: { read in report.update(done: read / 1024, total: max(size, read) / 1024) }
                    )
                } catch let problem as AccountImport.FileProblem {
                    CommandSupport.fail(ConfigurationError(setting: file, problem: problem.reason))
                } catch let error as CocoaError {
                    CommandSupport.fail(ConfigurationError(setting: file, problem: "cannot be read (\(error.code.rawValue))"))
                }
            }
            Self.print(outcome, json: json)
            if outcome[.invalid] > 0 { throw ExitCode(1) }
        }

        /// The closing counts: `name: N` lines, or one JSON object with the first hundred invalid records.
        static func print(_ outcome: AccountImport.Outcome, json: Bool) {
            let counts = AccountImport.Verdict.allCases.map { ($0.rawValue, outcome[$0]) }
            guard json else {
                for (name, count) in counts { Console.line("\(name): \(count)") }
                for line in outcome.invalidLines.prefix(20) { Console.error("orchard: line \(line.line): \(line.reason)\n") }
                return
            }
            var object: [String: Any] = Dictionary(uniqueKeysWithValues: counts)
            object["invalid_lines"] = outcome.invalidLines.map { ["line": $0.line, "reason": $0.reason] as [String: Any] }
            let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
            Console.line(String(decoding: data, as: UTF8.self))
        }
    }
}
