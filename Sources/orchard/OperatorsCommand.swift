import Accounts
import AppleID
import ArgumentParser
import Foundation
import Logging
import OrchardServer
import Storage

/// `orchard operators add NAME / list / remove NAME`: the people who may use the operator API and console.
struct OperatorsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "operators",
        abstract: "The people who may use the operator API and console (ORCHARD_ADMIN_PORT).",
        subcommands: [Add.self, List.self, Remove.self]
    )

    /// `orchard operators add NAME`.
    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add an operator and print its token once; only the token's hash is stored.",
            discussion: """
                The token goes in Authorization: Bearer TOKEN on /admin/v1/…, or into the console's sign-in form. It \
                is printed on standard output, alone on its line, and never again: keep it in a password manager. A \
                name is 1 to 64 of A-Z a-z 0-9 . _ - @. Exit 1 when the name is taken.
                """
        )

        @Argument(help: "The operator's name, as the audit log shows it.")
        var name: String

        func run() async throws {
            try await OperatorsCommand.withOperators { operators in
                let token = try await operators.add(name: name)
                FileHandle.standardError.write(Data("orchard: operator \(name) added; its token (shown once):\n".utf8))
                print(token)
            }
        }
    }

    /// `orchard operators list [--json]`.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the operators: name and when each was added (never a token).")

        @Flag(help: "One JSON object: {\"operators\": [{\"name\", \"created_at\"}]}.")
        var json = false

        func run() async throws {
            try await OperatorsCommand.withOperators { operators in
                let list = try await operators.list()
                if json {
                    let objects = list.map { ["name": $0.name, "created_at": $0.createdAt.formatted(.iso8601)] }
                    let data = try JSONSerialization.data(withJSONObject: ["operators": objects], options: [.sortedKeys, .withoutEscapingSlashes])
                    print(String(decoding: data, as: UTF8.self))
                    return
                }
                print("name\tcreated_at")
                for record in list { print("\(record.name)\t\(record.createdAt.formatted(.iso8601))") }
                if list.isEmpty { print("(no operators: add one with orchard operators add NAME)") }
            }
        }
    }

    /// `orchard operators remove NAME`.
    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove an operator: its token and console logins stop working at once, on every replica.",
            discussion: "Its audit entries stay. Exit 3 when there is no operator of that name."
        )

        @Argument(help: "The operator's name.")
        var name: String

        func run() async throws {
            try await OperatorsCommand.withOperators { operators in
                try await operators.remove(name: name)
                print("removed \(name)")
            }
        }
    }

    /// Runs `body` with the operators over the configured database (migrated first).
    static func withOperators(_ body: (Operators) async throws -> Void) async throws {
        try await CommandSupport.withDatabase(label: "orchard.operators") { _, database in
            try await body(
                Operators(store: database.store(logger: .init(label: "orchard.operators")), clock: SystemWallClock(), random: SystemRandomSource())
            )
        }
    }
}
