import Accounts
import AppleID
import ArgumentParser
import AsyncHTTPClient
import Foundation
import Logging
import OrchardServer
import Prometheus
import Storage

/// `orchard accounts list / show ID / history ID / delete ID…`.
struct AccountsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "accounts",
        abstract: "Operator tools over the accounts in ORCHARD_DATABASE_URL (need ORCHARD_VAULT_KEYS to open them).",
        subcommands: [List.self, Show.self, History.self, Delete.self, Import.self, Revocations.self, Webhooks.self]
    )

    /// `orchard accounts list`.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List accounts: id, created, Apple credential, email forwarding.")

        @Option(help: "How many accounts at most.")
        var limit = 100

        @Option(help: ArgumentHelp("Start after this account id (paging).", valueName: "id"))
        var after: String?

        func run() async throws {
            try await AccountsCommand.withAccounts { lifecycle in
                let page = try await lifecycle.accounts.listAccounts(limit: limit, afterID: after)
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
            try await AccountsCommand.withAccounts { lifecycle in
                let account = try await lifecycle.accounts.account(id: id)
                print("id: \(account.id)")
                print("apple_sub: \(account.appleSub)")
                print("email: \(account.email ?? "-")")
                print("email_verified: \(account.emailVerified)")
                print("is_private_email: \(account.isPrivateEmail)")
                print("email_forwarding: \(account.emailForwarding.rawValue)")
                let name = [account.name?.firstName, account.name?.lastName].compactMap { $0 }.joined(separator: " ")
                print("name: \(name.isEmpty ? "-" : name)")
                print("created_at: \(account.createdAt.formatted(.iso8601))")
                print("apple_credential: \(account.appleCredential.rawValue)")
                print("last_validated_at: \(account.lastValidatedAt?.formatted(.iso8601) ?? "-")")
                print("org_id: \(account.orgID ?? "-")")
            }
        }
    }

    /// `orchard accounts history ID`.
    struct History: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show an account's history, newest first: sign-ins, sign-outs and why, Apple's verdicts and notifications.",
            discussion: "The same events as GET /v1/account/events. Exit 3 when no account has the id."
        )

        @Argument(help: "The account id.")
        var id: String

        @Flag(help: "The events as a JSON array (the EVENT objects of GET /v1/account/events).")
        var json = false

        func run() async throws {
            try await AccountsCommand.withAccounts { lifecycle in
                _ = try await lifecycle.accounts.account(id: id)
                var events: [HistoryEntry] = []
                var before: String?
                repeat {
                    let page = try await lifecycle.accounts.history(accountID: id, before: before, limit: AccountDesk.historyPageLimit.upperBound)
                    events += page.events
                    before = page.next
                } while before != nil
                if json {
                    let encoder = JSONEncoder()
                    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
                    print(String(decoding: try encoder.encode(events.map(HistoryEventDTO.init)), as: UTF8.self))
                    return
                }
                print("occurred_at\ttype\treason\tsession_id\tdevice")
                for event in events {
                    print(
                        "\(event.occurredAt.formatted(.iso8601))\t\(event.kind.rawValue)\t\(event.reason ?? "-")\t\(event.sessionID ?? "-")\t\(event.device ?? "-")"
                    )
                }
                if events.isEmpty { print("(no events)") }
            }
        }
    }

    /// `orchard accounts delete ID [ID…]`.
    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete accounts for good and revoke their Apple tokens: the same deletion as DELETE /v1/account.",
            discussion: """
                Needs the Apple settings and ORCHARD_VAULT_KEYS. When Apple cannot be reached the revocation stays \
                queued, and a running `orchard serve` retries it until Apple accepts. With several ids, each is deleted \
                in turn (progress on standard error); exit 3 when some id was not found, 1 when another failure \
                stopped a deletion, else 0.
                """
        )

        @Argument(help: "The account ids.")
        var ids: [String]

        func validate() throws {
            guard !ids.isEmpty else { throw ValidationError("give at least one account id") }
        }

        func run() async throws {
            let worst = try await CommandSupport.withLifecycle(label: "orchard.accounts") { lifecycle, _, logger in
                var worst: Int32 = 0
                let report = ProgressReport(unit: "accounts")
                for (index, id) in ids.enumerated() {
                    do throws(AccountsError) {
                        let result = try await lifecycle.accounts.deleteAccount(id: id, reason: .byOperator, logger: logger)
                        Console.line("deleted \(id)")
                        Console.line("apple_revocation: \(result.appleRevocation.rawValue)")
                        if let url = result.manualRevocationURL {
                            Console.line("No Apple token was held: the user must revoke Orchard's access by hand at \(url.absoluteString)")
                        }
                        if result.appleRevocation == .pending {
                            Console.line("Apple did not accept the revocation yet; it stays queued and `orchard serve` retries it.")
                        }
                    } catch {
                        Console.error("orchard: \(id): \(error.code.rawValue): \(error.reason)\n")
                        worst = max(worst, error.code == .notFound ? 3 : 1)
                    }
                    if ids.count > 1 { report.update(done: index + 1, total: ids.count) }
                }
                return worst
            }
            if worst != 0 { throw ExitCode(worst) }
        }
    }

    /// `orchard accounts revocations`.
    struct Revocations: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List revocations Apple has not accepted yet (deleted accounts whose tokens are still queued)."
        )

        func run() async throws {
            try await AccountsCommand.withAccounts { lifecycle in
                let pending = try await lifecycle.outboxes.pendingRevocations()
                print("id\tcreated_at\ttoken_type_hint\tattempts\tnext_attempt_at\tlast_error")
                for job in pending {
                    print(
                        "\(job.id)\t\(job.createdAt.formatted(.iso8601))\t\(job.hint.rawValue)\t\(job.attempts)\t\(job.nextAttemptAt.formatted(.iso8601))\t\(job.lastError ?? "-")"
                    )
                }
                if pending.isEmpty { print("(none pending)") }
            }
        }
    }

    /// `orchard accounts webhooks`.
    struct Webhooks: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List webhook deliveries: failed ones by default.")

        @Option(help: "Which deliveries: failed, pending or delivered.")
        var status = "failed"

        func validate() throws {
            guard ["failed", "pending", "delivered"].contains(status) else {
                throw ValidationError("--status must be failed, pending or delivered")
            }
        }

        func run() async throws {
            try await AccountsCommand.withAccounts { lifecycle in
                let rows = try await lifecycle.outboxes.webhookDeliveries(status: status)
                print("event_id\ttype\turl\tattempts\tcreated_at\tlast_error")
                for row in rows {
                    let delivery = row.delivery
                    print(
                        "\(delivery.eventID)\t\(delivery.eventType)\t\(URLRedaction.redactingCredentials(delivery.url))\t\(delivery.attempts)\t\(delivery.createdAt.formatted(.iso8601))\t\(row.lastError ?? "-")"
                    )
                }
                if rows.isEmpty { print("(none \(status))") }
            }
        }
    }

    /// Opens the database and the vault for an operator command.
    static func withAccounts(_ body: (Lifecycle) async throws -> Void) async throws {
        try await CommandSupport.withOfflineLifecycle(label: "orchard.accounts", body)
    }
}
