import Accounts
import ArgumentParser
import Foundation
import Logging
import OrchardServer
import Storage

/// `orchard vault status / rotate`.
struct VaultCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vault",
        abstract: "The keys of ORCHARD_VAULT_KEYS and the values they seal in ORCHARD_DATABASE_URL.",
        subcommands: [Status.self, Rotate.self]
    )

    /// `orchard vault status`.
    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "How many stored values each key id seals; exit 1 when some are under a key no longer configured."
        )

        func run() async throws {
            let missing = try await VaultCommand.withRotation { rotation, _ in
                let status = try await rotation.status()
                print("key_id\tvalues")
                for (id, count) in status.valuesByKey.sorted(by: { $0.key < $1.key }) {
                    let note = status.missingKeys.contains(id) ? "\t(not configured: these values cannot be opened)" : ""
                    print("\(id)\t\(count)\(note)")
                }
                if status.valuesByKey.isEmpty { print("(no sealed values)") }
                return !status.missingKeys.isEmpty
            }
            if missing { throw ExitCode(1) }
        }
    }

    /// `orchard vault rotate`.
    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Re-seal every stored value under the first key of ORCHARD_VAULT_KEYS and recompute subject lookup hashes.",
            discussion: """
                Resumable and idempotent: rows already under the first key are left alone, so run it again after an \
                interruption. Safe beside a running serve: each row is rewritten in its own short transaction, only if \
                it is unchanged since it was read. Exit 0 only when no value is left under another key; then the older \
                keys can be removed from ORCHARD_VAULT_KEYS.
                """
        )

        func run() async throws {
            let left = try await VaultCommand.withRotation { rotation, vault in
                let total = try await rotation.rowCount()
                FileHandle.standardError.write(Data("re-sealing \(total) rows under key \(vault.currentKeyID)\n".utf8))
                let report = ProgressReport(unit: "rows")
                let outcome = try await rotation.rotate { done in report.update(done: done, total: total) }
                let status = try await rotation.status()
                print("rotated: \(outcome.rotated)")
                print("unchanged: \(outcome.unchanged)")
                print("changed_meanwhile: \(outcome.changedMeanwhile)")
                print("missing_key: \(outcome.missingKey)")
                print("left_under_other_keys: \(status.notUnderCurrentKey)")
                return status.notUnderCurrentKey
            }
            if left > 0 { throw ExitCode(1) }
        }
    }

    /// Opens the database and the vault (no Apple settings needed).
    static func withRotation<T>(_ body: (VaultRotation, TokenVault) async throws -> T) async throws -> T {
        try await CommandSupport.withDatabase(label: "orchard.vault") { configuration, database in
            let vault = TokenVault(keys: configuration.vaultKeys)
            return try await body(VaultRotation(store: database.store(logger: Logger(label: "orchard.vault")), vault: vault), vault)
        }
    }
}
