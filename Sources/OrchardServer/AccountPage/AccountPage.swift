public import Accounts
import Foundation

/// The hosted account page (`GET /account`) as HTML: plain markup, a little inline script, no external assets.
///
/// Both states are in the page: signed in (name, email, email forwarding, "Sign out", "Delete account" with a
/// confirmation) and signed out ("Sign in with Apple"); the script switches to the signed-out state after a sign-out
/// or a deletion, shows the outcome, and clears the page's local and session storage.
public struct AccountPage: Sendable {
    /// What the page says above the content.
    public enum Notice: Sendable, Equatable {
        /// The user cancelled at Apple (`?error=user_cancelled_authorize`).
        case signInCancelled
        /// Apple reported another failure (`?error=CODE`).
        case signInFailed(code: String)
        /// The session ended (it answered `session_revoked` with this reason).
        case sessionEnded(SessionEndReason)
    }

    /// The signed-in account, or `nil` for the signed-out state.
    public var account: AccountView?
    /// The account's live sessions, newest first (the asking one marked current).
    public var sessions: [DeviceSession] = []
    /// The account's latest history events, newest first ("Activity").
    public var activity: [HistoryEntry] = []
    /// The message to show, if any.
    public var notice: Notice?
    /// Whether `APPLE_REDIRECT_URI` is set (otherwise there is no "Sign in with Apple" button).
    public var webFlowEnabled: Bool
    /// The Content-Security-Policy nonce of the inline style and script.
    public var cspNonce: String

    /// The whole document.
    public func html() -> String {
        let state = account == nil ? "signed-out" : "signed-in"
        var main = #"<main id="page" data-state="\#(state)""#
        if let account { main += #" data-account-id="\#(Self.escape(account.id))""# }
        if case .sessionEnded(let reason) = notice { main += #" data-reason="\#(reason.rawValue)""# }
        main += ">"
        return """
            <!DOCTYPE html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <meta name="referrer" content="no-referrer">
            <link rel="icon" href="data:,">
            <title>\(account == nil ? "Sign in" : "Your account") · Orchard</title>
            <style nonce="\(cspNonce)">\(Self.stylesheet)</style>
            </head>
            <body>
            \(main)
            \(noticeMarkup())
            \(signedInMarkup())
            \(signedOutMarkup())
            </main>
            <script nonce="\(cspNonce)">\(Self.script)</script>
            </body>
            </html>

            """
    }

    private func noticeMarkup() -> String {
        guard let notice else { return #"<div id="notice" class="notice" role="status" aria-live="polite" hidden></div>"# }
        let kind = if case .sessionEnded = notice { "info" } else { "warning" }
        return #"<div id="notice" class="notice \#(kind)" role="status" aria-live="polite"><p>\#(Self.escape(Self.text(for: notice)))</p></div>"#
    }

    private func signedInMarkup() -> String {
        guard let account else { return #"<section id="signed-in" aria-labelledby="signed-in-heading" hidden></section>"# }
        let name = [account.name?.firstName, account.name?.lastName].compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: " ")
        let email = account.email.map { email in
            Self.escape(email) + (account.isPrivateEmail ? #" <span class="hint">(Hide My Email: a private relay address)</span>"# : "")
        }
        let forwarding =
            account.emailForwarding == .enabled
            ? "On: Apple forwards this app's email to your inbox"
            : "Off: Apple does not forward this app's email to you"
        let since = ISO8601DateFormatter.string(from: account.createdAt, timeZone: TimeZone(identifier: "UTC")!, formatOptions: [.withFullDate])
        return """
            <section id="signed-in" aria-labelledby="signed-in-heading">
            <h1 id="signed-in-heading">Your account</h1>
            <dl>
            <dt>Name</dt><dd id="account-name">\(name.isEmpty ? #"<span class="hint">Not shared with this app</span>"# : Self.escape(name))</dd>
            <dt>Email</dt><dd id="account-email">\(email ?? #"<span class="hint">Not shared with this app</span>"#)</dd>
            <dt>Email forwarding</dt><dd id="email-forwarding" data-forwarding="\(account.emailForwarding.rawValue)">\(forwarding) \
            <span class="hint" id="forwarding-where">To change it, or the address Apple forwards to, open Settings on \
            your iPhone or iPad, tap your name, then Sign in with Apple (on the web: account.apple.com, Sign-In and \
            Security, Sign in with Apple).</span></dd>
            <dt>Member since</dt><dd><time datetime="\(since)">\(since)</time></dd>
            </dl>
            \(sessionsMarkup())
            \(activityMarkup())
            <div class="actions">
            <button type="button" id="sign-out">Sign out</button>
            <button type="button" id="delete-account" class="danger" aria-haspopup="dialog">Delete account</button>
            </div>
            <dialog id="confirm-delete" aria-labelledby="confirm-delete-title" aria-describedby="confirm-delete-text">
            <h2 id="confirm-delete-title">Delete your account?</h2>
            <div id="confirm-delete-text">
            <p>This deletes your account and everything this service keeps about you, and signs you out on every device. \
            It cannot be undone.</p>
            <p>It also revokes this app's Sign in with Apple authorization at Apple, as "Stop using Sign in with Apple" in \
            your Apple ID settings would: if you sign in with Apple again later, you start over as a new user.</p>
            </div>
            <div class="actions">
            <button type="button" id="confirm-delete-button" class="danger">Delete my account</button>
            <button type="button" id="cancel-delete-button" autofocus>Cancel</button>
            </div>
            </dialog>
            </section>
            """
    }

    /// Where the user is signed in: each session with its label, when it began and was last seen, and "Sign out".
    private func sessionsMarkup() -> String {
        let rows = sessions.map { session in
            let label = session.device.map(Self.escape) ?? "Unnamed device"
            var details = session.current ? "This device · " : ""
            details += "signed in \(Self.minute(session.createdAt))"
            if let seen = session.lastSeenAt { details += " · last active \(Self.minute(seen))" }
            let id = Self.escape(session.id)
            let current = session.current ? #" data-current="true""# : ""
            return #"<li data-session-id="\#(id)"\#(current)><span class="device">\#(label)</span> "#
                + #"<span class="hint">\#(details)</span> "#
                + #"<button type="button" class="end-session" data-session-id="\#(id)">Sign out</button></li>"#
        }
        let others = sessions.contains { !$0.current }
        return """
            <h2 id="sessions-heading">Where you are signed in</h2>
            <ul id="sessions" aria-labelledby="sessions-heading">
            \(rows.joined(separator: "\n"))
            </ul>
            <div class="actions"><button type="button" id="sign-out-others"\(others ? "" : " hidden")>Sign out of all other devices</button></div>
            """
    }

    /// The latest events of the account's history, in words a user understands.
    private func activityMarkup() -> String {
        let rows = activity.map { event in
            var line = Self.escape(Self.words(for: event))
            if let device = event.device { line += #" <span class="device">\#(Self.escape(device))</span>"# }
            return #"<li data-event-type="\#(event.kind.rawValue)"><span class="hint">\#(Self.minute(event.occurredAt))</span> \#(line)</li>"#
        }
        return """
            <h2 id="activity-heading">Activity</h2>
            <ul id="activity" aria-labelledby="activity-heading">
            \(rows.isEmpty ? #"<li class="hint">Nothing yet.</li>"# : rows.joined(separator: "\n"))
            </ul>
            """
    }

    /// What an event says to the user.
    static func words(for event: HistoryEntry) -> String {
        switch (event.kind, event.reason) {
        case (.signedIn, _): event.device == nil ? "Signed in" : "Signed in on"
        case (.signedOut, "other_device"): "Signed out on another device"
        case (.signedOut, "expired"): "Your session expired: signed out"
        case (.signedOut, _): "Signed out"
        case (.appleValidation, "invalid_grant"): "Apple no longer accepts your sign-in with this app"
        case (.appleValidation, _): "Apple confirmed your sign-in is still valid"
        case (.credentialRevoked, "consent_revoked"): "Apple reported that you stopped using Sign in with Apple with this app: signed out everywhere"
        case (.credentialRevoked, _): "Apple ended your sign-in with this app: signed out everywhere"
        case (.emailForwardingChanged, "disabled"): "Email forwarding turned off at Apple"
        case (.emailForwardingChanged, _): "Email forwarding turned on at Apple"
        case (.transferred, _): "This app moved to a new developer; your account came with it"
        case (.imported, _): "Your account was brought over from the app's previous sign-in system"
        }
    }

    /// An instant to the minute, in UTC: "2026-11-27 09:41 UTC".
    static func minute(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm 'UTC'"
        return formatter.string(from: date)
    }

    private func signedOutMarkup() -> String {
        let hidden = account == nil ? "" : " hidden"
        let signIn =
            webFlowEnabled
            ? """
            <form method="get" action="/v1/auth/apple/authorize">
            <input type="hidden" name="return_to" value="/account">
            <button type="submit" id="sign-in" class="apple">Sign in with Apple</button>
            </form>
            """
            : #"<p id="web-flow-off">Signing in on the web is not set up on this server (APPLE_REDIRECT_URI).</p>"#
        return """
            <section id="signed-out" aria-labelledby="signed-out-heading"\(hidden)>
            <h1 id="signed-out-heading">Sign in</h1>
            <p>Sign in to see and manage your account.</p>
            \(signIn)
            </section>
            """
    }

    /// The sentence shown for a notice.
    static func text(for notice: Notice) -> String {
        switch notice {
        case .signInCancelled:
            "Signing in with Apple was cancelled."
        case .signInFailed(let code):
            "Signing in with Apple did not complete (\(code)). Please try again."
        case .sessionEnded(.signedOut):
            "You are signed out."
        case .sessionEnded(.appleCredentialRevoked):
            "You were signed out because this app's Sign in with Apple authorization was revoked at Apple (for example in your Apple ID settings)."
        case .sessionEnded(.accountDeleted):
            "You were signed out because your account was deleted."
        }
    }

    /// Escapes text for HTML content and attribute values.
    static func escape(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}
