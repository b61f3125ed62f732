import Accounts
import AppleID
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// The operator console, `/admin…`: server-rendered pages over the same operations as the operator API.
struct ConsoleController {
    typealias Context = OrchardRequestContext

    let desk: OperatorDesk
    let accounts: AccountDesk
    let operators: Operators
    let teams: [AppleTeam]
    let clock: any WallClock
    let random: any RandomSource
    /// `http` or `https`: the listener's scheme, for the login's `Origin` check.
    let scheme: String

    /// Adds the routes: the sign-in form and the front page to `front` (it lets an anonymous request through), the
    /// login to `login` (rate-limited), the rest to `pages` (a console login required).
    func addRoutes(front: RouterGroup<Context>, login: RouterGroup<Context>, pages: RouterGroup<Context>, table: RouteTable) {
        func add(
            _ group: RouterGroup<Context>,
            _ method: HTTPRequest.Method,
            _ path: String,
            _ handler: @escaping @Sendable (Request, Context) async throws -> Response
        ) {
            group.on(RouterPath(OperatorRoutes.routerPath(path)), method: method, use: handler)
            table.add(method, path)
        }
        add(front, .get, "/admin", frontPage)
        add(login, .post, "/admin/login", logIn)
        add(pages, .post, "/admin/logout", logOut)
        add(pages, .post, "/admin/search", search)
        add(pages, .get, "/admin/accounts/{id}", accountPage)
        add(pages, .get, "/admin/accounts/{id}/end-sessions", confirmEndSessions)
        add(pages, .post, "/admin/accounts/{id}/end-sessions", endSessions)
        add(pages, .get, "/admin/accounts/{id}/delete", confirmDelete)
        add(pages, .post, "/admin/accounts/{id}/delete", delete)
        add(pages, .get, "/admin/revocations", revocationsPage)
        add(pages, .post, "/admin/revocations/{id}/retry", retryRevocation)
        add(pages, .get, "/admin/webhooks", webhooksPage)
        add(pages, .post, "/admin/webhooks/{id}/retry", retryWebhook)
        add(pages, .get, "/admin/delivery", deliveryPage)
        add(pages, .get, "/admin/notifications", notificationsPage)
        add(pages, .get, "/admin/audit", auditPage)
    }

    // MARK: Signing in

    @Sendable func frontPage(_ request: Request, context: Context) async throws -> Response {
        guard let name = context.operatorName else { return signInPage(status: .ok, notice: nil) }
        let body = """
            <form method="post" action="/admin/search" role="search">
            <label for="q">Account id, email or Apple <code>sub</code></label><br>
            <input type="search" id="q" name="q" required maxlength="320" autocomplete="off" spellcheck="false">
            <button type="submit" id="search">Find</button>
            </form>
            <p class="hint">An email is matched whatever its letter case. What you search for is neither logged nor audited.</p>
            """
        return page(ConsolePage(title: "Find a user", body: body, operatorName: name, notice: nil))
    }

    private func signInPage(status: HTTPResponse.Status, notice: String?) -> Response {
        let body = """
            <form method="post" action="/admin/login">
            <label for="token">Operator token</label><br>
            <input type="password" id="token" name="token" required autocomplete="current-password">
            <button type="submit" id="sign-in">Sign in</button>
            </form>
            <p class="hint">A token is made with <code>orchard operators add NAME</code>.</p>
            """
        return page(ConsolePage(title: "Operators' console", body: body, operatorName: nil, notice: notice), status: status)
    }

    struct LoginBody: Decodable {
        var token: String
    }

    struct LoginResponse: Encodable {
        var `operator`: String
        var expiresAt: String

        enum CodingKeys: String, CodingKey {
            case `operator`
            case expiresAt = "expires_at"
        }
    }

    /// `POST /admin/login`: a form (`token=…`, answered with a redirect to the console) or JSON (`{"token"}`,
    /// answered `200 {"operator", "expires_at"}`); both set the cookie. A wrong token is `401 operator_unauthorized`.
    @Sendable func logIn(_ request: Request, context: Context) async throws -> Response {
        // A page of another site must not sign the browser in as the attacker's operator (login CSRF). A script's
        // login (no browser, no `Origin`) is welcome.
        if request.headers[HTTPField.Name("Origin")!] != nil, !OperatorMiddleware.isSameOrigin(request, scheme: scheme) {
            throw OrchardProblem.csrfRejected
        }
        let isJSON = request.headers[.contentType]?.lowercased().hasPrefix("application/json") == true
        let token: String?
        if isJSON {
            let body = try await request.body.collect(upTo: OrchardProblem.maxBodySize)
            token = try? JSONDecoder().decode(LoginBody.self, from: Data(String(buffer: body).utf8)).token
        } else {
            token = try await FormFields.read(request)["token"]
        }
        guard let token, let login = try await operators.logIn(token: token) else {
            context.logger.debug("refused a console login")
            if isJSON { throw OrchardProblem.operatorUnauthorized }
            return signInPage(status: .unauthorized, notice: "That is not an operator's token.")
        }
        let status: HTTPResponse.Status = isJSON ? .ok : .seeOther
        try await operators.record(operatorName: login.name, method: "POST", route: "/admin/login", accountID: nil, status: status.code)
        var headers: HTTPFields = [.cacheControl: "no-store"]
        headers.append(HTTPField(name: .setCookie, value: OperatorCookie.setCookie(login: login.login, expiresAt: login.expiresAt, now: clock.now())))
        guard isJSON else {
            headers[.location] = "/admin"
            return Response(status: .seeOther, headers: headers)
        }
        headers[.contentType] = "application/json"
        let body = try JSONEncoder().encode(LoginResponse(operator: login.name, expiresAt: RFC3339.string(login.expiresAt)))
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// `POST /admin/logout`: ends the console login (a bearer token has none to end).
    @Sendable func logOut(_ request: Request, context: Context) async throws -> Response {
        if let login = request.cookies[OperatorCookie.name]?.value { try await operators.logOut(login: login) }
        var headers: HTTPFields = [.location: "/admin", .cacheControl: "no-store"]
        headers.append(HTTPField(name: .setCookie, value: OperatorCookie.expiredCookie))
        return Response(status: .seeOther, headers: headers)
    }

    // MARK: Accounts

    @Sendable func search(_ request: Request, context: Context) async throws -> Response {
        let query = try await FormFields.read(request)["q"] ?? ""
        let found: [AccountView]
        do {
            found = try await desk.search(query)
        } catch {
            guard error.code == .invalidRequest else { throw error }
            return page(
                ConsolePage(
                    title: "Find a user",
                    body: "",
                    operatorName: context.operatorName,
                    notice: "Enter an account id, an email or an Apple sub."
                ),
                status: .badRequest
            )
        }
        let rows: [[ConsolePage.Cell]] = found.map { account in
            [
                ConsolePage.accountLink(account.id), .text(account.email ?? "—"), .text(ConsolePage.time(account.createdAt)),
                .text(account.appleCredential.rawValue),
            ]
        }
        let body =
            ConsolePage.table(id: "results", headers: ["Account", "Email", "Created", "Apple credential"], rows: rows, empty: "No account matches.")
            + #"<p><a href="/admin">Search again</a></p>"#
        return page(ConsolePage(title: "Search results", body: body, operatorName: context.operatorName, notice: nil))
    }

    @Sendable func accountPage(_ request: Request, context: Context) async throws -> Response {
        let id = try context.parameters.require("id")
        let detail: OperatorDesk.AccountDetail
        do {
            detail = try await desk.account(id: id)
        } catch {
            guard error.code == .notFound else { throw error }
            return notFoundPage(context)
        }
        let account = detail.account
        let name = [account.name?.firstName, account.name?.lastName].compactMap { $0 }.joined(separator: " ")
        let fields: [(String, String)] = [
            ("Account id", account.id), ("Name", name.isEmpty ? "—" : name), ("Email", account.email ?? "—"),
            ("Email verified", account.emailVerified ? "yes" : "no"), ("Private relay", account.isPrivateEmail ? "yes" : "no"),
            ("Email forwarding", account.emailForwarding.rawValue),
            ("Apple credential", account.appleCredential.rawValue), ("Last validated", ConsolePage.time(account.lastValidatedAt)),
            ("Created", ConsolePage.time(account.createdAt)),
        ]
        let list = fields.map { "<dt>\(ConsolePage.escape($0.0))</dt><dd>\(ConsolePage.escape($0.1))</dd>" }.joined(separator: "\n")
        let sessions = detail.sessions.map { session -> [ConsolePage.Cell] in
            [
                .text(session.device ?? "(no label)"), .text(ConsolePage.time(session.createdAt)), .text(ConsolePage.time(session.lastSeenAt)),
                .text(ConsolePage.time(session.expiresAt)),
            ]
        }
        let events = detail.events.map { event -> [ConsolePage.Cell] in
            [.text(ConsolePage.time(event.occurredAt)), .text(event.kind.rawValue), .text(event.reason ?? "—"), .text(event.device ?? "—")]
        }
        let transfer =
            detail.transfer.map { record in
                #"<p id="transfer">App transfer (\#(detail.transferSide == .import ? "receiving" : "sending") side): \#(ConsolePage.escape(record.state.rawValue))</p>"#
            } ?? ""
        let path = ConsolePage.escape(ConsolePage.accountPath(account.id))
        let body = """
            <dl id="account">\(list)</dl>
            \(transfer)
            <div class="actions">
            <a href="\(path)/end-sessions" id="end-sessions">End all sessions</a>
            <a href="\(path)/delete" id="delete-account">Delete account</a>
            </div>
            <h2>Sessions</h2>
            \(ConsolePage.table(id: "sessions", headers: ["Device", "Signed in", "Last seen", "Expires"], rows: sessions, empty: "No live session."))
            <h2>History (why was I signed out?)</h2>
            \(ConsolePage.table(id: "events", headers: ["When", "Event", "Reason", "Device"], rows: events, empty: "No event."))
            """
        let notice: String? =
            switch request.uri.queryParameters["done"] {
            case "ended": "Every session of this account has ended; each device is refused at its next request."
            default: nil
            }
        return page(ConsolePage(title: "Account", body: body, operatorName: context.operatorName, notice: notice))
    }

    @Sendable func confirmEndSessions(_ request: Request, context: Context) async throws -> Response {
        try await confirmation(
            context,
            title: "End all sessions?",
            text: "Every device signed in to this account is signed out at its next request. The account stays.",
            action: "end-sessions",
            button: "End all sessions"
        )
    }

    @Sendable func endSessions(_ request: Request, context: Context) async throws -> Response {
        let id = try context.parameters.require("id")
        guard ImportedUser.isAccountID(id) else { return notFoundPage(context) }
        do {
            _ = try await accounts.endAllSessions(accountID: id)
        } catch {
            guard error.code == .notFound else { throw error }
            return notFoundPage(context)
        }
        return Response(status: .seeOther, headers: [.location: ConsolePage.accountPath(id) + "?done=ended", .cacheControl: "no-store"])
    }

    @Sendable func confirmDelete(_ request: Request, context: Context) async throws -> Response {
        try await confirmation(
            context,
            title: "Delete this account?",
            text:
                "The account and everything personal it holds are erased for good, its sessions end, its backends are told (account.deleted), and Apple's token is revoked. This cannot be undone.",
            action: "delete",
            button: "Delete account"
        )
    }

    @Sendable func delete(_ request: Request, context: Context) async throws -> Response {
        let id = try context.parameters.require("id")
        guard ImportedUser.isAccountID(id) else { return notFoundPage(context) }
        let result: DeletionResult
        do {
            result = try await accounts.deleteAccount(id: id, reason: .byOperator, logger: context.logger)
        } catch {
            guard error.code == .notFound else { throw error }
            return notFoundPage(context)
        }
        var text: String
        switch result.appleRevocation {
        case .revoked: text = "Apple accepted the revocation of the user's token."
        case .pending: text = "Apple did not answer yet: the revocation is retried in the background (see Revocations)."
        case .manualRequired: text = "No Apple token was held: the user must stop using Sign in with Apple with the app on Apple's page."
        }
        let link =
            result.manualRevocationURL.map { url in
                #"<p><a id="manual-revocation-link" rel="noopener noreferrer" href="\#(ConsolePage.escape(url.absoluteString))">Apple's page</a></p>"#
            } ?? ""
        let body =
            #"<p id="deleted">The account \#(ConsolePage.escape(id)) was deleted. \#(ConsolePage.escape(text))</p>"# + link
            + #"<p><a href="/admin">Back to search</a></p>"#
        return page(ConsolePage(title: "Account deleted", body: body, operatorName: context.operatorName, notice: nil))
    }

    private func confirmation(_ context: Context, title: String, text: String, action: String, button: String) async throws -> Response {
        let id = try context.parameters.require("id")
        guard ImportedUser.isAccountID(id) else { return notFoundPage(context) }
        do {
            _ = try await accounts.account(id: id)
        } catch {
            guard error.code == .notFound else { throw error }
            return notFoundPage(context)
        }
        let path = ConsolePage.escape(ConsolePage.accountPath(id))
        let body = """
            <p>\(ConsolePage.escape(text))</p>
            <p>Account: <strong>\(ConsolePage.escape(id))</strong></p>
            <form method="post" action="\(path)/\(action)" class="actions">
            <button type="submit" class="danger" id="confirm">\(ConsolePage.escape(button))</button>
            <a href="\(path)" id="cancel">Cancel</a>
            </form>
            """
        return page(ConsolePage(title: title, body: body, operatorName: context.operatorName, notice: nil))
    }

    private func notFoundPage(_ context: Context) -> Response {
        page(
            ConsolePage(
                title: "Not found",
                body: #"<p><a href="/admin">Back to search</a></p>"#,
                operatorName: context.operatorName,
                notice: "There is no account with that id."
            ),
            status: .notFound
        )
    }

    // MARK: Queues

    @Sendable func revocationsPage(_ request: Request, context: Context) async throws -> Response {
        var body = #"<p class="hint">Deletions whose revocation at Apple is not done. The accounts are gone: nothing personal is shown.</p>"#
        let titles: [(RevocationQueueState, String)] = [
            (.failed, "Waiting on you (Apple refuses Orchard's key, or a vault key is missing)"),
            (.pending, "Retried until Apple accepts"), (.manualRequired, "Left to the user (no token was held)"),
        ]
        for (state, heading) in titles {
            let rows = try await desk.revocations(state).map { row -> [ConsolePage.Cell] in
                // Only what waits on an operator is retried by hand; the rest keeps its schedule.
                let retry =
                    state == .failed
                    ? row.id.map {
                        #"<form method="post" action="/admin/revocations/\#(ConsolePage.escape($0))/retry" class="inline"><button type="submit" class="retry">Retry</button></form>"#
                    } ?? "" : ""
                return [
                    .text(row.accountID ?? "—"), .text(ConsolePage.time(row.deletedAt)), .text(String(row.attempts)),
                    .text(ConsolePage.time(row.nextAttemptAt)), .text(row.lastError ?? "—"), .markup(retry),
                ]
            }
            body +=
                "<h2>\(ConsolePage.escape(heading))</h2>"
                + ConsolePage.table(
                    id: "revocations-\(state.rawValue)",
                    headers: ["Account", "Deleted", "Attempts", "Next attempt", "Last error", ""],
                    rows: rows,
                    empty: "None."
                )
        }
        let notice: String? = request.uri.queryParameters["done"] == "retried" ? "The revocation is being tried again." : nil
        return page(ConsolePage(title: "Revocations", body: body, operatorName: context.operatorName, notice: notice))
    }

    @Sendable func retryRevocation(_ request: Request, context: Context) async throws -> Response {
        try await retry(context, page: "/admin/revocations", missing: "No failed revocation has that id.") { id throws(AccountsError) in
            try await desk.retryRevocation(id: id)
        }
    }

    @Sendable func webhooksPage(_ request: Request, context: Context) async throws -> Response {
        let rows = try await desk.failedWebhooks().map { row -> [ConsolePage.Cell] in
            let retry =
                #"<form method="post" action="/admin/webhooks/\#(ConsolePage.escape(row.id))/retry" class="inline"><button type="submit" class="retry">Retry</button></form>"#
            return [
                .text(row.type), ConsolePage.accountLink(row.accountID), .text(URLRedaction.redactingCredentials(row.url)),
                .text(String(row.attempts)), .text(row.lastStatus.map(String.init) ?? "—"), .text(ConsolePage.time(row.failedAt)), .markup(retry),
            ]
        }
        let body =
            #"<p class="hint">Deliveries given up after their retry window. Retry sends the same event (same webhook-id) with a fresh schedule.</p>"#
            + ConsolePage.table(
                id: "failed-webhooks",
                headers: ["Event", "Account", "Receiver", "Attempts", "Last status", "Given up", ""],
                rows: rows,
                empty: "No failed delivery."
            )
        let notice: String? = request.uri.queryParameters["done"] == "retried" ? "The delivery is being tried again." : nil
        return page(ConsolePage(title: "Webhooks", body: body, operatorName: context.operatorName, notice: notice))
    }

    @Sendable func retryWebhook(_ request: Request, context: Context) async throws -> Response {
        try await retry(context, page: "/admin/webhooks", missing: "No failed delivery has that id.") { id throws(AccountsError) in
            try await desk.retryWebhook(id: id)
        }
    }

    /// A Retry button's post: `action` on the path's id, then back to `page` saying so, or a 404 page saying `missing`.
    private func retry(
        _ context: Context,
        page path: String,
        missing: String,
        _ action: (String) async throws(AccountsError) -> Void
    ) async throws -> Response {
        let id = try context.parameters.require("id")
        do {
            try await action(id)
        } catch {
            guard error.code == .notFound else { throw error }
            return page(ConsolePage(title: "Not found", body: "", operatorName: context.operatorName, notice: missing), status: .notFound)
        }
        return Response(status: .seeOther, headers: [.location: "\(path)?done=retried", .cacheControl: "no-store"])
    }

    // MARK: Notifications and the audit log

    @Sendable func deliveryPage(_ request: Request, context: Context) async throws -> Response {
        let counts = try await desk.delivery(clientIDs: teams.flatMap(\.clientIDs))
        let rows = counts.map { row -> [ConsolePage.Cell] in
            [
                .text(teams.first { $0.clientIDs.contains(row.clientID) }?.teamID ?? "—"), .text(row.clientID),
                .text(ConsolePage.time(row.lastReceivedAt)),
                .text(String(row.received24h)), .text(String(row.received7d)), .text(String(row.duplicates7d)), .text(String(row.unknownSubject7d)),
                .text(String(row.revokedWithoutNotification7d)),
            ]
        }
        let body = """
            <p class="hint">Apple keeps no delivery history for Sign in with Apple notifications: this is what reached this server.
            "Revoked without notification" counts accounts the daily validation found revoked that no notification announced:
            a sign that Apple's notifications do not reach you (check with <code>orchard notifications doctor URL</code>).</p>
            """
            + ConsolePage.table(
                id: "delivery",
                headers: [
                    "Team", "Client id", "Last received", "24 h", "7 days", "Repeats (7 d)", "Unknown subject (7 d)",
                    "Revoked without notification (7 d)",
                ],
                rows: rows,
                empty: "No client id is configured."
            )
        return page(ConsolePage(title: "Notification delivery", body: body, operatorName: context.operatorName, notice: nil))
    }

    @Sendable func notificationsPage(_ request: Request, context: Context) async throws -> Response {
        let notifications: OperatorPage<ReceivedNotification>
        do {
            notifications = try await desk.notifications(before: request.uri.queryParameters["before"].map(String.init), limit: 50)
        } catch {
            guard error.code == .invalidRequest else { throw error }
            return page(
                ConsolePage(title: "Notifications", body: "", operatorName: context.operatorName, notice: "That page does not exist."),
                status: .badRequest
            )
        }
        let rows = notifications.items.map { row -> [ConsolePage.Cell] in
            [
                .text(ConsolePage.time(row.receivedAt)), .text(row.clientID ?? "—"), .text(row.type), .text(row.outcome.rawValue),
                ConsolePage.accountLink(row.accountID),
                .text(String(row.duplicates)),
            ]
        }
        var body = ConsolePage.table(
            id: "notifications",
            headers: ["Received", "Client id", "Type", "Outcome", "Account", "Repeats"],
            rows: rows,
            empty: "No notification received (they are kept 30 days after processing)."
        )
        if let next = notifications.next {
            body +=
                #"<p><a href="/admin/notifications?before=\#(ConsolePage.escape(next.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""))">Older</a></p>"#
        }
        return page(ConsolePage(title: "Notifications", body: body, operatorName: context.operatorName, notice: nil))
    }

    @Sendable func auditPage(_ request: Request, context: Context) async throws -> Response {
        let entries: OperatorPage<AuditEntry>
        do {
            entries = try await operators.audit(before: request.uri.queryParameters["before"].map(String.init), limit: 50)
        } catch {
            guard error.code == .invalidRequest else { throw error }
            return page(
                ConsolePage(title: "Audit log", body: "", operatorName: context.operatorName, notice: "That page does not exist."),
                status: .badRequest
            )
        }
        let rows = entries.items.map { entry -> [ConsolePage.Cell] in
            [
                .text(ConsolePage.time(entry.at)), .text(entry.operatorName), .text(entry.method), .text(entry.route),
                ConsolePage.accountLink(entry.accountID),
                .text(String(entry.status)),
            ]
        }
        var body = ConsolePage.table(
            id: "audit",
            headers: ["When", "Operator", "Method", "Route", "Account", "Status"],
            rows: rows,
            empty: "No entry."
        )
        if let next = entries.next { body += #"<p><a href="/admin/audit?before=\#(ConsolePage.escape(next))">Older</a></p>"# }
        return page(ConsolePage(title: "Audit log", body: body, operatorName: context.operatorName, notice: nil))
    }

    // MARK: Rendering

    private func page(_ page: ConsolePage, status: HTTPResponse.Status = .ok) -> Response {
        let nonce = random.token()
        return Response(
            status: status,
            headers: Self.securityHeaders(nonce: nonce),
            body: ResponseBody(byteBuffer: ByteBuffer(string: page.html(nonce: nonce)))
        )
    }

    /// No caching, framing, sniffing, or referrer to another site (`same-origin`, not `no-referrer`, under which a
    /// browser sends `Origin: null` on the console's own form posts and ``OperatorMiddleware`` refuses them as
    /// cross-site); no script at all, the one inline style by nonce, forms to this listener only.
    static func securityHeaders(nonce: String) -> HTTPFields {
        let policy = [
            "default-src 'none'", "script-src 'none'", "style-src 'nonce-\(nonce)'", "img-src 'self'", "form-action 'self'", "base-uri 'none'",
            "frame-ancestors 'none'",
        ]
        return [
            .contentType: "text/html; charset=utf-8",
            .cacheControl: "no-store",
            .contentSecurityPolicy: policy.joined(separator: "; "),
            HTTPField.Name("X-Content-Type-Options")!: "nosniff",
            HTTPField.Name("Referrer-Policy")!: "same-origin",
            HTTPField.Name("X-Frame-Options")!: "DENY",
        ]
    }
}

/// The fields of an `application/x-www-form-urlencoded` body (64 KiB at most).
enum FormFields {
    static func read(_ request: Request) async throws -> [String: String] {
        let buffer = try await request.body.collect(upTo: OrchardProblem.maxBodySize)
        return parse(String(buffer: buffer))
    }

    static func parse(_ text: String) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ part: Substring) -> String? {
                String(part).replacingOccurrences(of: "+", with: " ").removingPercentEncoding
            }
            guard let key = parts.first.flatMap(decode), fields[key] == nil else { continue }
            fields[key] = parts.count > 1 ? decode(parts[1]) ?? "" : ""
        }
        return fields
    }
}
