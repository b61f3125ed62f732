import AppleIDEmulator
import Foundation
import NIOHTTP1
public import OrchardServer

extension OrchardHarness {
    /// The site a web-flow harness's Orchard says it is (its `ORCHARD_PUBLIC_URL` and `APPLE_REDIRECT_URI` origin):
    /// tests send requests to the harness's socket with this `Origin`, as a proxy in front of Orchard would see them.
    public static let webSiteOrigin = "https://orchard.test"

    /// `APPLE_REDIRECT_URI` of a web-flow harness.
    public static let webRedirectURI = webSiteOrigin + "/v1/auth/apple/callback"

    /// Runs `body` with Orchard's web flow on (`APPLE_REDIRECT_URI`, `APPLE_WEB_CLIENT_ID` = ``webClientID``) and a
    /// fresh ``WebFlowBrowser``.
    public static func withWebFlow(
        configure: @Sendable @escaping (inout OrchardConfiguration) -> Void = { _ in },
        _ body: (OrchardHarness, WebFlowBrowser) async throws -> Void
    ) async throws {
        try await with(
            configure: { configuration in
                configuration.webFlow.redirectURI = URL(string: webRedirectURI)!
                configuration.webFlow.clientID = webClientID
                configure(&configuration)
            },
            { harness in
                try await WebFlowBrowser.with(orchard: harness.baseURL) { browser in
                    try await body(harness, browser)
                }
            }
        )
    }

    /// The emulator's origin, as the browser sees Apple's page.
    public var appleOrigin: String { emulatorServer.baseURL }

    /// Maps the redirect URI (on ``webSiteOrigin``) onto this harness's socket.
    public func local(_ url: String) -> String {
        url.hasPrefix(Self.webSiteOrigin) ? baseURL + url.dropFirst(Self.webSiteOrigin.count) : url
    }

    /// The browser's whole sign-in: `GET /v1/auth/apple/authorize`, Apple's page, and Apple's cross-site form post back.
    ///
    /// - Returns: The callback's answer, and the form Apple posted.
    public func webSignIn(
        _ browser: WebFlowBrowser,
        returnTo: String? = nil,
        loginHint: String? = nil,
        extraQuery: [String: String] = [:]
    ) async throws -> (response: TestResponse, form: WebFlowBrowser.Form) {
        let start = try await browser.request(
            .GET,
            "/v1/auth/apple/authorize" + (returnTo.map { "?return_to=" + WebFlowBrowser.formEncode($0) } ?? "")
        )
        guard start.status == 302, let location = start.header("Location") else {
            throw HarnessError("GET /v1/auth/apple/authorize answered \(start.status): \(String(decoding: start.body, as: UTF8.self))")
        }
        var query = extraQuery
        if let loginHint { query["login_hint"] = loginHint }
        var form = try await browser.visitApple(location, extraQuery: query)
        form.action = local(form.action)
        return (try await browser.postForm(form, from: appleOrigin), form)
    }
}
