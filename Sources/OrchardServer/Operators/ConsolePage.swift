import Accounts
import Foundation

/// The operator console's pages, rendered on the server: no script at all, one inline style by nonce, every value a
/// user controls (a name, a device label, an email) escaped, every destructive action behind a confirmation page.
struct ConsolePage {
    /// The page's `<title>` and heading.
    var title: String
    /// The body's markup (already escaped where it holds values).
    var body: String
    /// The signed-in operator; `nil` on the sign-in form.
    var operatorName: String?
    /// A one-line message at the top (fixed text, escaped).
    var notice: String?

    /// The whole document.
    func html(nonce: String) -> String {
        let nav =
            operatorName.map { name in
                """
                <nav aria-label="Console">
                <a href="/admin">Search</a> <a href="/admin/revocations">Revocations</a> <a href="/admin/webhooks">Webhooks</a>
                <a href="/admin/delivery">Delivery</a> <a href="/admin/notifications">Notifications</a> <a href="/admin/audit">Audit log</a>
                <form method="post" action="/admin/logout" class="inline"><button type="submit" id="sign-out">Sign out \(Self.escape(name))</button></form>
                </nav>
                """
            } ?? ""
        let notice = notice.map { #"<p class="notice" role="status" id="notice">\#(Self.escape($0))</p>"# } ?? ""
        return """
            <!doctype html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <meta name="referrer" content="same-origin">
            <title>\(Self.escape(title)) · Orchard operators</title>
            <style nonce="\(nonce)">\(Self.stylesheet)</style>
            </head>
            <body>
            \(nav)
            <main>
            <h1>\(Self.escape(title))</h1>
            \(notice)
            \(body)
            </main>
            </body>
            </html>
            """
    }

    static let stylesheet = """
        :root { color-scheme: light dark; font-family: -apple-system, BlinkMacSystemFont, "Segoe UI", Roboto, sans-serif; }
        body { margin: 0; padding: 1rem; line-height: 1.5; }
        main { max-width: 60rem; margin: 0 auto; }
        nav { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: center; max-width: 60rem; margin: 0 auto 1rem;
              padding-bottom: .5rem; border-bottom: 1px solid rgba(128, 128, 128, .4); }
        h1 { font-size: 1.5rem; margin: .5rem 0 1rem; }
        h2 { font-size: 1.15rem; margin: 1.5rem 0 .5rem; }
        dl { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; }
        dt { font-weight: 600; }
        dd { margin: 0; overflow-wrap: anywhere; }
        .table { overflow-x: auto; }
        table { border-collapse: collapse; width: 100%; font-size: .95rem; }
        th, td { text-align: left; padding: .35rem .5rem; border-bottom: 1px solid rgba(128, 128, 128, .3); vertical-align: top;
                 overflow-wrap: anywhere; }
        input[type=text], input[type=password], input[type=search] { font: inherit; padding: .5rem; width: min(100%, 28rem);
                 box-sizing: border-box; }
        button { font: inherit; padding: .45rem 1rem; border-radius: .4rem; border: 1px solid currentColor; cursor: pointer;
                 background: Canvas; color: CanvasText; }
        button:focus-visible, a:focus-visible, input:focus-visible { outline: 3px solid #0a66d8; outline-offset: 2px; }
        button.danger { background: #b3261e; border-color: #b3261e; color: #fff; }
        form.inline { display: inline; }
        .actions { display: flex; flex-wrap: wrap; gap: .75rem; margin: 1rem 0; }
        .notice { border-left: 4px solid #0a66d8; padding: .25rem 1rem; background: rgba(10, 102, 216, .08); }
        .hint { color: GrayText; }
        """

    /// Escapes text for HTML content and attribute values.
    static func escape(_ text: String) -> String {
        AccountPage.escape(text)
    }

    /// An instant to the minute, in UTC.
    static func time(_ date: Date?) -> String {
        date.map(AccountPage.minute) ?? "—"
    }

    /// A table with a header row; cells are escaped unless given as ``Cell/markup(_:)``.
    static func table(id: String, headers: [String], rows: [[Cell]], empty: String) -> String {
        guard !rows.isEmpty else { return #"<p class="hint" id="\#(id)-empty">\#(escape(empty))</p>"# }
        let head = headers.map { "<th scope=\"col\">\(escape($0))</th>" }.joined()
        let body = rows.map { row in "<tr>" + row.map { "<td>\($0.html)</td>" }.joined() + "</tr>" }.joined(separator: "\n")
        return """
            <div class="table"><table id="\(id)"><thead><tr>\(head)</tr></thead>
            <tbody>
            \(body)
            </tbody></table></div>
            """
    }

    /// A table cell.
    enum Cell {
        case text(String)
        case markup(String)

        var html: String {
            switch self {
            case .text(let text): ConsolePage.escape(text)
            case .markup(let markup): markup
            }
        }
    }

    /// A link to an account's page.
    static func accountLink(_ id: String?) -> Cell {
        guard let id else { return .text("—") }
        guard let path = id.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/"))) else {
            return .text(id)
        }
        return .markup(#"<a href="/admin/accounts/\#(escape(path))">\#(escape(id))</a>"#)
    }

    /// The path of an account's page (its id percent-encoded).
    static func accountPath(_ id: String) -> String {
        "/admin/accounts/" + (id.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/"))) ?? id)
    }
}
