import Accounts
import AppleIDEmulator
import Foundation
import NIOHTTP1
import OrchardServer
import OrchardTesting
import Testing

@Suite("The hosted account page, GET /account, over HTTP")
struct AccountPageTests {
    static func html(_ response: TestResponse) -> String {
        String(decoding: response.body, as: UTF8.self)
    }

    @Test("signed out: an accessible HTML page with a 'Sign in with Apple' button starting the web flow, and no external assets")
    func signedOut() async throws {
        try await OrchardHarness.withWebFlow { h, browser in
            let page = try await browser.request(.GET, "/account")
            #expect(page.status == 200)
            #expect(page.header("Content-Type") == "text/html; charset=utf-8")
            #expect(page.header("Cache-Control") == "no-store")
            #expect(page.header("X-Frame-Options") == "DENY")
            let policy = try #require(page.header("Content-Security-Policy"))
            #expect(policy.contains("default-src 'none'"))
            #expect(policy.contains("connect-src 'self'"))
            #expect(policy.contains("form-action 'self' \(h.emulatorServer.baseURL)"))
            let html = Self.html(page)
            #expect(html.hasPrefix("<!DOCTYPE html>"))
            #expect(html.contains(#"<html lang="en">"#))
            #expect(html.contains(#"data-state="signed-out""#))
            #expect(html.contains(#"<form method="get" action="/v1/auth/apple/authorize">"#))
            #expect(html.contains(#"<button type="submit" id="sign-in" class="apple">Sign in with Apple</button>"#))
            #expect(html.contains(#"<section id="signed-in" aria-labelledby="signed-in-heading" hidden>"#))
            for external in [#"src="http"#, #"href="http"#, "@import", "url("] {
                #expect(!html.contains(external), "the page loads something external: \(external)")
            }
            let nonce = try #require(policy.split(separator: "'").first { $0.hasPrefix("nonce-") }).dropFirst("nonce-".count)
            #expect(html.contains(#"<script nonce="\#(nonce)">"#))
            #expect(html.contains("localStorage.clear()") && html.contains("sessionStorage.clear()"))
            #expect(page.header("Clear-Site-Data") == nil)
        }
    }

    @Test("signed in: the name, the email, email forwarding, Sign out, and Delete with a confirmation that Apple's authorization is revoked")
    func signedIn() async throws {
        try await OrchardHarness.withWebFlow { h, browser in
            _ = try await h.webSignIn(browser)
            let page = try await browser.request(.GET, "/account")
            #expect(page.status == 200)
            let html = Self.html(page)
            #expect(html.contains(#"data-state="signed-in""#))
            #expect(html.contains(#"<dd id="account-name">Jane Appleseed</dd>"#))
            #expect(html.contains("jane.appleseed@privaterelay.appleid.com"))
            #expect(html.contains("Hide My Email"))
            #expect(html.contains(#"data-forwarding="enabled">On: Apple forwards"#))
            #expect(html.contains(#"<button type="button" id="sign-out">Sign out</button>"#))
            #expect(html.contains(#"id="delete-account""#))
            #expect(html.contains(#"<dialog id="confirm-delete" aria-labelledby="confirm-delete-title" aria-describedby="confirm-delete-text">"#))
            #expect(html.contains("It also revokes this app's Sign in with Apple authorization at Apple"))
            #expect(html.contains(#"<section id="signed-out" aria-labelledby="signed-out-heading" hidden>"#))
            for outcome in ["\"revoked\"", "\"pending\"", "manual_revocation_url"] {
                #expect(html.contains(outcome), "the script does not handle \(outcome)")
            }
        }
    }

    @Test("what Apple shared is escaped: a name with markup shows as text")
    func escaped() async throws {
        try await OrchardHarness.withWebFlow { h, browser in
            let user = h.emulator.makeUser(email: "a&b@example.com", firstName: "<script>alert(1)</script>", lastName: "O'Hara")
            _ = try await h.webSignIn(browser, loginHint: user.sub)
            let html = Self.html(try await browser.request(.GET, "/account"))
            #expect(!html.contains("<script>alert(1)</script>"))
            #expect(html.contains("&lt;script&gt;alert(1)&lt;/script&gt; O&#39;Hara"))
            #expect(html.contains("a&amp;b@example.com"))
        }
    }

    @Test("email forwarding turned off by Apple shows as Off")
    func forwardingOff() async throws {
        try await OrchardHarness.withWebFlow { h, browser in
            _ = try await h.webSignIn(browser)
            h.emulator.setNotifyURL(h.baseURL + "/v1/apple/notifications")
            let status = try await h.emulator.sendNotification(
                type: "email-disabled",
                sub: AppleEmulator.webDemoUser.sub,
                clientID: OrchardHarness.webClientID,
                email: AppleEmulator.webDemoUser.email,
                isPrivateEmail: true
            )
            #expect(status == 200)
            let turnedOff = await eventually {
                let page = try? await browser.request(.GET, "/account")
                return page.map { Self.html($0).contains(#"data-forwarding="disabled">Off"#) } ?? false
            }
            #expect(turnedOff)
        }
    }

    @Test("?error= from a failed sign-in shows a notice: the cancellation in words, anything else as a sanitized code")
    func errorNotice() async throws {
        try await OrchardHarness.withWebFlow { h, browser in
            let cancelled = Self.html(try await browser.request(.GET, "/account?error=user_cancelled_authorize"))
            #expect(cancelled.contains("Signing in with Apple was cancelled."))
            #expect(cancelled.contains(#"data-state="signed-out""#))
            let odd = Self.html(try await browser.request(.GET, "/account?error=%3Cimg%20src%3Dx%3E"))
            #expect(!odd.contains("<img"))
            #expect(odd.contains("(authorization_failed)"))
        }
    }

    @Test("a session Apple revoked shows the signed-out state with the reason, and clears the site by cookie")
    func revokedSession() async throws {
        try await OrchardHarness.withWebFlow { h, browser in
            _ = try await h.webSignIn(browser)
            let cookie = try #require(browser.cookie())
            #expect(h.emulator.revokeGrant(sub: AppleEmulator.webDemoUser.sub) >= 1)
            h.clock.advance(by: RefreshValidationTests.pastDue)
            #expect(await eventually { (try? await h.accounts.session(token: cookie)) == nil })

            let page = try await browser.request(.GET, "/account")
            #expect(page.status == 200)
            let html = Self.html(page)
            #expect(html.contains(#"data-state="signed-out" data-reason="apple_credential_revoked""#))
            #expect(html.contains("revoked at Apple"))
            #expect(CookieSessionTests.clears(page))
            #expect(browser.cookie() == nil)

            let unknown = try await CookieSessionTests.withCookie(browser, .GET, "/account", cookie: "unknown")
            #expect(Self.html(unknown).contains(#"data-state="signed-out""#))
            #expect(unknown.header("Clear-Site-Data") == nil)
            #expect(unknown.header("Set-Cookie")?.contains("Max-Age=0") == true)
        }
    }

    @Test("without APPLE_REDIRECT_URI the page says web sign-in is not set up, and offers no button")
    func webFlowOff() async throws {
        try await OrchardHarness.with { h in
            let html = Self.html(try await h.request(.GET, "/account"))
            #expect(html.contains(#"id="web-flow-off""#))
            #expect(!html.contains(#"id="sign-in""#))
        }
    }
}
