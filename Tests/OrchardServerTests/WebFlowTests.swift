import Accounts
import AppleIDEmulator
import Foundation
import NIOHTTP1
import OrchardServer
import OrchardTesting
import SQLKit
import Storage
import Testing

@Suite("The web flow through the HTTP API: authorize, Apple's form post, the session cookie")
struct WebFlowTests {
    /// The query of a URL, as a dictionary.
    static func query(_ url: String) -> [String: String] {
        var items: [String: String] = [:]
        for item in URLComponents(string: url)?.queryItems ?? [] { items[item.name] = item.value }
        return items
    }

    /// The payload of a JWS, decoded without any check.
    static func claims(_ jws: String) -> [String: Any] {
        let parts = jws.split(separator: ".")
        guard parts.count == 3 else { return [:] }
        var text = String(parts[1]).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        guard let data = Data(base64Encoded: text) else { return [:] }
        return ((try? JSONSerialization.jsonObject(with: data)) as? [String: Any]) ?? [:]
    }

    /// How many web-flow states wait in the database.
    static func pendingStates(_ h: OrchardHarness) async throws -> Int {
        try await h.database.withDatabase { db in
            try await db.raw("SELECT COUNT(*) AS n FROM web_flow_states").first()?.decode(column: "n", as: Int.self) ?? 0
        }
    }

    /// Starts the flow and loads Apple's page; the form Apple would post, with its action on the harness.
    static func appleForm(
        _ h: OrchardHarness,
        _ browser: WebFlowBrowser,
        returnTo: String? = nil,
        extra: [String: String] = [:]
    )
        async throws -> WebFlowBrowser.Form
    {
        let start = try await browser.request(.GET, "/v1/auth/apple/authorize" + (returnTo.map { "?return_to=\($0)" } ?? ""))
        #expect(start.status == 302)
        var form = try await browser.visitApple(try #require(start.header("Location")), extraQuery: extra)
        form.action = h.local(form.action)
        return form
    }

    @Test("authorize answers 302 to Apple's authorize URL with the web client id, form_post, name email, a fresh state and nonce")
    func authorizeRedirect() async throws {
        try await OrchardHarness.withWebFlow { h, browser in
            let first = try await browser.request(.GET, "/v1/auth/apple/authorize")
            #expect(first.status == 302)
            #expect(first.header("Cache-Control") == "no-store")
            let location = try #require(first.header("Location"))
            #expect(location.hasPrefix(h.emulatorServer.baseURL + "/auth/authorize?"))
            #expect(location.contains("response_type=code%20id_token"))
            #expect(location.contains("scope=name%20email"))
            let query = Self.query(location)
            #expect(query["client_id"] == OrchardHarness.webClientID)
            #expect(query["redirect_uri"] == OrchardHarness.webRedirectURI)
            #expect(query["response_type"] == "code id_token")
            #expect(query["response_mode"] == "form_post")
            #expect(query["scope"] == "name email")
            let state = try #require(query["state"])
            let nonce = try #require(query["nonce"])
            #expect(state.count >= 43 && nonce.count >= 43 && state != nonce)
            let second = Self.query(try #require(try await browser.request(.GET, "/v1/auth/apple/authorize").header("Location")))
            #expect(second["state"] != state)
            #expect(second["nonce"] != nonce)
            #expect(try await Self.pendingStates(h) == 2)
        }
    }

    @Test(
        "authorize binds the state to the browser: __Host-orchard_web_state is HttpOnly, Secure, SameSite=None, with Path=/ as its __Host- prefix requires, and only its hash is stored"
    )
    func bindingCookie() async throws {
        try await OrchardHarness.withWebFlow { h, browser in
            let start = try await browser.request(.GET, "/v1/auth/apple/authorize")
            let setCookie = try #require(start.headers(named: "Set-Cookie").first { $0.hasPrefix("__Host-orchard_web_state=") })
            let attributes = setCookie.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            for attribute in ["HttpOnly", "Secure", "SameSite=None", "Path=/", "Max-Age=600"] {
                #expect(attributes.contains(attribute), "Set-Cookie lacks \(attribute): \(setCookie)")
            }
            let binder = try #require(browser.cookie("__Host-orchard_web_state"))
            #expect(binder.utf8.count >= 43, "256 random bits")
            let stored = try await h.databaseBytes().reduce(into: Data()) { $0.append($1.bytes) }
            #expect(stored.range(of: Data(binder.utf8)) == nil, "the binder itself is never stored")

            // A second flow in the same browser gets a binder of its own.
            _ = try await browser.request(.GET, "/v1/auth/apple/authorize")
            #expect(browser.cookie("__Host-orchard_web_state") != binder)
        }
    }

    @Test(
        "login CSRF: an attacker's kept form post replayed from the victim's browser is 400 state_invalid, no session, and the state is not used up"
    )
    func loginCSRF() async throws {
        try await OrchardHarness.withWebFlow { h, attacker in
            // The attacker starts a flow, signs in at Apple as themself, and keeps Apple's post unsent.
            let kept = try await Self.appleForm(h, attacker)
            try await WebFlowBrowser.with(orchard: h.baseURL) { victim in
                // A page makes the victim's browser post it: no flow cookie at all...
                let bare = try await victim.postForm(kept, from: h.appleOrigin)
                #expect(bare.status == 400)
                #expect(bare.code == "state_invalid")
                #expect(!bare.setsCookie("__Host-orchard_session"))
                #expect(bare.clearsCookie("__Host-orchard_web_state"))
                // ...or the cookie of a flow of the victim's own.
                _ = try await victim.request(.GET, "/v1/auth/apple/authorize")
                #expect(victim.cookie("__Host-orchard_web_state") != nil)
                let foreign = try await victim.postForm(kept, from: h.appleOrigin)
                #expect(foreign.code == "state_invalid")
                #expect(!foreign.setsCookie("__Host-orchard_session"))
                #expect(victim.cookie() == nil)
            }
            #expect(h.emulator.calls(to: .token).isEmpty, "a refused post never reaches Apple")
            #expect(try await h.accounts.listAccounts().isEmpty)
            // Refused for its cookie, the state was not used up: the browser that started the flow still completes it.
            #expect(try await attacker.postForm(kept, from: h.appleOrigin).status == 303)
            #expect(attacker.cookie() != nil)
        }
    }

    @Test("without APPLE_REDIRECT_URI both web-flow routes answer 404 web_flow_disabled")
    func disabled() async throws {
        try await OrchardHarness.with { h in
            let authorize = try await h.request(.GET, "/v1/auth/apple/authorize")
            #expect(authorize.status == 404)
            #expect(authorize.code == "web_flow_disabled")
            #expect(authorize.header("Content-Type") == "application/problem+json")
            let callback = try await h.request(
                .POST,
                "/v1/auth/apple/callback",
                body: Data("state=x&code=y".utf8),
                headers: [("Content-Type", "application/x-www-form-urlencoded")]
            )
            #expect(callback.status == 404)
            #expect(callback.code == "web_flow_disabled")
        }
    }

    @Test(
        "return_to must be a path on this site: other sites, //host, /\\host, javascript:, spaces and control characters are 400",
        arguments: [
            "https://evil.example/account", "http:%2F%2Fevil.example", "//evil.example", "%2F%2Fevil.example", "/%2Fevil.example",
            "/%5Cevil.example", "%2F%5Cevil.example", "/account%5C..%5Cadmin", "javascript:alert(1)", "javascript%3Aalert(1)",
            "/account%0D%0ASet-Cookie:%20x=1", "/acc%20ount", "/account%09", "/account%00", "/%E2%80%A8", "/%E2%80%8B", "%20/account",
            "", "account", "evil.example", "/" + String(repeating: "a", count: 512),
        ]
    )
    func openRedirects(_ returnTo: String) async throws {
        try await OrchardHarness.withWebFlow { h, browser in
            let response = try await browser.request(.GET, "/v1/auth/apple/authorize?return_to=\(returnTo)")
            #expect(response.status == 400, "return_to=\(returnTo) answered \(response.status)")
            #expect(response.code == "invalid_request")
            #expect(response.header("Location") == nil)
            #expect(try await Self.pendingStates(h) == 0)
        }
    }

    @Test("a return_to of 512 bytes is taken, one of 513 is 400 invalid_request and stores nothing")
    func returnToLength() async throws {
        try await OrchardHarness.withWebFlow { h, browser in
            let longest = "/" + String(repeating: "a", count: 511)
            #expect(try await browser.request(.GET, "/v1/auth/apple/authorize?return_to=\(longest)").status == 302)
            let over = try await browser.request(.GET, "/v1/auth/apple/authorize?return_to=\(longest)b")
            #expect(over.status == 400)
            #expect(over.code == "invalid_request")
            #expect(try await Self.pendingStates(h) == 1)
        }
    }

    @Test("a browser signs in: Apple's cross-site post carries no cookie, Orchard answers 303 to return_to with the session cookie")
    func signIn() async throws {
        try await OrchardHarness.withWebFlow { h, browser in
            let form = try await Self.appleForm(h, browser)
            #expect(form.fields.map(\.name) == ["code", "id_token", "state", "user"])
            #expect(browser.cookie() == nil)
            let back = try await browser.postForm(form, from: h.appleOrigin)
            #expect(back.status == 303)
            #expect(back.header("Location") == "/account")
            #expect(back.header("Cache-Control") == "no-store")
            let setCookie = try #require(back.header("Set-Cookie"))
            let attributes = setCookie.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            #expect(attributes.first?.hasPrefix("__Host-orchard_session=") == true)
            for attribute in ["HttpOnly", "Secure", "SameSite=Lax", "Path=/", "Max-Age=2592000"] {
                #expect(attributes.contains(attribute), "Set-Cookie lacks \(attribute): \(setCookie)")
            }
            #expect(back.header("Clear-Site-Data") == nil)

            let session = try await browser.request(.GET, "/v1/session")
            #expect(session.status == 200)
            let account = try #require(session.json["account"] as? [String: Any])
            #expect(account["apple_sub"] as? String == AppleEmulator.webDemoUser.sub)
            #expect(account["email"] as? String == AppleEmulator.webDemoUser.email)
            #expect((account["name"] as? [String: Any])?["first_name"] as? String == "Jane")
            #expect((account["name"] as? [String: Any])?["last_name"] as? String == "Appleseed")
            #expect(account["apple_credential"] as? String == "valid")

            let exchanges = h.emulator.calls(to: .token)
            #expect(exchanges.count == 1)
            #expect(exchanges.first?.redirectURI == OrchardHarness.webRedirectURI)
            #expect(exchanges.first?.clientID == OrchardHarness.webClientID)
            #expect(try await Self.pendingStates(h) == 0)
        }
    }

    @Test("the identity token's nonce is the raw nonce of the authorize redirect, and no other nonce is accepted with that state")
    func nonceBinding() async throws {
        try await OrchardHarness.withWebFlow { h, browser in
            let start = try await browser.request(.GET, "/v1/auth/apple/authorize")
            let location = try #require(start.header("Location"))
            var form = try await browser.visitApple(location)
            form.action = h.local(form.action)
            #expect(Self.claims(try #require(form.field("id_token")))["nonce"] as? String == Self.query(location)["nonce"])

            // A token for another nonce, with this state: nonce_mismatch, nothing stored.
            let other = try await h.issueNonce()
            let foreign = try h.emulator.authorize(
                user: h.emulator.makeUser(),
                clientID: OrchardHarness.webClientID,
                nonce: other,
                redirectURI: OrchardHarness.webRedirectURI
            )
            var swapped = form
            swapped.set("id_token", foreign.identityToken)
            swapped.set("code", foreign.authorizationCode)
            let refused = try await browser.postForm(swapped, from: h.appleOrigin)
            #expect(refused.status == 401)
            #expect(refused.code == "nonce_mismatch")
            #expect(!refused.setsCookie("__Host-orchard_session"))
            #expect(refused.clearsCookie("__Host-orchard_web_state"))
            #expect(try await h.accounts.listAccounts().isEmpty)
        }
    }

    @Test("a returning user: Apple posts no user JSON, the account is the same and keeps the first name")
    func returningUser() async throws {
        try await OrchardHarness.withWebFlow { h, browser in
            let user = h.emulator.makeUser(firstName: "Grace", lastName: "Hopper")
            let first = try await h.webSignIn(browser, loginHint: user.sub)
            #expect(first.response.status == 303)
            #expect(first.form.field("user")?.contains("Grace") == true)
            let firstID = (try await browser.request(.GET, "/v1/session").json["account"] as? [String: Any])?["id"] as? String

            browser.clearCookies()
            let second = try await h.webSignIn(browser, loginHint: user.sub)
            #expect(second.response.status == 303)
            #expect(second.form.field("user") == nil)
            let account = try #require(try await browser.request(.GET, "/v1/session").json["account"] as? [String: Any])
            #expect(account["id"] as? String == firstID)
            #expect((account["name"] as? [String: Any])?["first_name"] as? String == "Grace")
            #expect(try await h.accounts.listAccounts().count == 1)
        }
    }

    @Test("return_to is where the browser lands, its query kept")
    func returnTo() async throws {
        try await OrchardHarness.withWebFlow { h, browser in
            let response = try await h.webSignIn(browser, returnTo: "/settings/profile?tab=email#top").response
            #expect(response.status == 303)
            #expect(response.header("Location") == "/settings/profile?tab=email#top")
        }
    }

    @Test("a replayed state is 400 state_invalid: one session, one code exchange")
    func replayedState() async throws {
        try await OrchardHarness.withWebFlow { h, browser in
            let form = try await Self.appleForm(h, browser)
            #expect(try await browser.postForm(form, from: h.appleOrigin).status == 303)
            browser.clearCookies()
            let replayed = try await browser.postForm(form, from: h.appleOrigin)
            #expect(replayed.status == 400)
            #expect(replayed.code == "state_invalid")
            #expect(!replayed.setsCookie("__Host-orchard_session"))
            #expect(replayed.clearsCookie("__Host-orchard_web_state"))
            #expect(h.emulator.calls(to: .token).count == 1)
        }
    }

    @Test("a tampered, unknown, missing or expired state is 400 state_invalid, and a tampered one leaves the real one usable")
    func badStates() async throws {
        try await OrchardHarness.withWebFlow { h, browser in
            let form = try await Self.appleForm(h, browser)
            let state = try #require(form.field("state"))
            let flipped = String(state.dropLast()) + (state.hasSuffix("A") ? "B" : "A")
            // Tampered posts come from elsewhere (each answer of the callback clears the flow's cookie, so the flow's
            // own browser could not post again).
            try await WebFlowBrowser.with(orchard: h.baseURL) { other in
                for bad in [flipped, state + "x", "unknown-state", String(repeating: "A", count: 43), "<script>", ""] {
                    var tampered = form
                    tampered.set("state", bad)
                    let response = try await other.postForm(tampered, from: h.appleOrigin)
                    #expect(response.status == 400, "state \(bad) answered \(response.status)")
                    #expect(response.code == "state_invalid")
                }
                var missing = form
                missing.set("state", nil)
                #expect(try await other.postForm(missing, from: h.appleOrigin).code == "state_invalid")
            }
            #expect(h.emulator.calls(to: .token).isEmpty)
            #expect(try await browser.postForm(form, from: h.appleOrigin).status == 303)

            let late = try await Self.appleForm(h, browser)
            h.clock.advance(by: 601)
            let expired = try await browser.postForm(late, from: h.appleOrigin)
            #expect(expired.status == 400)
            #expect(expired.code == "state_invalid")
            #expect(try await Self.pendingStates(h) == 0)
        }
    }

    @Test("Apple posts error=user_cancelled_authorize: 303 to return_to?error=CODE, nothing stored, no cookie, the state used up")
    func cancelled() async throws {
        try await OrchardHarness.withWebFlow { h, browser in
            let form = try await Self.appleForm(h, browser, returnTo: "/account?from=menu", extra: ["emulator_error": "user_cancelled_authorize"])
            #expect(form.fields.map(\.name) == ["error", "state"])
            let back = try await browser.postForm(form, from: h.appleOrigin)
            #expect(back.status == 303)
            #expect(back.header("Location") == "/account?from=menu&error=user_cancelled_authorize")
            #expect(!back.setsCookie("__Host-orchard_session"))
            #expect(back.clearsCookie("__Host-orchard_web_state"))
            #expect(try await h.accounts.listAccounts().isEmpty)
            #expect(h.emulator.calls(to: .token).isEmpty)
            #expect(try await browser.postForm(form, from: h.appleOrigin).code == "state_invalid")

            var odd = try await Self.appleForm(h, browser)
            odd.fields = [("error", "<script>alert(1)</script>"), ("state", odd.field("state") ?? "")]
            #expect(try await browser.postForm(odd, from: h.appleOrigin).header("Location") == "/account?error=authorization_failed")
        }
    }

    @Test("the callback reads form bodies up to 64 KiB and refuses larger ones (413) and other content types (400)")
    func bodyLimits() async throws {
        try await OrchardHarness.withWebFlow { h, browser in
            var form = try await Self.appleForm(h, browser)
            form.set("padding", String(repeating: "p", count: 60 * 1024))
            #expect(form.encoded.utf8.count > 60 * 1024 && form.encoded.utf8.count < 64 * 1024)
            #expect(try await browser.postForm(form, from: h.appleOrigin).status == 303)

            var big = try await Self.appleForm(h, browser)
            big.set("padding", String(repeating: "p", count: 65 * 1024))
            let tooLarge = try await browser.postForm(big, from: h.appleOrigin)
            #expect(tooLarge.status == 413)
            #expect(tooLarge.code == "payload_too_large")

            let json = try await browser.request(
                .POST,
                "/v1/auth/apple/callback",
                origin: h.appleOrigin,
                headers: [("Content-Type", "application/json")],
                body: #"{"state": "x"}"#
            )
            #expect(json.status == 400)
            #expect(json.code == "invalid_request")

            var badUser = try await Self.appleForm(h, browser)
            badUser.set("user", "{not json")
            let refused = try await browser.postForm(badUser, from: h.appleOrigin)
            #expect(refused.code == "invalid_request")
            #expect(refused.clearsCookie("__Host-orchard_web_state"), "every answer of the callback clears the flow's cookie")
        }
    }

    @Test("a code Apple refuses in the callback is 401 authorization_code_rejected, with no cookie and no account")
    func codeRefused() async throws {
        try await OrchardHarness.withWebFlow { h, browser in
            h.emulator.injectFailure(endpoint: .token, failure: .appleError("invalid_grant"))
            let response = try await h.webSignIn(browser).response
            #expect(response.status == 401)
            #expect(response.code == "authorization_code_rejected")
            #expect(!response.setsCookie("__Host-orchard_session"))
            #expect(response.clearsCookie("__Host-orchard_web_state"))
            #expect(try await h.accounts.listAccounts().isEmpty)
        }
    }
}

extension WebFlowBrowser.Form {
    /// The same form with the `user` field set or removed.
    fileprivate func withUser(_ user: String?) -> WebFlowBrowser.Form {
        var copy = self
        copy.set("user", user)
        return copy
    }
}
