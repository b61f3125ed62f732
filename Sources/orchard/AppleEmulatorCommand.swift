import AppleIDEmulator
import ArgumentParser
import AsyncHTTPClient
import Foundation
import Logging
import ServiceLifecycle
import UnixSignals

/// `orchard apple-emulator`.
struct AppleEmulatorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apple-emulator",
        abstract:
            "Serve a stand-in for Apple's Sign in with Apple endpoints (keys, token, revoke, usermigrationinfo, authorize) and its control API.",
        discussion: """
            It mints tokens that carry Apple's issuer, so it listens on loopback unless told otherwise. Without \
            --client-key it makes a client key, writes it to --write-client-key (default ./emulator-client-key.p8) and \
            prints the settings an Orchard needs to talk to it. GET /auth/authorize (the web flow) consents at once, as \
            Jane Appleseed unless login_hint (a subject or an email) or POST /_emulator/web-user names someone else, \
            and posts Apple's form to the redirect URI. Control API: POST /_emulator/authorize, /_emulator/revoke-grant, \
            /_emulator/web-user, /_emulator/failures, /_emulator/omit-refresh-token, /_emulator/notifications, \
            /_emulator/latency, /_emulator/transfer {"client_id", "to_team"} (moves a client id to another --team: its \
            users then get that team's subjects, and the transfer_sub claim for 60 days); GET/DELETE /_emulator/calls.
            """
    )

    @Option(help: "The address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "The port (0 picks a free one and prints it).")
    var port = 0

    @Option(name: .customLong("team-id"), help: "The team id whose client secrets are accepted.")
    var teamID = "EMULATOR01"

    @Option(name: .customLong("key-id"), help: "The key id client secrets must carry.")
    var keyID = "EMULATORK1"

    @Option(name: .customLong("client-ids"), help: "Comma-separated client ids (App IDs / Services IDs).")
    var clientIDs = "com.example.orchard.app"

    @Option(name: .customLong("client-key"), help: ArgumentHelp("The .p8 (or its public key) whose client secrets are accepted.", valueName: "file"))
    var clientKey: String?

    @Option(name: .customLong("write-client-key"), help: ArgumentHelp("Where to write a generated .p8.", valueName: "file"))
    var writeClientKey = "emulator-client-key.p8"

    @Option(
        name: .customLong("team"),
        help: ArgumentHelp(
            "A team, TEAM_ID:KEY_ID:CLIENT_KEY_FILE:CLIENT_ID+CLIENT_ID...; repeat for several teams (the first is the first team). Replaces --team-id, --key-id, --client-ids and --client-key.",
            valueName: "team"
        )
    )
    var teams: [String] = []

    @Option(name: .customLong("latency-ms"), help: "Answer Apple's endpoints after this many milliseconds.")
    var latencyMS = 0

    @Option(name: .customLong("notify-url"), help: ArgumentHelp("Where notifications are posted.", valueName: "url"))
    var notifyURL: String?

    @Option(
        name: .customLong("org-id"),
        help: ArgumentHelp("Act as a Work & School organization: every user's identity tokens carry this org_id.", valueName: "id")
    )
    var orgID: String?

    @Option(
        name: .customLong("relay-domain"),
        help: ArgumentHelp(
            "The domain of the private-relay addresses it makes: privaterelay.appleid.com (default) or Apple's newer private.icloud.com.",
            valueName: "domain"
        )
    )
    var relayDomain: String = EmulatedUser.privateRelayDomain

    func validate() throws {
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be 0-65535") }
        guard latencyMS >= 0 else { throw ValidationError("--latency-ms must not be negative") }
        guard !clientIDs.split(separator: ",").isEmpty else { throw ValidationError("--client-ids needs at least one id") }
        for team in teams { _ = try Self.parseTeam(team) }
    }

    /// `TEAM_ID:KEY_ID:CLIENT_KEY_FILE:CLIENT_ID+CLIENT_ID…`, the key file read.
    static func parseTeam(_ text: String) throws -> EmulatorTeam {
        let parts = text.split(separator: ":", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
        let clientIDs = parts.count == 4 ? parts[3].split(separator: "+").map(String.init).filter { !$0.isEmpty } : []
        guard parts.count == 4, !parts[0].isEmpty, !parts[1].isEmpty, !parts[2].isEmpty, !clientIDs.isEmpty else {
            throw ValidationError("--team must be TEAM_ID:KEY_ID:CLIENT_KEY_FILE:CLIENT_ID+CLIENT_ID..., not \(text)")
        }
        guard let pem = try? String(contentsOfFile: parts[2], encoding: .utf8) else {
            throw ValidationError("--team \(parts[0]): cannot read the key file \(parts[2])")
        }
        return EmulatorTeam(teamID: parts[0], keyID: parts[1], clientPublicKeyPEM: pem, clientIDs: clientIDs)
    }

    func run() async throws {
        LoggingSystem.bootstrap { StreamLogHandler.standardError(label: $0) }
        let publicKeyPEM: String
        let wroteKey: String?
        if !teams.isEmpty {
            // Each --team names its own key file.
            publicKeyPEM = ""
            wroteKey = nil
        } else if let clientKey {
            guard let pem = try? String(contentsOfFile: clientKey, encoding: .utf8) else {
                throw ValidationError("cannot read --client-key \(clientKey)")
            }
            publicKeyPEM = pem
            wroteKey = nil
        } else {
            let key = AppleEmulatorConfiguration.makeClientKey()
            try key.privateKeyPEM.write(toFile: writeClientKey, atomically: true, encoding: .utf8)
            publicKeyPEM = key.publicKeyPEM
            wroteKey = writeClientKey
        }
        let ids = clientIDs.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        var configuration = AppleEmulatorConfiguration(
            teamID: teamID,
            keyID: keyID,
            clientIDs: ids,
            clientPublicKeyPEM: publicKeyPEM,
            latency: .milliseconds(latencyMS),
            notifyURL: notifyURL
        )
        configuration.orgID = orgID
        configuration.relayDomain = relayDomain
        if !teams.isEmpty {
            let parsed = try teams.map(Self.parseTeam)
            configuration.teamID = parsed[0].teamID
            configuration.keyID = parsed[0].keyID
            configuration.clientIDs = parsed[0].clientIDs
            configuration.clientPublicKeyPEM = parsed[0].clientPublicKeyPEM
            configuration.otherTeams = Array(parsed.dropFirst())
        }
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        let emulator = try AppleEmulator(configuration: configuration, httpClient: http)
        let application = emulator.makeApplication(host: host, port: port) { baseURL in
            Console.line("Apple emulator listening on \(baseURL)")
            Console.line("Settings for an Orchard that talks to it:")
            Console.line("  APPLE_BASE_URL=\(baseURL)")
            if teams.isEmpty {
                Console.line("  APPLE_TEAM_ID=\(teamID)")
                Console.line("  APPLE_KEY_ID=\(keyID)")
                Console.line("  APPLE_CLIENT_IDS=\(ids.joined(separator: ","))")
                if let wroteKey { Console.line("  APPLE_PRIVATE_KEY_FILE=\(wroteKey)") }
            } else {
                Console.line("  and apple.teams in ORCHARD_CONFIG_FILE, one entry per --team, each with its .p8")
            }
        }
        let group = ServiceGroup(
            configuration: .init(
                services: [application],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: Logger(label: "orchard.apple-emulator")
            )
        )
        try await group.run()
        try await http.shutdown()
    }
}
