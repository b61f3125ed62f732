import Accounts
import AppleIDEmulator
import Foundation
import NIOHTTP1
import OrchardServer
import OrchardTesting
import Testing

@Suite("Cookie sessions: wherever a bearer works, CSRF refusal, Clear-Site-Data")
struct CookieSessionTests {
    static let site = OrchardHarness.webSiteOrigin
    static let clearSiteData = #""cookies", "storage""#

    /// Sends `method path` with exactly this cookie (and no other), as a browser that still holds it.
    static func withCookie(
        _ browser: WebFlowBrowser,
        _ method: HTTPMethod,
        _ path: String,
        cookie: String,
        origin: String? = nil
    ) async throws -> TestResponse {
        try await browser.request(method, path, origin: origin, headers: [("Cookie", "__Host-orchard_session=\(cookie)")], cookies: false)
    }

    /// Whether the answer tells the browser to forget the session: `Clear-Site-Data` and an expired cookie.
    static func clears(_ response: TestResponse) -> Bool {
        response.header("Clear-Site-Data") == clearSiteData
            && response.headers.contains {
                $0.0.lowercased() == "set-cookie" && $0.1.hasPrefix("__Host-orchard_session=;") && $0.1.contains("Max-Age=0")
            }
    }

    /// Signs in through the web flow and returns the cookie's value.
    static func webSession(_ h: OrchardHarness, _ browser: WebFlowBrowser, loginHint: String? = nil) async throws -> String {
        let response = try await h.webSignIn(browser, loginHint: loginHint).response
        #expect(response.status == 303)
        return try #require(browser.cookie())
    }

    @Test("the cookie works wherever a bearer does; sign-out by cookie answers 204 with Clear-Site-Data, and so does every later session_revoked")
    func signOutByCookie() async throws {
        try await OrchardHarness.withWebFlow { h, browser in
            let cookie = try await Self.webSession(h, browser)
            let shown = try await browser.request(.GET, "/v1/session")
            #expect(shown.status == 200)
            #expect(shown.header("Clear-Site-Data") == nil)

            let signOut = try await browser.request(.DELETE, "/v1/session", origin: Self.site)
            #expect(signOut.status == 204)
            #expect(Self.clears(signOut))
            #expect(browser.cookie() == nil)
            #expect(h.emulator.calls(to: .revoke).isEmpty)

            let after = try await Self.withCookie(browser, .GET, "/v1/session", cookie: cookie)
            #expect(after.status == 401)
            #expect(after.code == "session_revoked")
            #expect(after["reason"] == "signed_out")
            #expect(Self.clears(after))
            let again = try await Self.withCookie(browser, .DELETE, "/v1/session", cookie: cookie, origin: Self.site)
            #expect(again.code == "session_revoked")
            #expect(Self.clears(again))

            let unknownSignOut = try await Self.withCookie(browser, .DELETE, "/v1/session", cookie: "unknown", origin: Self.site)
            #expect(unknownSignOut.code == "session_invalid")
            #expect(Self.clears(unknownSignOut))
            let unknownShow = try await Self.withCookie(browser, .GET, "/v1/session", cookie: "unknown")
            #expect(unknownShow.code == "session_invalid")
            #expect(unknownShow.header("Clear-Site-Data") == nil)
        }
    }

    @Test(
        "a cookie-authenticated DELETE from a foreign Origin is 403 csrf_rejected without Clear-Site-Data, and the account is intact",
        arguments: [
            "https://evil.example", "null", "https://orchard.test.evil.example", "http://orchard.test", "https://orchard.test:8443", "garbage",
        ]
    )
    func csrfRefused(_ origin: String) async throws {
        try await OrchardHarness.withWebFlow { h, browser in
            _ = try await Self.webSession(h, browser)
            for path in ["/v1/account", "/v1/session"] {
                let refused = try await browser.request(.DELETE, path, origin: origin)
                #expect(refused.status == 403, "DELETE \(path) from \(origin) answered \(refused.status)")
                #expect(refused.code == "csrf_rejected")
                #expect(refused.header("Content-Type") == "application/problem+json")
                #expect(refused.header("Clear-Site-Data") == nil)
                #expect(refused.header("Set-Cookie") == nil)
            }
            #expect(try await browser.request(.GET, "/v1/session").status == 200)
            #expect(try await h.accounts.listAccounts().count == 1)
            #expect(h.emulator.calls(to: .revoke).isEmpty)
        }
    }

    @Test("this site's Origin, however spelled, and no Origin at all, are not refused")
    func sameOrigin() async throws {
        try await OrchardHarness.withWebFlow { h, browser in
            for origin in ["https://orchard.test", "https://ORCHARD.test:443", nil] {
                browser.clearCookies()
                _ = try await Self.webSession(h, browser)
                let signOut = try await browser.request(.DELETE, "/v1/session", origin: origin)
                #expect(signOut.status == 204, "Origin \(origin ?? "none") answered \(signOut.status)")
            }
        }
    }

    @Test("bearer answers never carry Clear-Site-Data, and a bearer request is no CSRF case, whatever its Origin or cookie")
    func bearerUntouched() async throws {
        try await OrchardHarness.withWebFlow { h, browser in
            let cookie = try await Self.webSession(h, browser)
            let user = try #require(h.emulator.user(sub: AppleEmulator.webDemoUser.sub))
            let token = try #require((try await h.signIn(user).response.json["session"] as? [String: Any])?["token"] as? String)
            let withBoth = [("Authorization", "Bearer \(token)"), ("Cookie", "__Host-orchard_session=\(cookie)")]

            let show = try await browser.request(.GET, "/v1/session", headers: withBoth, cookies: false)
            #expect(show.status == 200)
            let signOut = try await browser.request(.DELETE, "/v1/session", origin: "https://evil.example", headers: withBoth, cookies: false)
            #expect(signOut.status == 204)
            #expect(signOut.header("Clear-Site-Data") == nil)
            let revoked = try await h.request(.GET, "/v1/session", bearer: token)
            #expect(revoked.code == "session_revoked")
            #expect(revoked.header("Clear-Site-Data") == nil)

            let second = try #require((try await h.signIn(user).response.json["session"] as? [String: Any])?["token"] as? String)
            let deleted = try await h.request(.DELETE, "/v1/account", headers: [("Origin", "https://evil.example")], bearer: second)
            #expect(deleted.status == 200)
            #expect(deleted.header("Clear-Site-Data") == nil)
            let gone = try await h.request(.GET, "/v1/session", bearer: second)
            #expect(gone.status == 401)
            #expect(gone.header("Clear-Site-Data") == nil)

            // The browser's cookie session died with the account: its answer clears the site.
            let cookieAfter = try await browser.request(.GET, "/v1/session")
            #expect(cookieAfter.code == "session_revoked")
            #expect(cookieAfter["reason"] == "account_deleted")
            #expect(Self.clears(cookieAfter))
        }
    }

    @Test("DELETE /v1/account by cookie: 200 with Clear-Site-Data, the refresh token revoked at Apple")
    func deleteByCookie() async throws {
        try await OrchardHarness.withWebFlow { h, browser in
            let cookie = try await Self.webSession(h, browser)
            let deleted = try await browser.request(.DELETE, "/v1/account", origin: Self.site)
            #expect(deleted.status == 200)
            #expect(deleted["apple_revocation"] == "revoked")
            #expect(Self.clears(deleted))
            #expect(browser.cookie() == nil)
            #expect(h.emulator.calls(to: .revoke).count == 1)
            #expect(try await h.accounts.listAccounts().isEmpty)
            let again = try await Self.withCookie(browser, .DELETE, "/v1/account", cookie: cookie, origin: Self.site)
            #expect(again.status == 401)
            #expect(Self.clears(again))
        }
    }

    @Test("a session Apple revoked answers session_revoked apple_credential_revoked: with Clear-Site-Data by cookie, without by bearer")
    func revokedByApple() async throws {
        try await OrchardHarness.withWebFlow { h, browser in
            let cookie = try await Self.webSession(h, browser)
            let user = try #require(h.emulator.user(sub: AppleEmulator.webDemoUser.sub))
            let token = try #require((try await h.signIn(user).response.json["session"] as? [String: Any])?["token"] as? String)
            #expect(h.emulator.revokeGrant(sub: user.sub) >= 1)
            h.clock.advance(by: RefreshValidationTests.pastDue)
            #expect(await eventually { (try? await h.request(.GET, "/v1/session", bearer: token))?.code == "session_revoked" })
            let byCookie = try await Self.withCookie(browser, .GET, "/v1/session", cookie: cookie)
            #expect(byCookie["reason"] == "apple_credential_revoked")
            #expect(Self.clears(byCookie))
            let byBearer = try await h.request(.GET, "/v1/session", bearer: token)
            #expect(byBearer["reason"] == "apple_credential_revoked")
            #expect(byBearer.header("Clear-Site-Data") == nil)
        }
    }

    @Test("the callback is exempt from the CSRF rule: Apple's post from its own origin works, even if a cookie comes along")
    func callbackExempt() async throws {
        try await OrchardHarness.withWebFlow { h, browser in
            let first = try await Self.webSession(h, browser)
            let start = try await browser.request(.GET, "/v1/auth/apple/authorize")
            var form = try await browser.visitApple(try #require(start.header("Location")))
            form.action = h.local(form.action)
            let posted = try await browser.postForm(form, from: "https://appleid.apple.com", cookies: true)
            #expect(posted.status == 303)
            #expect(browser.cookie() != first)
        }
    }

    @Test("unsafe requests to routes that do not use the session are not CSRF cases, cookie or not")
    func nonSessionRoutes() async throws {
        try await OrchardHarness.withWebFlow { h, browser in
            _ = try await Self.webSession(h, browser)
            let nonce = try await browser.request(.POST, "/v1/auth/apple/nonce", origin: "https://evil.example")
            #expect(nonce.status == 201)
        }
    }
}
