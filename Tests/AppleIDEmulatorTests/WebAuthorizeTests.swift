import AppleIDEmulator
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import OrchardTesting
import Testing

@Suite("The emulator's /auth/authorize: consent and Apple's auto-submitting form post")
struct WebAuthorizeTests {
    static func authorizeURL(_ h: EmulatorHarness, _ extra: [String: String] = [:]) -> String {
        var query = [
            "response_type": "code id_token", "response_mode": "form_post", "client_id": EmulatorHarness.webID,
            "redirect_uri": EmulatorHarness.redirectURI, "state": "st-123", "nonce": "raw-nonce-456", "scope": "name email",
        ]
        query.merge(extra) { $1 }
        return h.baseURL + "/auth/authorize?"
            + query.sorted { $0.key < $1.key }.map { "\($0.key)=\(WebFlowBrowser.formEncode($0.value))" }.joined(separator: "&")
    }

    static func claims(_ jws: String) -> [String: Any]? {
        let parts = jws.split(separator: ".")
        guard parts.count == 3, let data = JWSBytes.decode(String(parts[1])) else { return nil }
        return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
    }

    static func get(_ url: String) async throws -> (status: Int, contentType: String?, html: String) {
        var request = HTTPClientRequest(url: url)
        request.method = .GET
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 1 << 20)
        return (Int(response.status.code), response.headers.first(name: "Content-Type"), String(buffer: body))
    }

    @Test("it answers a page whose form posts code, id_token (with the nonce as given), state and, the first time only, user")
    func consents() async throws {
        try await EmulatorHarness.with { h in
            let page = try await Self.get(Self.authorizeURL(h))
            #expect(page.status == 200)
            #expect(page.contentType == "text/html; charset=utf-8")
            #expect(page.html.contains(#"document.getElementById("apple-form").submit()"#))
            let form = try #require(WebFlowBrowser.autoSubmittedForm(page.html))
            #expect(form.action == EmulatorHarness.redirectURI)
            #expect(form.fields.map(\.name) == ["code", "id_token", "state", "user"])
            #expect(form.field("state") == "st-123")
            let claims = try #require(Self.claims(form.field("id_token") ?? ""))
            #expect(claims["nonce"] as? String == "raw-nonce-456")
            #expect(claims["aud"] as? String == EmulatorHarness.webID)
            #expect(claims["sub"] as? String == AppleEmulator.webDemoUser.sub)
            let user = try #require(try JSONSerialization.jsonObject(with: Data((form.field("user") ?? "").utf8)) as? [String: Any])
            #expect((user["name"] as? [String: Any])?["firstName"] as? String == "Jane")
            #expect((user["name"] as? [String: Any])?["lastName"] as? String == "Appleseed")
            #expect(user["email"] as? String == AppleEmulator.webDemoUser.email)

            let again = try #require(WebFlowBrowser.autoSubmittedForm(try await Self.get(Self.authorizeURL(h)).html))
            #expect(again.fields.map(\.name) == ["code", "id_token", "state"])
            let calls = h.emulator.calls(to: .authorize)
            #expect(calls.count == 2)
            #expect(calls.first?.clientID == EmulatorHarness.webID)
            #expect(calls.first?.redirectURI == EmulatorHarness.redirectURI)
            #expect(calls.first?.status == 200)
        }
    }

    @Test("the code it posts is bound to the redirect URI: the exchange must send the same one")
    func codeBoundToRedirect() async throws {
        try await EmulatorHarness.with { h in
            let form = try #require(WebFlowBrowser.autoSubmittedForm(try await Self.get(Self.authorizeURL(h)).html))
            let code = try #require(form.field("code"))
            let wrong = try await h.exchange(code: code, clientID: EmulatorHarness.webID, redirectURI: "https://other.example/cb")
            #expect(wrong.status == 400)
            let right = try await h.exchange(code: code, clientID: EmulatorHarness.webID, redirectURI: EmulatorHarness.redirectURI)
            #expect(right.status == 200)
        }
    }

    @Test("login_hint, or the user set through the control API, picks who consents; scope limits the user JSON")
    func whoConsents() async throws {
        try await EmulatorHarness.with { h in
            let known = h.emulator.makeUser(firstName: "Ada", lastName: "Lovelace")
            let bySub = try #require(WebFlowBrowser.autoSubmittedForm(try await Self.get(Self.authorizeURL(h, ["login_hint": known.sub])).html))
            #expect(Self.claims(bySub.field("id_token") ?? "")?["sub"] as? String == known.sub)

            let byEmail = try #require(
                WebFlowBrowser.autoSubmittedForm(
                    try await Self.get(Self.authorizeURL(h, ["login_hint": "new.person@example.com", "scope": "email"])).html
                )
            )
            #expect(byEmail.field("user") == #"{"email":"new.person@example.com"}"#)

            h.emulator.setWebUser(known)
            let chosen = try #require(WebFlowBrowser.autoSubmittedForm(try await Self.get(Self.authorizeURL(h)).html))
            #expect(Self.claims(chosen.field("id_token") ?? "")?["sub"] as? String == known.sub)
        }
    }

    @Test("emulator_error, or an injected Apple error, posts error and state and authorizes nothing")
    func cancel() async throws {
        try await EmulatorHarness.with { h in
            let cancelled = try #require(
                WebFlowBrowser.autoSubmittedForm(try await Self.get(Self.authorizeURL(h, ["emulator_error": "user_cancelled_authorize"])).html)
            )
            #expect(cancelled.fields.map(\.name) == ["error", "state"])
            #expect(cancelled.field("error") == "user_cancelled_authorize")
            h.emulator.injectFailure(endpoint: .authorize, failure: .appleError("user_cancelled_authorize"))
            let injected = try #require(WebFlowBrowser.autoSubmittedForm(try await Self.get(Self.authorizeURL(h)).html))
            #expect(injected.field("error") == "user_cancelled_authorize")
            #expect(h.emulator.user(sub: AppleEmulator.webDemoUser.sub) == nil)
        }
    }

    @Test("an unknown client, no redirect URI, or a response mode other than form_post is a 400 page")
    func refusals() async throws {
        try await EmulatorHarness.with { h in
            let unknownClient = try await Self.get(Self.authorizeURL(h, ["client_id": "com.unknown"]))
            #expect(unknownClient.status == 400)
            #expect(unknownClient.html.contains("invalid_client"))
            for refused in [["redirect_uri": ""], ["response_mode": "query"], ["response_type": "token"]] {
                let page = try await Self.get(Self.authorizeURL(h, refused))
                #expect(page.status == 400, "\(refused) answered \(page.status)")
            }
        }
    }
}
