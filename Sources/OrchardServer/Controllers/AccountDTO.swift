import Accounts
import Foundation

/// ACCOUNT as the API writes it.
struct AccountDTO: Encodable {
    var id: String
    var appleSub: String
    var email: String?
    var isPrivateEmail: Bool
    var emailForwarding: String
    var name: AccountView.Name?
    /// RFC 3339, written here rather than by the encoder's date strategy (see ``RFC3339``).
    var createdAt: String
    var appleCredential: String
    var lastValidatedAt: String?
    var orgID: String?
    var emailVerified: Bool

    init(_ view: AccountView) {
        id = view.id
        appleSub = view.appleSub
        email = view.email
        isPrivateEmail = view.isPrivateEmail
        emailForwarding = view.emailForwarding.rawValue
        name = view.name
        createdAt = RFC3339.string(view.createdAt)
        appleCredential = view.appleCredential.rawValue
        lastValidatedAt = view.lastValidatedAt.map(RFC3339.string)
        orgID = view.orgID
        emailVerified = view.emailVerified
    }

    enum CodingKeys: String, CodingKey {
        case id
        case appleSub = "apple_sub"
        case email
        case isPrivateEmail = "is_private_email"
        case emailForwarding = "email_forwarding"
        case name
        case createdAt = "created_at"
        case appleCredential = "apple_credential"
        case lastValidatedAt = "last_validated_at"
        case orgID = "org_id"
        case emailVerified = "email_verified"
    }

    /// Writes the fields as one object (``encode(into:)``).
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try encode(into: &container)
    }

    /// Writes the fields into a container the caller opened, such as a nested one: `JSONEncoder` makes a new encoder
    /// for each nested value it is given (`Benchmarks/run`'s `GET /v1/session` guards this).
    /// Absent values are left out, as a synthesized `Encodable` conformance does.
    func encode(into container: inout KeyedEncodingContainer<CodingKeys>) throws {
        try container.encode(id, forKey: .id)
        try container.encode(appleSub, forKey: .appleSub)
        try container.encodeIfPresent(email, forKey: .email)
        try container.encode(emailVerified, forKey: .emailVerified)
        try container.encode(isPrivateEmail, forKey: .isPrivateEmail)
        try container.encode(emailForwarding, forKey: .emailForwarding)
        try container.encodeIfPresent(name, forKey: .name)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(appleCredential, forKey: .appleCredential)
        try container.encodeIfPresent(lastValidatedAt, forKey: .lastValidatedAt)
        try container.encodeIfPresent(orgID, forKey: .orgID)
    }
}

/// Dates as the API writes them, `2026-11-24T20:38:57Z`: Foundation's ISO 8601 format, which is also what the response
/// encoder's `.iso8601` strategy writes. The answers that every request pays for (the session check's) format their
/// dates here into strings, which spares the encoder its date strategy (`Benchmarks/run`'s `GET /v1/session` guards
/// this).
enum RFC3339 {
    private static let style = Date.ISO8601FormatStyle()

    static func string(_ date: Date) -> String {
        style.format(date)
    }
}
