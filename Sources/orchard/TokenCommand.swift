import Accounts
import AppleID
import ArgumentParser
import AsyncHTTPClient
import Foundation
import Logging
import OrchardServer

/// `orchard token …`.
struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Look inside identity tokens and notification JWSs.",
        subcommands: [TokenInspectCommand.self]
    )
}

/// `orchard token inspect TOKEN [--jwks FILE] [--audience ID]... [--at RFC3339] [--nonce RAW]`.
struct TokenInspectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Decode an identity token or a notification JWS and print every check as pass, fail or skipped.",
        discussion: """
            Exits 0 only when no check failed. Keys come from APPLE_BASE_URL/auth/keys unless --jwks names a file. \
            The audience is checked only with --audience or APPLE_CLIENT_IDS, the nonce only with --nonce. \
            Runs with no configuration at all. The subject, email and token are never printed.
            """
    )

    @Argument(help: "The token (JWS), or - to read it from standard input (keeps it out of ps and shell history).")
    var token: String

    @Option(help: ArgumentHelp("Read Apple's key set from this JWKS file instead of fetching it.", valueName: "file"))
    var jwks: String?

    @Option(help: ArgumentHelp("An accepted audience (client id); repeat for several.", valueName: "id"))
    var audience: [String] = []

    @Option(help: ArgumentHelp("Evaluate exp and iat at this instant (RFC 3339, e.g. 2025-07-15T10:36:57Z).", valueName: "time"))
    var at: String?

    @Option(help: ArgumentHelp("Check the nonce claim against this raw nonce (equal, or its SHA-256 hex).", valueName: "raw"))
    var nonce: String?

    func validate() throws {
        if let at, Self.parseDate(at) == nil {
            throw ValidationError("--at must be an RFC 3339 time, e.g. 2025-07-15T10:36:57Z")
        }
    }

    func run() async throws {
        let configuration = try await CommandSupport.loadConfiguration(needs: [])
        CommandSupport.bootstrapLogging(level: .error)
        let logger = Logger(label: "orchard.token")
        let text: String
        if token == "-" {
            text = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
        } else {
            text = token
        }
        let jws = text.trimmingCharacters(in: .whitespacesAndNewlines)

        let source: any AppleKeySource
        var httpClient: HTTPClient?
        if let jwks {
            guard let data = FileManager.default.contents(atPath: jwks) else {
                throw ValidationError("cannot read the key set file \(jwks)")
            }
            do {
                source = try StaticAppleKeySource(json: data)
            } catch {
                throw ValidationError("\(jwks) is not a JWKS document: \(error.reason)")
            }
        } else {
            let client = HTTPClient.makeOrchardClient()
            httpClient = client
            source = HTTPAppleKeySource(AppleEndpoints(baseURL: configuration.apple.baseURL, httpClient: client, logger: logger))
        }
        let clock = SystemWallClock()
        let keys = AppleKeySet(source: source, clock: clock, logger: logger)
        let audiences = audience.isEmpty ? configuration.apple.allClientIDs : audience
        let verifier = AppleTokenVerifier(keys: keys, clientIDs: audiences, clock: clock, leeway: configuration.lifecycle.clockLeeway)
        let report = await verifier.inspect(
            jws,
            audiences: audiences.isEmpty ? nil : audiences,
            at: at.flatMap(Self.parseDate),
            nonce: nonce
        )
        try? await httpClient?.shutdown()
        for line in report.lines { print(line) }
        if !report.passed { throw ExitCode(1) }
    }

    static func parseDate(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text)
    }
}
