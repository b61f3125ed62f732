public import AsyncHTTPClient
import Foundation
import NIOCore
public import NIOHTTP1
import Synchronization

/// A browser's part in the web flow, over plain HTTP, for tests: it follows no redirect by itself, keeps the cookies
/// one site (Orchard) sets, and sends them only where a browser would.
///
/// Orchard's session cookie is `SameSite=Lax`, so a browser sends it with Orchard's own requests and top-level `GET`
/// navigations, but not with the cross-site form post from Apple's page: ``postForm(_:from:)`` sends only the
/// `SameSite=None` flow cookie (`__Host-orchard_web_state`, `Path=/`), as a browser would
/// (``postForm(_:from:cookies:)`` can force the others, to show that the callback does not need them).
public final class WebFlowBrowser: Sendable {
    /// A form an HTML page posts by itself: where, and its hidden fields.
    public struct Form: Sendable {
        /// The `action` URL.
        public var action: String
        /// The fields, in order.
        public var fields: [(name: String, value: String)]

        /// Creates a form.
        public init(action: String, fields: [(name: String, value: String)]) {
            self.action = action
            self.fields = fields
        }

        /// The value of field `name`.
        public func field(_ name: String) -> String? {
            fields.first { $0.name == name }?.value
        }

        /// Replaces (or adds) field `name`.
        public mutating func set(_ name: String, _ value: String?) {
            fields.removeAll { $0.name == name }
            if let value { fields.append((name, value)) }
        }

        /// The `application/x-www-form-urlencoded` body, as a browser encodes it.
        public var encoded: String {
            fields.map { "\(WebFlowBrowser.formEncode($0.name))=\(WebFlowBrowser.formEncode($0.value))" }.joined(separator: "&")
        }
    }

    /// Orchard's base URL (its cookies are kept).
    public let orchard: String
    /// The client, with redirects off.
    public let http: HTTPClient
    private let jar = Mutex<[String: StoredCookie]>([:])

    /// A cookie as the browser keeps it: its value, its `Path` and whether it is `SameSite=None` (sent cross-site).
    private struct StoredCookie {
        var value: String
        var path: String
        var crossSite: Bool
    }

    private init(orchard: String) {
        self.orchard = orchard
        self.http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(redirectConfiguration: .disallow))
    }

    /// Runs `body` with a fresh browser (an empty cookie jar), then closes it.
    public static func with<T: Sendable>(orchard: String, _ body: (WebFlowBrowser) async throws -> T) async throws -> T {
        let browser = WebFlowBrowser(orchard: orchard)
        do {
            let result = try await body(browser)
            try await browser.http.shutdown()
            return result
        } catch {
            try? await browser.http.shutdown()
            throw error
        }
    }

    /// The value of Orchard's cookie `name`, if the browser holds it.
    public func cookie(_ name: String = "__Host-orchard_session") -> String? {
        jar.withLock { $0[name]?.value }
    }

    /// Drops every cookie.
    public func clearCookies() {
        jar.withLock { $0.removeAll() }
    }

    /// Sends a request as the browser: to Orchard with its cookies whose `Path` covers it (with `cookies` false, as a
    /// cross-site request: only its `SameSite=None` ones), elsewhere without.
    ///
    /// - Parameters:
    ///   - path: A path on Orchard, or an absolute URL.
    ///   - origin: The `Origin` header, if the browser would send one (it does on `POST`, `PUT`, `PATCH`, `DELETE`).
    public func request(
        _ method: HTTPMethod,
        _ path: String,
        origin: String? = nil,
        headers: [(String, String)] = [],
        body: String? = nil,
        cookies: Bool = true
    ) async throws -> TestResponse {
        let url = path.hasPrefix("http") ? path : orchard + path
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let origin { request.headers.add(name: "Origin", value: origin) }
        if url.hasPrefix(orchard) {
            // A same-site request carries every cookie whose Path covers it; a cross-site one only `SameSite=None` ones.
            let path = String(url.dropFirst(orchard.count).prefix { $0 != "?" })
            let header = jar.withLock { jar in
                jar.filter { _, cookie in
                    (cookies || cookie.crossSite)
                        && (path == cookie.path || path.hasPrefix(cookie.path.hasSuffix("/") ? cookie.path : cookie.path + "/"))
                }
                .sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value.value)" }.joined(separator: "; ")
            }
            if !header.isEmpty { request.headers.add(name: "Cookie", value: header) }
        }
        if let body { request.body = .bytes(ByteBuffer(string: body)) }
        let response = try await http.execute(request, timeout: .seconds(30))
        let bytes = try await response.body.collect(upTo: 16 * 1024 * 1024)
        if url.hasPrefix(orchard) {
            for value in response.headers["Set-Cookie"] { store(setCookie: value) }
        }
        return TestResponse(
            status: Int(response.status.code),
            headers: response.headers.map { ($0.name, $0.value) },
            body: Data(bytes.readableBytesView)
        )
    }

    /// Follows Orchard's `302` to Apple and loads Apple's page: the form it would submit by itself.
    ///
    /// - Parameter extraQuery: Query items added to Apple's URL (the emulator's `login_hint`, `emulator_error`, …).
    public func visitApple(_ authorizeURL: String, extraQuery: [String: String] = [:]) async throws -> Form {
        var url = authorizeURL
        for (name, value) in extraQuery.sorted(by: { $0.key < $1.key }) {
            url += (url.contains("?") ? "&" : "?") + "\(Self.formEncode(name))=\(Self.formEncode(value))"
        }
        let page = try await request(.GET, url)
        guard page.status == 200, let form = Self.autoSubmittedForm(String(decoding: page.body, as: UTF8.self)) else {
            throw HarnessError("Apple's page answered \(page.status) without a form: \(String(decoding: page.body, as: UTF8.self))")
        }
        return form
    }

    /// Posts Apple's form cross-site, as the browser does: `Origin` is Apple's, and only `SameSite=None` cookies go with it.
    public func postForm(_ form: Form, from appleOrigin: String) async throws -> TestResponse {
        try await postForm(form, from: appleOrigin, cookies: false)
    }

    /// Posts a form, with all of Orchard's cookies (`cookies`) or, cross-site, only its `SameSite=None` ones.
    public func postForm(_ form: Form, from origin: String, cookies: Bool) async throws -> TestResponse {
        try await request(
            .POST,
            form.action,
            origin: origin,
            headers: [("Content-Type", "application/x-www-form-urlencoded")],
            body: form.encoded,
            cookies: cookies
        )
    }

    private func store(setCookie: String) {
        let parts = setCookie.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        guard let pair = parts.first, let equals = pair.firstIndex(of: "=") else { return }
        let name = String(pair[..<equals])
        let value = String(pair[pair.index(after: equals)...])
        let attributes = parts.dropFirst().map { $0.lowercased() }
        let expired = attributes.contains("max-age=0")
        let path = parts.dropFirst().first { $0.lowercased().hasPrefix("path=") }.map { String($0.dropFirst(5)) } ?? "/"
        let cookie = StoredCookie(value: value, path: path, crossSite: attributes.contains("samesite=none"))
        jar.withLock { $0[name] = expired || value.isEmpty ? nil : cookie }
    }

    /// The first `<form method="post">` of an HTML page with its hidden inputs, entities decoded.
    public static func autoSubmittedForm(_ html: String) -> Form? {
        guard let formTag = firstMatch(#"<form[^>]*action="([^"]*)""#, in: html)?.first else { return nil }
        let inputs = matches(#"<input type="hidden" name="([^"]*)" value="([^"]*)">"#, in: html)
        return Form(action: unescape(formTag), fields: inputs.map { (unescape($0[0]), unescape($0[1])) })
    }

    /// Percent-encodes all but RFC 3986's unreserved characters, as a browser encodes a form.
    public static func formEncode(_ value: String) -> String {
        var unreserved = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        unreserved.insert(charactersIn: "-._~")
        return value.addingPercentEncoding(withAllowedCharacters: unreserved) ?? value
    }

    private static func unescape(_ text: String) -> String {
        text.replacingOccurrences(of: "&quot;", with: "\"")
            .replacingOccurrences(of: "&#39;", with: "'")
            .replacingOccurrences(of: "&lt;", with: "<")
            .replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&amp;", with: "&")
    }

    private static func firstMatch(_ pattern: String, in text: String) -> [String]? {
        matches(pattern, in: text).first
    }

    private static func matches(_ pattern: String, in text: String) -> [[String]] {
        guard let regex = try? NSRegularExpression(pattern: pattern) else { return [] }
        let range = NSRange(text.startIndex..., in: text)
        return regex.matches(in: text, range: range).map { match in
            (1..<match.numberOfRanges).map { index in
                Range(match.range(at: index), in: text).map { String(text[$0]) } ?? ""
            }
        }
    }
}
