import Foundation

/// What `/auth/authorize` answers: Apple's form post to the redirect URI, or an error page.
public struct WebAuthorizationAnswer: Sendable, Hashable {
    /// The HTTP status: 200 with a form post, 400 when the request cannot be honoured.
    public var status: Int
    /// Where the form posts (the redirect URI); `nil` for an error page.
    public var action: String?
    /// The form's fields, in order: `code`, `id_token`, `state`, `user` (first authorization only), or `error` and
    /// `state`.
    public var fields: [Field]
    /// Why the request was refused (an error page), in Apple's terms, e.g. `invalid_client`.
    public var refusal: String?
    /// The user who consented, if anyone did.
    public var user: EmulatedUser?

    /// One form field.
    public struct Field: Sendable, Hashable {
        /// Its name.
        public var name: String
        /// Its value.
        public var value: String
    }

    /// The value of the field `name`, if posted.
    public func field(_ name: String) -> String? {
        fields.first { $0.name == name }?.value
    }

    /// The answer as HTML: a form that submits itself as the page loads (with a button for browsers without
    /// script), or a short error page.
    public var html: String {
        guard let action else {
            return """
                <!DOCTYPE html>
                <html lang="en"><head><meta charset="utf-8"><title>Sign in with Apple (emulator)</title></head>
                <body><h1>Sign in with Apple (emulator)</h1><p id="error">\(Self.escape(refusal ?? "invalid_request"))</p></body></html>

                """
        }
        let inputs = fields.map { #"<input type="hidden" name="\#(Self.escape($0.name))" value="\#(Self.escape($0.value))">"# }
        return """
            <!DOCTYPE html>
            <html lang="en">
            <head><meta charset="utf-8"><title>Sign in with Apple (emulator)</title></head>
            <body>
            <p>The Apple emulator is returning to the app…</p>
            <form id="apple-form" method="post" action="\(Self.escape(action))">
            \(inputs.joined(separator: "\n"))
            <noscript><button type="submit">Continue</button></noscript>
            </form>
            <script>document.getElementById("apple-form").submit();</script>
            </body>
            </html>

            """
    }

    /// Escapes text for HTML content and attribute values.
    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;")
            .replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
            .replacingOccurrences(of: "\"", with: "&quot;")
            .replacingOccurrences(of: "'", with: "&#39;")
    }
}
