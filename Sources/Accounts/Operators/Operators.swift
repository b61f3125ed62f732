public import AppleID
public import Foundation
import Synchronization

/// The people who may use the operator API and console: adding one (its token is shown once, only a hash is kept),
/// removing one (every replica refuses its token and console logins at the next request, since each request asks the
/// database), authenticating a request, console logins, and the audit log.
public struct Operators: Sendable {
    /// How long a console login lasts.
    public static let consoleLifetime: TimeInterval = 12 * 3600
    /// Audit entries per page, at most.
    public static let pageLimit = 1...100

    let store: any OperatorStore
    let clock: any WallClock
    let random: any RandomSource

    /// Creates the operators' part over its store.
    public init(store: any OperatorStore, clock: any WallClock, random: any RandomSource) {
        self.store = store
        self.clock = clock
        self.random = random
    }

    /// A valid operator name: 1 to 64 of `A-Z a-z 0-9 . _ - @`.
    public static func isName(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count)
            && name.utf8.allSatisfy { byte in
                (0x30...0x39).contains(byte) || (0x41...0x5a).contains(byte) || (0x61...0x7a).contains(byte)
                    || [UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "@")].contains(byte)
            }
    }

    /// Adds an operator and returns its token, which is never stored nor shown again.
    ///
    /// - Throws: `invalid_request` for a bad or taken name.
    public func add(name: String) async throws(AccountsError) -> String {
        guard Self.isName(name) else { throw AccountsError(.invalidRequest, "a name is 1 to 64 of A-Z a-z 0-9 . _ - @") }
        let token = "orchard_op_" + random.token()
        let added = try await storing { try await store.insertOperator(name: name, tokenHash: Self.hash(token), at: clock.now()) }
        guard added else { throw AccountsError(.invalidRequest, "an operator named \(name) exists") }
        return token
    }

    /// Every operator, by name.
    public func list() async throws(AccountsError) -> [OperatorRecord] {
        try await storing { try await store.operators() }
    }

    /// Removes an operator: its token and console logins stop working at once.
    ///
    /// - Throws: `not_found` when there is no operator of that name.
    public func remove(name: String) async throws(AccountsError) {
        guard try await storing({ try await store.deleteOperator(name: name) }) else {
            throw AccountsError(.notFound, "no operator named \(name)")
        }
    }

    /// The operator whose token this is, or `nil`.
    public func authenticate(token: String) async throws(AccountsError) -> String? {
        guard Self.isTokenShaped(token) else { return nil }
        return try await storing { try await store.operatorName(tokenHash: Self.hash(token)) }
    }

    /// Signs the console in with an operator token: a new login value (the cookie's) and its expiry, or `nil` for a
    /// token that is not an operator's.
    public func logIn(token: String) async throws(AccountsError) -> (name: String, login: String, expiresAt: Date)? {
        guard let name = try await authenticate(token: token) else { return nil }
        let login = random.token()
        let now = clock.now()
        let expiresAt = now.addingTimeInterval(Self.consoleLifetime)
        try await storing { try await store.insertConsoleLogin(tokenHash: Self.hash(login), operatorName: name, expiresAt: expiresAt, now: now) }
        return (name, login, expiresAt)
    }

    /// The operator of a live console login, or `nil`.
    public func consoleOperator(login: String) async throws(AccountsError) -> String? {
        guard Self.isTokenShaped(login) else { return nil }
        return try await storing { try await store.consoleLogin(tokenHash: Self.hash(login), now: clock.now()) }
    }

    /// Ends a console login.
    public func logOut(login: String) async throws(AccountsError) {
        guard Self.isTokenShaped(login) else { return }
        try await storing { try await store.deleteConsoleLogin(tokenHash: Self.hash(login)) }
    }

    /// Records an operator request before it is answered; returns the entry's id. A request that changes something is
    /// recorded before it is acted on, with status 0 ("not answered yet"), and completed by ``complete(entry:status:accountID:)``:
    /// if the record cannot be written, nothing is done.
    @discardableResult
    public func record(operatorName: String, method: String, route: String, accountID: String?, status: Int) async throws(AccountsError) -> String {
        let entry = AuditEntry(
            id: Self.auditID(random: random),
            at: clock.now(),
            operatorName: operatorName,
            method: method,
            route: route,
            accountID: accountID,
            status: status
        )
        try await storing { try await store.appendAudit(entry) }
        return entry.id
    }

    /// Completes an entry ``record(operatorName:method:route:accountID:status:)`` wrote before the request was acted on.
    public func complete(entry id: String, status: Int, accountID: String?) async throws(AccountsError) {
        try await storing { try await store.completeAudit(id: id, status: status, accountID: accountID) }
    }

    /// A page of the audit log, newest first.
    ///
    /// - Throws: `invalid_request` for a limit out of range or a cursor this server did not give.
    public func audit(before: String?, limit: Int) async throws(AccountsError) -> OperatorPage<AuditEntry> {
        guard Self.pageLimit.contains(limit) else { throw AccountsError(.invalidRequest, "limit must be 1 to 100") }
        if let before, !OpaqueID.isID(before, prefix: "aud_") { throw AccountsError(.invalidRequest, "before must be the next cursor of a page") }
        guard let entries = try await storing({ try await store.audit(before: before, limit: limit + 1) }) else {
            throw AccountsError(.invalidRequest, "before must be the next cursor of a page")
        }
        let page = Array(entries.prefix(limit))
        return OperatorPage(items: page, next: entries.count > limit ? page.last?.id : nil)
    }

    /// `aud_` and 32 hex digits that sort in the order this process made them, however coarse the clock: a counter
    /// first (so that two entries of one millisecond keep their order in the log), then randomness.
    static func auditID(random: any RandomSource) -> String {
        let sequence = auditSequence.add(1, ordering: .relaxed).newValue
        let micros = UInt64(max(0, Date().timeIntervalSince1970 * 1_000_000))
        return "aud_" + String(format: "%013llx%03llx", micros, sequence & 0xfff) + random.bytes(8).hexString
    }

    private static let auditSequence = Atomic<UInt64>(0)

    /// Tokens and login values are printable ASCII of a bounded length; anything else is no operator's.
    private static func isTokenShaped(_ token: String) -> Bool {
        (1...256).contains(token.utf8.count) && token.utf8.allSatisfy { (0x21...0x7e).contains($0) }
    }

    private static func hash(_ value: String) -> String {
        AccountDesk.sha256Hex(value)
    }
}
