import Accounts
import ArgumentParser
import Foundation
import Logging
import OrchardServer

/// `orchard keys list / rotate`.
struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "The keys that sign access tokens (POST /v1/session/token) and that GET /.well-known/jwks.json publishes.",
        discussion: """
            Orchard makes and rotates the keys by itself (ORCHARD_TOKEN_KEY_LIFETIME); these commands are for looking \
            and for emergencies. Needs ORCHARD_DATABASE_URL and ORCHARD_VAULT_KEYS.
            """,
        subcommands: [List.self, Rotate.self]
    )

    /// `orchard keys list`.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Each key: id, state (next, current, retired, withdrawn), created, used from, published until."
        )

        @Flag(help: "One JSON object per key, in a JSON array.")
        var json = false

        struct Line: Encodable {
            var id: String
            var state: String
            var createdAt: String
            var usedFrom: String
            var publishedUntil: String?

            enum CodingKeys: String, CodingKey {
                case id, state
                case createdAt = "created_at"
                case usedFrom = "used_from"
                case publishedUntil = "published_until"
            }
        }

        func run() async throws {
            try await KeysCommand.withKeys { keys in
                let lines = try await keys.list().map { key in
                    Line(
                        id: key.id,
                        state: key.state.rawValue,
                        createdAt: key.createdAt.formatted(.iso8601),
                        usedFrom: key.usedFrom.formatted(.iso8601),
                        publishedUntil: key.publishedUntil?.formatted(.iso8601)
                    )
                }
                if json {
                    let encoder = JSONEncoder()
                    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                    print(String(decoding: try encoder.encode(lines), as: UTF8.self))
                    return
                }
                print("id\tstate\tcreated_at\tused_from\tpublished_until")
                for line in lines {
                    print("\(line.id)\t\(line.state)\t\(line.createdAt)\t\(line.usedFrom)\t\(line.publishedUntil ?? "-")")
                }
                if lines.isEmpty { print("(no keys yet: serve makes the first at start)") }
            }
        }
    }

    /// `orchard keys rotate`.
    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make a new key that signs from now on; the one before it stays published until its tokens expire.",
            discussion: """
                For emergencies: verifiers that cached the key set fetch it again when they meet the new key id. Every \
                replica signs with the new key within 10 seconds. With --revoke-current the key that signed until now \
                is also withdrawn from the key set at once (a compromised key): tokens it signed stop verifying at each \
                verifier's next key-set refresh.
                """
        )

        @Flag(help: "Also withdraw the key that signed until now from the key set, at once.")
        var revokeCurrent = false

        func run() async throws {
            try await KeysCommand.withKeys { keys in
                let rotation = try await keys.rotate(revokeCurrent: revokeCurrent)
                print("new_key: \(rotation.newKeyID) (current: signs from now on)")
                if let previous = rotation.previousKeyID {
                    print(
                        "previous_key: \(previous) (\(rotation.withdrewPrevious ? "withdrawn from the key set" : "retired: published until its tokens expire"))"
                    )
                }
            }
        }
    }

    /// Opens the database and the vault (no Apple settings needed) and runs `body` with the keys `serve` signs with.
    static func withKeys(_ body: (SigningKeys) async throws -> Void) async throws {
        try await CommandSupport.withOfflineLifecycle(label: "orchard.keys") { lifecycle in
            try await body(lifecycle.accessTokens.keys)
        }
    }
}
