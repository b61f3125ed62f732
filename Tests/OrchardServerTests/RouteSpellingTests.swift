import AppleIDEmulator
import Foundation
import NIOHTTP1
import OrchardServer
import OrchardTesting
import Testing

/// A route's policy follows the matched route, however the request spells its path: Hummingbird's router skips empty
/// segments, so `//v1/auth/apple/nonce` reaches the nonce route, and must reach its rate limit too.
@Suite("Route policies whatever the path's spelling")
struct RouteSpellingTests {
    /// Spellings of `path` that a client (or a proxy that forwards the path as sent) may use.
    static func spellings(_ path: String) -> [String] {
        let inner = path.dropFirst()
        return [
            path, "/" + path, "/" + inner.replacingOccurrences(of: "/", with: "//"), path + "/", "/./" + inner,
            "/" + inner.replacingOccurrences(of: "/", with: "/./"), "/v1/../" + inner, "///" + inner + "//",
        ]
    }

    /// Sends every spelling of each route to `port` with a cookie from a foreign Origin: each answer is 403
    /// `csrf_rejected` (the spelling reached the route) or 404 (it did not), never clears the site; returns the 403s.
    static func foreignOriginRefusals(port: Int, _ routes: [(String, String)], headers: [(String, String)]) async throws -> Int {
        var refused = 0
        for (method, path) in routes {
            for spelling in spellings(path) {
                let answer = try await RawHTTP.send(port: port, method, spelling, headers: headers)
                #expect([403, 404].contains(answer.status), "\(method) \(spelling) answered \(answer.status)")
                if answer.status == 403 {
                    #expect(answer.code == "csrf_rejected")
                    refused += 1
                }
                #expect(answer.header("Clear-Site-Data") == nil)
            }
        }
        return refused
    }

    @Test("past the budget, no spelling of a rate-limited route succeeds or stores a row")
    func rateLimitWhateverTheSpelling() async throws {
        try await OrchardHarness.withWebFlow(configure: Self.limitOfTwo) { h, _ in
            let port = h.server.port
            for _ in 0..<2 { #expect(try await RawHTTP.send(port: port, "POST", "/v1/auth/apple/nonce").status == 201) }
            let routes = [
                ("POST", "/v1/auth/apple/nonce"), ("POST", "/v1/auth/apple"), ("GET", "/v1/auth/apple/authorize"),
                ("POST", "/v1/auth/apple/callback"),
            ]
            var limited = 0
            for (method, path) in routes {
                for spelling in Self.spellings(path) {
                    let target = method == "GET" ? spelling + "?return_to=/account" : spelling
                    let answer = try await RawHTTP.send(port: port, method, target)
                    #expect([404, 429].contains(answer.status), "\(method) \(target) answered \(answer.status)")
                    if answer.status == 429 { limited += 1 }
                }
            }
            // The empty-segment spellings reach their route and its limit; the dot segments are unknown paths.
            #expect(limited >= routes.count * 4)
            #expect(try await h.rowCount("nonces") == 2, "nothing stored past the budget")
            #expect(try await h.rowCount("web_flow_states") == 0)
        }
    }

    @Sendable static func limitOfTwo(_ configuration: inout OrchardConfiguration) {
        configuration.listener.rateLimitPerMinute = 2
    }

    @Test("a cookie-authenticated DELETE from a foreign Origin is refused, and a same-site one clears the site, whatever the spelling")
    func cookieRulesWhateverTheSpelling() async throws {
        try await OrchardHarness.withWebFlow { h, browser in
            let cookie = try await CookieSessionTests.webSession(h, browser)
            let port = h.server.port
            let headers = [("Cookie", "__Host-orchard_session=\(cookie)"), ("Origin", "https://evil.example")]
            let routes = [("DELETE", "/v1/account"), ("DELETE", "/v1/session"), ("DELETE", "/v1/sessions"), ("POST", "/v1/session/token")]
            let refused = try await Self.foreignOriginRefusals(port: port, routes, headers: headers)
            // The spellings that reach a route (the extra slashes; dot segments are 404) meet the Origin check there.
            #expect(refused >= routes.count * 4, "only \(refused) spellings met the Origin check")
            #expect(try await h.rowCount("accounts") == 1, "the account is intact")
            #expect(try await browser.request(.GET, "/v1/session").status == 200, "the session is intact")

            let same = [("Cookie", "__Host-orchard_session=\(cookie)"), ("Origin", OrchardHarness.webSiteOrigin)]
            let signOut = try await RawHTTP.send(port: port, "DELETE", "//v1//session/", headers: same)
            #expect(signOut.status == 204)
            #expect(signOut.header("Clear-Site-Data") == CookieSessionTests.clearSiteData)
        }
    }

    @Test("a known path with the wrong method is 405 whatever the spelling")
    func methodNotAllowedWhateverTheSpelling() async throws {
        try await OrchardHarness.with { h in
            let answer = try await RawHTTP.send(port: h.server.port, "DELETE", "//v1//auth/apple/nonce/")
            #expect(answer.status == 405)
            #expect(answer.header("Allow") == "POST")
        }
    }

    @Test("GET /v1/account/events: every spelling that reaches the route asks for a session and shows only its own account's events")
    func historyWhateverTheSpelling() async throws {
        try await OrchardHarness.with { h in
            let token = try await h.signUp(h.emulator.makeUser())
            _ = try await h.signUp(h.emulator.makeUser())
            let port = h.server.port
            var reached = 0
            for spelling in Self.spellings("/v1/account/events") {
                let anonymous = try await RawHTTP.send(port: port, "GET", spelling)
                #expect([401, 404].contains(anonymous.status), "GET \(spelling) answered \(anonymous.status) without a session")
                let answer = try await RawHTTP.send(port: port, "GET", spelling + "?limit=5", headers: [("Authorization", "Bearer \(token)")])
                #expect([200, 404].contains(answer.status), "GET \(spelling) answered \(answer.status)")
                guard answer.status == 200 else { continue }
                reached += 1
                #expect(answer.text.components(separatedBy: "\"signed_in\"").count == 2, "one event, the caller's own sign-in")
            }
            #expect(reached >= 4, "the empty-segment spellings reach the route")
        }
    }

    @Test(
        "every operator route, however spelled: without a credential 401 (never an answer), a console cookie from a foreign Origin 403 and on record, and 404 on the public listener"
    )
    func operatorRoutesWhateverTheSpelling() async throws {
        try await OperatorTests.withAdmin { admin in
            let user = try await admin.h.signUp(admin.h.emulator.makeUser())
            let id = try await OperatorTests.accountID(admin, session: user)
            let adminPort = try #require(URL(string: admin.base)?.port)
            let routes = [
                ("GET", "/admin/v1/accounts?q=\(id)"), ("GET", "/admin/v1/accounts/\(id)"), ("DELETE", "/admin/v1/accounts/\(id)/sessions"),
                ("DELETE", "/admin/v1/accounts/\(id)"), ("GET", "/admin/v1/revocations"), ("GET", "/admin/v1/webhooks"),
                ("POST", "/admin/v1/webhooks/whd_x/retry"), ("GET", "/admin/v1/notifications"), ("GET", "/admin/v1/delivery"),
                ("GET", "/admin/v1/audit"), ("POST", "/admin/search"), ("POST", "/admin/accounts/\(id)/end-sessions"),
                ("POST", "/admin/accounts/\(id)/delete"), ("POST", "/admin/revocations/rev_x/retry"), ("GET", "/admin/audit"),
            ]
            var refused = 0
            for (method, path) in routes {
                for spelling in Self.spellings(path) {
                    let answer = try await RawHTTP.send(port: adminPort, method, spelling)
                    // The console's pages send a browser to the sign-in form; the API answers 401; dot segments are 404.
                    #expect([303, 401, 404].contains(answer.status), "\(method) \(spelling) answered \(answer.status)")
                    if answer.status == 303 { #expect(answer.header("Location") == "/admin") }
                    if answer.status == 401 {
                        #expect(answer.code == "operator_unauthorized")
                        refused += 1
                    }
                    let outside = try await RawHTTP.send(
                        port: admin.h.server.port,
                        method,
                        spelling,
                        headers: [("Authorization", "Bearer \(admin.token)")]
                    )
                    #expect(outside.status == 404, "the public listener answered \(method) \(spelling) \(outside.status)")
                }
            }
            #expect(refused >= 10 * 4, "only \(refused) spellings met the operator check")

            // A console cookie from another site changes nothing, whatever the spelling, and each try is on record.
            let form = [("Content-Type", "application/x-www-form-urlencoded")]
            let encoded = try #require(admin.token.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
            let login = try await admin.request(.POST, "/admin/login", bearer: .some(nil), headers: form, body: Data("token=\(encoded)".utf8))
            let cookie = try #require(login.headers(named: "Set-Cookie").first { $0.hasPrefix(OperatorCookie.name + "=") }?.prefix { $0 != ";" })
            let foreign = [("Cookie", String(cookie)), ("Origin", "https://evil.example")]
            let forbidden = try await Self.foreignOriginRefusals(port: adminPort, routes.filter { $0.0 != "GET" }, headers: foreign)
            #expect(forbidden >= 7 * 4, "only \(forbidden) spellings met the Origin check")
            #expect(try await admin.h.rowCount("accounts") == 1, "the account is intact")
            #expect(try await admin.h.request(.GET, "/v1/session", bearer: user).status == 200, "its session is intact")
            #expect(try await admin.h.rowCount("operator_audit WHERE status = 403") == forbidden)
        }
    }
}
