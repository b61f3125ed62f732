import AppleID
import Crypto
public import Foundation

/// One entry of an account's history: why it was signed in or out, what Apple said of it. It holds nothing personal in
/// plain form: no email, subject, token or address; the device label is sealed under ``SealingContext/historyEvent(_:)``.
public struct HistoryEvent: Sendable, Equatable {
    /// The contract's event types.
    public enum Kind: String, Sendable, CaseIterable {
        case signedIn = "signed_in"
        case signedOut = "signed_out"
        case appleValidation = "apple_validation"
        case credentialRevoked = "credential_revoked"
        case emailForwardingChanged = "email_forwarding_changed"
        case transferred
        case imported
    }

    /// `evt_` and an opaque id.
    public var id: String
    /// The account it belongs to.
    public var accountID: String
    /// What happened.
    public var kind: Kind
    /// When.
    public var occurredAt: Date
    /// The session it concerns (`signed_in`, `signed_out`).
    public var sessionID: String?
    /// The sealed device label of a `signed_in`.
    public var sealedDevice: String?
    /// Why, in the contract's words (`user`, `other_device`, `expired`, `valid`, `invalid_grant`, `consent_revoked`,
    /// `enabled`, `disabled`).
    public var reason: String?

    /// Creates an event.
    public init(
        id: String,
        accountID: String,
        kind: Kind,
        occurredAt: Date,
        sessionID: String? = nil,
        sealedDevice: String? = nil,
        reason: String? = nil
    ) {
        self.id = id
        self.accountID = accountID
        self.kind = kind
        self.occurredAt = occurredAt
        self.sessionID = sessionID
        self.sealedDevice = sealedDevice
        self.reason = reason
    }
}

extension HistoryEvent {
    /// A refresh-token validation's verdict. Its id names the account, the UTC day and the verdict, so that a day's
    /// repeated verdict is one event: the store adds none whose id is taken.
    public static func validation(accountID: String, reason: String, at: Date) -> HistoryEvent {
        let day = Int((at.timeIntervalSince1970 / 86_400).rounded(.down))
        return HistoryEvent(
            id: "evt_\(idPart(of: accountID))_\(day)_\(reason)",
            accountID: accountID,
            kind: .appleValidation,
            occurredAt: at,
            reason: reason
        )
    }

    /// The part of an event id that names `accountID`: an Orchard id's random part (`acct_` dropped), or, for an
    /// imported id of any other shape (up to 128 characters of `A-Z a-z 0-9 . _ - | : @`), the first 32 hex digits of
    /// its SHA-256, so that every event id stays a cursor `before` accepts (`evt_` and lowercase letters, digits, `_`).
    static func idPart(of accountID: String) -> String {
        let random = accountID.utf8.dropFirst(5)
        let isOrchards =
            accountID.hasPrefix("acct_") && !random.isEmpty && random.count <= 40
            && random.allSatisfy { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
        return isOrchards ? String(accountID.dropFirst(5)) : String(SHA256.hash(utf8: accountID).hexString.prefix(32))
    }
}

extension HistoryEvent {
    /// The id of the `signed_out` event of the session `sessionID` (`sess_` and 32 hex digits): its random part, as a
    /// session ends once. The SQL store writes the same id in SQL (``signedOutIDSQL``).
    public static func signedOutID(sessionID: String) -> String {
        "evt_" + sessionID.dropFirst(5) + "x"
    }

    /// ``signedOutID(sessionID:)`` as an SQL expression over a `sessions` row's id column (`column`).
    public static func signedOutIDSQL(_ column: String = "id") -> String {
        "'evt_' || substr(\(column), 6) || 'x'"
    }

    /// The account's app transfer completed; an account completes one transfer, so its id names the account.
    public static func transferred(accountID: String, at: Date) -> HistoryEvent {
        HistoryEvent(
            id: "evt_\(idPart(of: accountID))_transferred",
            accountID: accountID,
            kind: .transferred,
            occurredAt: at
        )
    }
}

/// An event as shown: the device label opened.
public struct HistoryEntry: Sendable, Equatable {
    /// The event's id.
    public var id: String
    /// What happened.
    public var kind: HistoryEvent.Kind
    /// When.
    public var occurredAt: Date
    /// The session it concerns.
    public var sessionID: String?
    /// The device label of a `signed_in`.
    public var device: String?
    /// Why.
    public var reason: String?

}

/// A page of an account's history, newest first; `next` is the cursor of the page after it.
public struct HistoryPage: Sendable, Equatable {
    /// The events.
    public var events: [HistoryEntry]
    /// Pass as `before` for the older events; `nil` on the last page.
    public var next: String?

    /// Creates a page.
    public init(events: [HistoryEntry], next: String?) {
        self.events = events
        self.next = next
    }
}

/// Where each account's history lives.
public protocol HistoryStore: Sendable {
    /// Up to `limit` of the account's events older than the event `before` (all when `nil`), newest first.
    func history(accountID: String, before: String?, limit: Int) async throws -> [HistoryEvent]
}

/// Why a session was signed out, as its `signed_out` event says.
public enum SignOutCause: String, Sendable {
    /// The user signed out of this session on this device.
    case user
    /// The user ended it from another device.
    case otherDevice = "other_device"
    /// It ran out its lifetime.
    case expired
    /// An operator ended the account's sessions.
    case `operator`
}
