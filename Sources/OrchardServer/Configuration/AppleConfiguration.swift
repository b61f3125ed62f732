public import AppleID
public import Foundation

/// Apple's side: the developer teams whose keys sign client secrets, their client ids, and where Apple is reached
/// (`APPLE_TEAM_ID`, `APPLE_KEY_ID`, `APPLE_PRIVATE_KEY_FILE`, `APPLE_CLIENT_IDS` or `apple.teams`; `APPLE_BASE_URL`).
///
/// It describes itself without the private key.
public struct AppleConfiguration: Sendable, CustomStringConvertible {
    /// Apple's own base URL.
    public static let productionBaseURL = URL(string: "https://appleid.apple.com")!

    /// `APPLE_TEAM_ID` (the single-team shorthand).
    public var teamID = ""
    /// `APPLE_KEY_ID`.
    public var keyID = ""
    /// The key `APPLE_PRIVATE_KEY_FILE` holds.
    public var privateKeyPEM = ""
    /// `APPLE_CLIENT_IDS`.
    public var clientIDs: [String] = []
    /// `apple.teams` in the configuration file, when several teams are configured.
    public var teams: [AppleTeam] = []
    /// `APPLE_BASE_URL`: where Apple's endpoints are reached.
    public var baseURL = AppleConfiguration.productionBaseURL

    /// None: for commands that do not call Apple.
    public init() {}

    /// Every field but the key, shown as `<redacted>`.
    public var description: String {
        "AppleConfiguration(teamID: \(teamID), keyID: \(keyID), privateKeyPEM: <redacted>, clientIDs: \(clientIDs), teams: \(teams), baseURL: \(baseURL))"
    }

    /// Reads Apple's settings; with `required`, a team must be configured and its keys are read.
    /// - Throws: ``ConfigurationError`` naming the first setting that is wrong.
    public init(reader settings: SettingsReader, required: Bool) throws(ConfigurationError) {
        if let base = settings.text("APPLE_BASE_URL") {
            baseURL = try settings.url("APPLE_BASE_URL", base)
            try Self.checkTransport(baseURL)
        }
        teamID = settings.text("APPLE_TEAM_ID") ?? ""
        keyID = settings.text("APPLE_KEY_ID") ?? ""
        clientIDs = settings.list("APPLE_CLIENT_IDS")
        teams = try Self.teams(settings, readKeys: required)
        if !teams.isEmpty {
            let shorthand = ["APPLE_TEAM_ID", "APPLE_KEY_ID", "APPLE_PRIVATE_KEY_FILE", "APPLE_CLIENT_IDS"].filter { settings.text($0) != nil }
            guard shorthand.isEmpty else {
                throw ConfigurationError(
                    setting: "apple.teams",
                    problem: "give either apple.teams or the single-team settings, not both (\(shorthand.joined(separator: ", ")) is set too)"
                )
            }
        } else if required {
            guard !teamID.isEmpty else { throw ConfigurationError(setting: "APPLE_TEAM_ID", problem: "is required") }
            guard Self.isTeamID(teamID) else { throw ConfigurationError(setting: "APPLE_TEAM_ID", problem: "must be the 10-character team id") }
            guard !keyID.isEmpty else { throw ConfigurationError(setting: "APPLE_KEY_ID", problem: "is required") }
            guard let keyFile = settings.text("APPLE_PRIVATE_KEY_FILE") else {
                throw ConfigurationError(setting: "APPLE_PRIVATE_KEY_FILE", problem: "is required")
            }
            privateKeyPEM = try SettingsReader.readKeyFile(keyFile, setting: "APPLE_PRIVATE_KEY_FILE")
            guard !clientIDs.isEmpty else {
                throw ConfigurationError(setting: "APPLE_CLIENT_IDS", problem: "is required (comma-separated App IDs / Services IDs)")
            }
        }
    }

    /// Whether Apple's own endpoints are reached (not an emulator or a stand-in).
    public var isProduction: Bool { Self.isProduction(baseURL) }

    /// Whether `baseURL` is Apple's own.
    static func isProduction(_ baseURL: URL) -> Bool {
        baseURL.host?.lowercased() == "appleid.apple.com" && baseURL.scheme == "https"
    }

    /// The developer teams: `apple.teams`, or the one team of the single-team settings (none when those are absent,
    /// as for commands that do not call Apple).
    public var allTeams: [AppleTeam] {
        if !teams.isEmpty { return teams }
        guard !teamID.isEmpty else { return [] }
        return [AppleTeam(teamID: teamID, keyID: keyID, privateKeyPEM: privateKeyPEM, clientIDs: clientIDs)]
    }

    /// Every configured client id, of every team, in order: the audiences identity tokens and notifications may have.
    public var allClientIDs: [String] { teams.isEmpty ? clientIDs : teams.flatMap(\.clientIDs) }

    /// Whether `text` has a team id's shape: 10 ASCII letters and digits.
    public static func isTeamID(_ text: String) -> Bool {
        text.count == 10 && text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
    }

    /// Refuses plain `http` to anything but a loopback address: tokens and client secrets travel there.
    static func checkTransport(_ url: URL) throws(ConfigurationError) {
        guard url.scheme == "http" else { return }
        let host = (url.host ?? "").lowercased()
        // An IP literal of the loopback range, or `localhost`: `http://127.evil.example` is a name like any other.
        let loopbackRanges = ["127.0.0.0/8", "::1"].compactMap { IPAddressRange($0) }
        let loopback = host == "localhost" || IPAddress(host).map { address in loopbackRanges.contains { $0.contains(address) } } == true
        guard loopback else {
            throw ConfigurationError(setting: "APPLE_BASE_URL", problem: "plain http is allowed only to a loopback address; use https")
        }
    }

    /// The teams of `apple.teams` (empty when the file has none), checked: each has a 10-character `team_id`, a
    /// `key_id`, a `private_key_file` (read and checked to be a `.p8` when `readKeys`) and `client_ids`, and no client
    /// id is listed twice.
    static func teams(_ settings: SettingsReader, readKeys: Bool) throws(ConfigurationError) -> [AppleTeam] {
        var teams: [AppleTeam] = []
        var owners: [String: String] = [:]
        for index in 0... {
            let prefix = "apple.teams[\(index)]"
            func value(_ name: String) -> String? { settings.reader.settingText(["apple", "teams", String(index), name]) }
            let clientIDs = settings.reader.settingList(["apple", "teams", String(index), "client_ids"])
            guard value("team_id") != nil || value("key_id") != nil || value("private_key_file") != nil || clientIDs != nil else { break }
            guard let teamID = value("team_id"), isTeamID(teamID) else {
                throw ConfigurationError(setting: "\(prefix).team_id", problem: "must be the 10-character team id")
            }
            guard let keyID = value("key_id") else { throw ConfigurationError(setting: "\(prefix).key_id", problem: "is required") }
            guard let keyFile = value("private_key_file") else {
                throw ConfigurationError(setting: "\(prefix).private_key_file", problem: "is required")
            }
            guard let clientIDs, !clientIDs.isEmpty else {
                throw ConfigurationError(setting: "\(prefix).client_ids", problem: "is required (a list of App IDs / Services IDs)")
            }
            for clientID in clientIDs {
                if let other = owners[clientID] {
                    throw ConfigurationError(
                        setting: "\(prefix).client_ids",
                        problem: "\(clientID) is listed by team \(other) too; a client id belongs to exactly one team"
                    )
                }
                owners[clientID] = teamID
            }
            let pem = readKeys ? try SettingsReader.readKeyFile(keyFile, setting: "\(prefix).private_key_file") : ""
            teams.append(AppleTeam(teamID: teamID, keyID: keyID, privateKeyPEM: pem, clientIDs: clientIDs))
        }
        return teams
    }
}
