import Accounts
import AppleID
import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// The web flow: `GET /v1/auth/apple/authorize` sends the browser to Apple, `POST /v1/auth/apple/callback` takes
/// Apple's cross-site form post back and signs the user in with the same operation as `POST /v1/auth/apple`.
///
/// Without `APPLE_REDIRECT_URI` both answer `404 web_flow_disabled`.
struct WebFlowController<Context: RequestContext>: Sendable {
    let accounts: AccountDesk
    let states: WebFlowStates
    /// `APPLE_REDIRECT_URI`; `nil` turns the web flow off.
    let redirectURI: URL?
    /// The Services ID the web flow authorizes with (``OrchardConfiguration/webClientID``).
    let webClientID: String?
    /// Where Apple's `/auth/authorize` is.
    let appleBaseURL: URL
    let clock: any WallClock

    /// The callback's path, fixed by the contract.
    public static var callbackPath: String { "/v1/auth/apple/callback" }

    /// Adds the routes.
    func addRoutes(to routes: OrchardRoutes<Context>) {
        routes.add(.get, "/v1/auth/apple/authorize", .anonymous, use: authorize)
        routes.add(.post, Self.callbackPath, .webFlowCallback, use: callback)
    }

    /// `302` to Apple's authorize URL with a fresh state and nonce.
    @Sendable func authorize(_ request: Request, context: Context) async throws -> Response {
        guard let redirectURI, let webClientID else { throw OrchardProblem.webFlowDisabled }
        let returnTo: ReturnPath
        if let text = request.uri.queryParameters["return_to"] {
            guard let checked = ReturnPath(validating: String(text)) else {
                throw OrchardProblem.invalidRequest(
                    "return_to must be a path on this site of at most 512 bytes (one leading '/', no '//', no backslash, no spaces)"
                )
            }
            returnTo = checked
        } else {
            returnTo = .defaultPath
        }
        let nonce = try await accounts.issueNonce()
        let (state, binder) = try await states.begin(nonce: nonce, returnTo: returnTo.path)
        let query: [(String, String)] = [
            ("response_type", "code id_token"),
            ("response_mode", "form_post"),
            ("client_id", webClientID),
            ("redirect_uri", redirectURI.absoluteString),
            ("state", state),
            ("nonce", nonce.value),
            ("scope", "name email"),
        ]
        var base = appleBaseURL.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        let location = base + "/auth/authorize?" + query.map { "\($0)=\(Self.formEncode($1))" }.joined(separator: "&")
        context.logger.debug("web flow: sending the browser to Apple", metadata: ["web_flow.return_to": "\(returnTo.path)"])
        var headers: HTTPFields = [.location: location, .cacheControl: "no-store"]
        headers.append(HTTPField(name: .setCookie, value: WebStateCookie.setCookie(binder: binder, lifetime: states.lifetime)))
        return Response(status: .found, headers: headers)
    }

    /// Percent-encodes everything but RFC 3986's unreserved characters (a space becomes `%20`).
    static func formEncode(_ value: String) -> String {
        var unreserved = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: Unicode.Scalar(0)..<Unicode.Scalar(128)))
        unreserved.insert(charactersIn: "-._~")
        return value.addingPercentEncoding(withAllowedCharacters: unreserved) ?? value
    }
}
