import Accounts
import AppleID
import ArgumentParser
import Foundation
import Logging
import OrchardServer
import Storage

/// `orchard notifications list / doctor URL`: Apple's server-to-server notifications as they arrive here, and whether
/// Apple can reach the endpoint at all.
struct NotificationsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notifications",
        abstract: "Apple's notifications: the latest as the inbox holds them, and a check of the endpoint from outside.",
        subcommands: [List.self, Doctor.self]
    )

    /// `orchard notifications list [--limit N] [--json]`.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The latest notifications, newest first: received, team, client id, type, outcome, account id, duplicates.",
            discussion: """
                Never a subject or an email. outcome is pending, processed, unknown_subject, predates_grant or failed. \
                Processed notifications are kept 30 days.
                """
        )

        @Option(help: "How many, 1 to 100.")
        var limit = 20

        @Flag(help: "One JSON object: {\"notifications\": [NOTIFICATION]} as GET /admin/v1/notifications gives them.")
        var json = false

        func validate() throws {
            guard (1...100).contains(limit) else { throw ValidationError("--limit must be 1 to 100, not \(limit)") }
        }

        func run() async throws {
            try await CommandSupport.withDatabase(label: "orchard.notifications") { configuration, database in
                let store = database.store(logger: .init(label: "orchard.notifications"))
                let lifecycle = Lifecycle(
                    store: store,
                    vault: TokenVault(keys: configuration.vaultKeys),
                    apple: OfflineAppleGateway(),
                    clock: SystemWallClock(),
                    configuration: configuration.accounts
                )
                let page = try await OperatorDesk(lifecycle: lifecycle, store: store).notifications(before: nil, limit: limit)
                let teams = configuration.apple.allTeams
                func team(_ clientID: String?) -> String { teams.first { $0.clientIDs.contains(clientID ?? "") }?.teamID ?? "-" }
                if json {
                    let objects: [[String: Any]] = page.items.map { row in
                        var object: [String: Any] = [
                            "id": row.id, "received_at": row.receivedAt.formatted(.iso8601), "type": row.type, "outcome": row.outcome.rawValue,
                            "duplicates": row.duplicates,
                        ]
                        if let clientID = row.clientID { object["client_id"] = clientID }
                        if team(row.clientID) != "-" { object["team_id"] = team(row.clientID) }
                        if let accountID = row.accountID { object["account_id"] = accountID }
                        return object
                    }
                    let data = try JSONSerialization.data(
                        withJSONObject: ["notifications": objects],
                        options: [.sortedKeys, .withoutEscapingSlashes]
                    )
                    print(String(decoding: data, as: UTF8.self))
                    return
                }
                print("received_at\tteam_id\tclient_id\ttype\toutcome\taccount_id\tduplicates")
                for row in page.items {
                    print(
                        "\(row.receivedAt.formatted(.iso8601))\t\(team(row.clientID))\t\(row.clientID ?? "-")\t\(row.type)\t\(row.outcome.rawValue)\t\(row.accountID ?? "-")\t\(row.duplicates)"
                    )
                }
                if page.items.isEmpty { print("(no notifications received)") }
            }
        }
    }
}
