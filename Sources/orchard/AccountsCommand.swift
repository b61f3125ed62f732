import Accounts
import AppleID
import ArgumentParser
import Foundation
import Logging
import OrchardServer
import Storage

/// `orchard accounts list / show ID`.
struct AccountsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "accounts",
        abstract: "Operator tools over the accounts in ORCHARD_DATABASE_URL (need ORCHARD_VAULT_KEYS to open them).",
        subcommands: [List.self, Show.self]
    )

    /// `orchard accounts list`.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List accounts: id, created, Apple credential, email forwarding.")

        @Option(help: "How many accounts at most.")
        var limit = 100

        @Option(help: ArgumentHelp("Start after this account id (paging).", valueName: "id"))
        var after: String?

        func run() async throws {
            try await AccountsCommand.withAccounts { accounts in
                let page = try await accounts.listAccounts(limit: limit, afterID: after)
                print("id\tcreated_at\tapple_credential\temail_forwarding")
                for account in page {
                    print(
                        "\(account.id)\t\(account.createdAt.formatted(.iso8601))\t\(account.appleCredential.rawValue)\t\(account.emailForwarding.rawValue)"
                    )
                }
            }
        }
    }

    /// `orchard accounts show ID`.
    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show one account (it prints the email and Apple subject).")

        @Argument(help: "The account id.")
        var id: String

        func run() async throws {
            try await AccountsCommand.withAccounts { accounts in
                let account = try await accounts.account(id: id)
                print("id: \(account.id)")
                print("apple_sub: \(account.appleSub)")
                print("email: \(account.email ?? "-")")
                print("is_private_email: \(account.isPrivateEmail)")
                print("email_forwarding: \(account.emailForwarding.rawValue)")
                let name = [account.name?.firstName, account.name?.lastName].compactMap { $0 }.joined(separator: " ")
                print("name: \(name.isEmpty ? "-" : name)")
                print("created_at: \(account.createdAt.formatted(.iso8601))")
                print("apple_credential: \(account.appleCredential.rawValue)")
                print("last_validated_at: \(account.lastValidatedAt?.formatted(.iso8601) ?? "-")")
            }
        }
    }

    /// Opens the database and the vault for an operator command.
    static func withAccounts(_ body: (Accounts) async throws -> Void) async throws {
        let configuration = try await CommandSupport.loadConfiguration(needs: .vault)
        CommandSupport.bootstrapLogging(level: configuration.logLevel)
        let logger = Logger(label: "orchard.accounts")
        let database: any DatabaseClient
        do {
            database = try await configuration.database.open(logger: logger)
        } catch {
            CommandSupport.fail(ConfigurationError(setting: "ORCHARD_DATABASE_URL", problem: "\(error)"))
        }
        try await Migrator(database: database, logger: logger).migrate()
        let accounts = Accounts(
            store: SQLAccountStore(database: database),
            vault: TokenVault(keys: configuration.vaultKeys),
            apple: OfflineAppleGateway(),
            clock: SystemWallClock(),
            configuration: configuration.accounts,
            logger: logger
        )
        do {
            try await body(accounts)
        } catch let error as AccountsError {
            await database.close()
            FileHandle.standardError.write(Data("orchard: \(error.code.rawValue): \(error.reason)\n".utf8))
            throw ExitCode(error.code == .notFound ? 3 : 1)
        }
        await database.close()
    }
}
