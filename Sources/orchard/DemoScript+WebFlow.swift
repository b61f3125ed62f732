import AppleIDEmulator
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

extension DemoScript {
    /// Jane signs in on the web as a browser would (no redirects followed, cookies carried by hand), then signs out.
    func webFlow() async throws {
        step(18, "Jane signs in on the web: a browser's steps, done here over HTTP (with --serve, click through them yourself)")
        let browser = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(redirectConfiguration: .disallow))
        do {
            try await webFlowSteps(browser)
            try await browser.shutdown()
        } catch {
            try? await browser.shutdown()
            throw error
        }
    }

    private func webFlowSteps(_ browser: HTTPClient) async throws {
        let start = try await send(browser, .GET, orchard + "/v1/auth/apple/authorize?return_to=/account", expect: 302)
        let authorizeURL = start.headers.first(name: "Location") ?? ""
        guard let components = URLComponents(string: authorizeURL) else { throw DemoError("no Location to Apple") }
        var query: [String: String] = [:]
        for item in components.queryItems ?? [] { query[item.name] = item.value }
        show("GET /v1/auth/apple/authorize -> 302 to \(components.scheme ?? "")://\(components.host ?? ""):\(components.port ?? 0)/auth/authorize")
        // The flow's binder: the browser keeps it and sends it back with Apple's post (SameSite=None), so that the
        // state works only in the browser that started the flow.
        let binder =
            start.headers["Set-Cookie"].first { $0.hasPrefix("__Host-orchard_web_state=") }?
            .split(separator: ";").first.map { String($0.dropFirst("__Host-orchard_web_state=".count)) } ?? ""
        show("  Set-Cookie: __Host-orchard_web_state=…; SameSite=None, Path=/ (binds the state to this browser)")
        show(
            "  client_id \(query["client_id"] ?? "?"), response_type \(query["response_type"] ?? "?"), response_mode \(query["response_mode"] ?? "?")"
        )

        let answer = emulator.answerWebAuthorization(WebAuthorizationRequest(query: query))
        guard let action = answer.action else { throw DemoError("the emulator refused: \(answer.refusal ?? "?")") }
        show("Apple (the emulator) consents for Jane Appleseed and answers with a form posting \(answer.fields.map(\.name).joined(separator: ", "))")

        var unreserved = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        unreserved.insert(charactersIn: "-._~")
        let body = answer.fields.map { field in
            "\(field.name)=\(field.value.addingPercentEncoding(withAllowedCharacters: unreserved) ?? "")"
        }.joined(separator: "&")
        let appleOrigin = "\(components.scheme ?? "http")://\(components.host ?? ""):\(components.port ?? 0)"
        let posted = try await send(
            browser,
            .POST,
            action,
            headers: [
                ("Content-Type", "application/x-www-form-urlencoded"), ("Origin", appleOrigin), ("Cookie", "__Host-orchard_web_state=\(binder)"),
            ],
            body: body,
            expect: 303
        )
        let setCookie = posted.headers["Set-Cookie"].first { $0.hasPrefix("__Host-orchard_session=") } ?? ""
        let token = setCookie.split(separator: ";").first.map { String($0.dropFirst("__Host-orchard_session=".count)) } ?? ""
        let attributes = setCookie.split(separator: ";").dropFirst().map { $0.trimmingCharacters(in: .whitespaces) }
        show("POST /v1/auth/apple/callback (cross-site: only the flow's cookie) -> 303 \(posted.headers.first(name: "Location") ?? "?")")
        show("  Set-Cookie: __Host-orchard_session=…; \(attributes.joined(separator: "; "))")

        let cookie = [("Cookie", "__Host-orchard_session=\(token)")]
        let page = try await send(browser, .GET, orchard + "/account", headers: cookie, expect: 200)
        let shows = page.body.contains("Jane Appleseed") ? "Jane Appleseed, her relay address, email forwarding on" : "?"
        show("GET /account with the cookie -> 200, the hosted account page: \(shows)")

        let foreign = try await send(browser, .DELETE, orchard + "/v1/session", headers: cookie + [("Origin", "https://evil.example")], expect: 403)
        show("DELETE /v1/session with the cookie from https://evil.example -> 403 \(foreign.code ?? "?"); Jane stays signed in")
        let signOut = try await send(browser, .DELETE, orchard + "/v1/session", headers: cookie + [("Origin", orchard)], expect: 204)
        show("DELETE /v1/session with the cookie from the page -> 204, Clear-Site-Data: \(signOut.headers.first(name: "Clear-Site-Data") ?? "-")")
    }

    private struct BrowserAnswer {
        var headers: HTTPHeaders
        var body: String
        var code: String? {
            ((try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any])?["code"] as? String
        }
    }

    private func send(
        _ browser: HTTPClient,
        _ method: HTTPMethod,
        _ url: String,
        headers: [(String, String)] = [],
        body: String? = nil,
        expect: Int
    ) async throws -> BrowserAnswer {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(string: body)) }
        let response = try await browser.execute(request, timeout: .seconds(30))
        let text = String(buffer: try await response.body.collect(upTo: 1 << 20))
        guard Int(response.status.code) == expect else {
            throw DemoError("\(method.rawValue) \(url) answered \(response.status.code), expected \(expect): \(text)")
        }
        return BrowserAnswer(headers: response.headers, body: text)
    }
}
