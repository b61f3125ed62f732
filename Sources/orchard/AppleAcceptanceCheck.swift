import AppleID
import AsyncHTTPClient
import Foundation
import Logging
import OrchardServer

/// `orchard config check --apple`: asks Apple, for each configured client id, whether it accepts the team, the key and
/// the client id, before a user finds out at the first sign-in (`502 apple_client_rejected`).
///
/// Each client id's team signs a fresh client secret, sent with an authorization code that cannot exist to
/// `/auth/token`: Apple's `invalid_grant` means it accepted the client and only refused the code; `invalid_client`
/// means it refused the client. Apple's keys are fetched too. Nothing is stored and no user is involved.
enum AppleAcceptanceCheck {
    /// Prints one line per client id (and one for Apple's keys); returns whether Apple accepted every client id.
    static func run(_ configuration: OrchardConfiguration) async -> Bool {
        let http = HTTPClient.makeOrchardClient()
        let accepted = await run(configuration, http: http)
        try? await http.shutdown()
        return accepted
    }

    private static func run(_ configuration: OrchardConfiguration, http: HTTPClient) async -> Bool {
        let logger = Logger(label: "orchard.config")
        let endpoints = AppleEndpoints(baseURL: configuration.apple.baseURL, httpClient: http, logger: logger)
        let secrets: ClientSecretSigner
        do {
            secrets = try ClientSecretSigner(teams: configuration.apple.allTeams, clock: SystemWallClock())
        } catch {
            print("apple: the private key cannot sign a client secret: \(error.reason)")
            return false
        }
        let client = AppleRESTClient(endpoints, secrets: secrets, timeout: .seconds(10))
        var accepted = true
        do {
            _ = try await HTTPAppleKeySource(endpoints, timeout: .seconds(10)).fetchKeys()
            print("apple: keys: fetched from \(configuration.apple.baseURL.absoluteString)/auth/keys")
        } catch {
            print("apple: keys: cannot be fetched from \(configuration.apple.baseURL.absoluteString)/auth/keys (\(type(of: error)))")
            accepted = false
        }
        for team in configuration.apple.allTeams {
            for clientID in team.clientIDs {
                // The web flow's client id is asked as the web flow asks, with its return URL.
                let redirectURI = clientID == configuration.webClientID ? configuration.webFlow.redirectURI?.absoluteString : nil
                let line = await check(clientID: clientID, team: team, redirectURI: redirectURI, client: client)
                print(line.text)
                accepted = accepted && line.accepted
            }
        }
        return accepted
    }

    private static func check(
        clientID: String,
        team: AppleTeam,
        redirectURI: String?,
        client: AppleRESTClient
    ) async -> (text: String, accepted: Bool) {
        let who = "team \(team.teamID), key \(team.keyID)"
        let impossible = Redacted("orchard-config-check.\(UUID().uuidString.lowercased())")
        do {
            _ = try await client.exchangeCode(impossible, clientID: clientID, redirectURI: redirectURI)
            return ("apple: \(clientID): accepted (\(who))", true)
        } catch {
            switch (error.code, error.appleErrorCode) {
            case (.authorizationCodeRejected, _):
                return ("apple: \(clientID): accepted (\(who))", true)
            case (.appleClientRejected, .invalidClient?):
                return (
                    """
                    apple: \(clientID): REFUSED (invalid_client): Apple does not accept this client id with \(who). Likely \
                    causes: the key belongs to another team than APPLE_TEAM_ID; APPLE_KEY_ID is not this key's id \
                    (Certificates, Identifiers & Profiles > Keys); the client id is not grouped with the key's primary App \
                    ID (Sign in with Apple > Configure on the App ID, or the Services ID's primary App ID); the key was revoked
                    """,
                    false
                )
            case (.appleClientRejected, let code):
                // Not a verdict on the client: Apple refused the request itself (a form it does not take here).
                let said = code?.rawValue ?? "an error"
                return ("apple: \(clientID): REFUSED (\(said)): Apple refused the check's request: \(error.reason)", false)
            case (.appleUnavailable, _):
                return ("apple: \(clientID): cannot tell: Apple cannot be reached (\(error.reason))", false)
            default:
                return ("apple: \(clientID): cannot tell: \(error.code.rawValue) (\(error.reason))", false)
            }
        }
    }
}
