import AppleID
import Foundation

/// Why one record of an import cannot be imported, as the report shows it: by the rule it broke, never with its content.
public struct ImportRecordProblem: Error, Sendable, Equatable {
    /// The rule the record broke.
    public let reason: String
}

/// Reads one record of an import's file into an ``ImportedUser``: the shape of each source, its names for the fields,
/// and its ways of writing dates and booleans. Used on one task at a time (it keeps its date formatters).
public final class ImportDecoder {
    private let decoder = JSONDecoder()
    // Foundation's format styles parse in Swift; `ISO8601DateFormatter` went through ICU for every date, which was 29 %
    // of an import's CPU (`perf record` of `orchard accounts import` of 60,000 lines; Benchmarks/README.md, "Importing
    // accounts beside serve").
    private let rfc3339 = Date.ISO8601FormatStyle()
    private let rfc3339WithFraction = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
    /// JavaScript's `toUTCString()`, as Firebase's `metadata.creationTime` writes it: `Tue, 10 Jan 2023 10:00:00 GMT`.
    private let utcString: DateFormatter = {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter
    }()

    /// A decoder.
    public init() {}

    /// The user of one record of `source`; its ``ImportedUser/subject`` is `nil` when the source holds no Apple identity.
    ///
    /// - Throws: ``ImportRecordProblem`` for a record that is not JSON, or not the source's shape.
    public func user(_ bytes: [UInt8], source: ImportSource) throws(ImportRecordProblem) -> ImportedUser {
        do {
            let data = Data(bytes)
            switch source {
            case .orchard: return try orchard(try decoder.decode(OrchardLine.self, from: data))
            case .firebase: return try firebase(try decoder.decode(FirebaseUser.self, from: data))
            case .supabase: return try supabase(try decoder.decode(SupabaseIdentity.self, from: data))
            case .auth0: return try auth0(try decoder.decode(Auth0User.self, from: data))
            }
        } catch let problem as ImportRecordProblem {
            throw problem
        } catch let error as DecodingError {
            throw ImportRecordProblem(reason: Self.describe(error))
        } catch {
            throw ImportRecordProblem(reason: "not a JSON object")
        }
    }

    /// Says which field is wrong, without its value.
    private static func describe(_ error: DecodingError) -> String {
        switch error {
        case .dataCorrupted(let context) where context.codingPath.isEmpty: return "not a JSON object"
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            return "\(context.codingPath.map(\.stringValue).joined(separator: ".")) has the wrong type"
        case .keyNotFound(let key, let context):
            return "\((context.codingPath + [key]).map(\.stringValue).joined(separator: ".")) is missing"
        @unknown default: return "not the source's shape"
        }
    }

    // MARK: Orchard

    private struct OrchardLine: Decodable {
        struct Name: Decodable {
            var firstName: String?
            var lastName: String?
            enum CodingKeys: String, CodingKey {
                case firstName = "first_name"
                case lastName = "last_name"
            }
        }
        var appleSub: String?
        var accountID: String?
        var clientID: String?
        var email: String?
        var emailVerified: Bool?
        var isPrivateEmail: Bool?
        var name: Name?
        var createdAt: String?
        var refreshToken: String?

        enum CodingKeys: String, CodingKey {
            case email, name
            case appleSub = "apple_sub"
            case accountID = "account_id"
            case clientID = "client_id"
            case emailVerified = "email_verified"
            case isPrivateEmail = "is_private_email"
            case createdAt = "created_at"
            case refreshToken = "refresh_token"
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            appleSub = try container.decodeIfPresent(String.self, forKey: .appleSub)
            accountID = try container.decodeIfPresent(String.self, forKey: .accountID)
            clientID = try container.decodeIfPresent(String.self, forKey: .clientID)
            email = try container.decodeIfPresent(String.self, forKey: .email)
            emailVerified = try container.decodeLenientBoolIfPresent(forKey: .emailVerified)
            isPrivateEmail = try container.decodeLenientBoolIfPresent(forKey: .isPrivateEmail)
            name = try container.decodeIfPresent(Name.self, forKey: .name)
            createdAt = try container.decodeIfPresent(String.self, forKey: .createdAt)
            refreshToken = try container.decodeIfPresent(String.self, forKey: .refreshToken)
        }
    }

    private func orchard(_ line: OrchardLine) throws(ImportRecordProblem) -> ImportedUser {
        guard let subject = line.appleSub, !subject.isEmpty else { throw ImportRecordProblem(reason: "apple_sub is missing") }
        return ImportedUser(
            accountID: line.accountID,
            subject: subject,
            clientID: line.clientID,
            email: line.email,
            emailVerified: line.emailVerified,
            isPrivateEmail: line.isPrivateEmail,
            firstName: line.name?.firstName,
            lastName: line.name?.lastName,
            createdAt: try line.createdAt.map { text throws(ImportRecordProblem) in try date(text, field: "created_at") },
            refreshToken: line.refreshToken
        )
    }

    // MARK: Firebase

    /// A user record of the Admin SDK's `listUsers` (`uid`, `metadata.creationTime`, `providerData[].uid`) or of
    /// `firebase auth:export` (`localId`, `createdAt` in milliseconds, `providerUserInfo[].rawId`).
    private struct FirebaseUser: Decodable {
        struct Metadata: Decodable {
            var creationTime: String?
        }
        struct Provider: Decodable {
            var providerId: String?
            var uid: String?
            var rawId: String?
            var email: String?
        }
        var uid: String?
        var localId: String?
        var email: String?
        var emailVerified: Bool?
        var displayName: String?
        var metadata: Metadata?
        var createdAt: String?
        var providerData: [Provider]?
        var providerUserInfo: [Provider]?

        enum CodingKeys: String, CodingKey {
            case uid, localId, email, emailVerified, displayName, metadata, createdAt, providerData, providerUserInfo
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            uid = try container.decodeIfPresent(String.self, forKey: .uid)
            localId = try container.decodeIfPresent(String.self, forKey: .localId)
            email = try container.decodeIfPresent(String.self, forKey: .email)
            emailVerified = try container.decodeLenientBoolIfPresent(forKey: .emailVerified)
            displayName = try container.decodeIfPresent(String.self, forKey: .displayName)
            metadata = try container.decodeIfPresent(Metadata.self, forKey: .metadata)
            // auth:export writes milliseconds as a string; a number is read too.
            if let text = try? container.decodeIfPresent(String.self, forKey: .createdAt) {
                createdAt = text
            } else {
                createdAt = try container.decodeIfPresent(Int64.self, forKey: .createdAt).map(String.init)
            }
            providerData = try container.decodeIfPresent([Provider].self, forKey: .providerData)
            providerUserInfo = try container.decodeIfPresent([Provider].self, forKey: .providerUserInfo)
        }
    }

    private func firebase(_ user: FirebaseUser) throws(ImportRecordProblem) -> ImportedUser {
        guard let id = user.uid ?? user.localId else { throw ImportRecordProblem(reason: "uid (or localId) is missing") }
        let apple = (user.providerData ?? user.providerUserInfo ?? []).first { $0.providerId == "apple.com" }
        let (first, last) = ImportedUser.splitting(fullName: user.displayName)
        var createdAt: Date?
        if let creation = user.metadata?.creationTime {
            guard let parsed = utcString.date(from: creation) ?? internetDate(creation) else {
                throw ImportRecordProblem(reason: "metadata.creationTime is not a date")
            }
            createdAt = parsed
        } else if let millis = user.createdAt {
            guard let value = Double(millis) else { throw ImportRecordProblem(reason: "createdAt is not milliseconds") }
            createdAt = Date(timeIntervalSince1970: value / 1000)
        }
        return ImportedUser(
            accountID: id,
            subject: (apple?.uid ?? apple?.rawId).flatMap { $0.isEmpty ? nil : $0 },
            email: user.email ?? apple?.email,
            emailVerified: user.emailVerified,
            firstName: first,
            lastName: last,
            createdAt: createdAt
        )
    }

    // MARK: Supabase

    /// A row of `auth.identities`: `user_id`, `provider`, `provider_id` (Apple's `sub` for `apple`), `identity_data`.
    private struct SupabaseIdentity: Decodable {
        struct IdentityData: Decodable {
            var sub: String?
            var email: String?
            var emailVerified: Bool?
            var isPrivateEmail: Bool?
            var fullName: String?
            var name: String?

            enum CodingKeys: String, CodingKey {
                case sub, email, name
                case emailVerified = "email_verified"
                case isPrivateEmail = "is_private_email"
                case fullName = "full_name"
            }

            init(from decoder: any Decoder) throws {
                let container = try decoder.container(keyedBy: CodingKeys.self)
                sub = try container.decodeIfPresent(String.self, forKey: .sub)
                email = try container.decodeIfPresent(String.self, forKey: .email)
                emailVerified = try container.decodeLenientBoolIfPresent(forKey: .emailVerified)
                isPrivateEmail = try container.decodeLenientBoolIfPresent(forKey: .isPrivateEmail)
                fullName = try container.decodeIfPresent(String.self, forKey: .fullName)
                name = try container.decodeIfPresent(String.self, forKey: .name)
            }
        }
        var userID: String?
        var provider: String?
        var providerID: String?
        var identityData: IdentityData?
        var createdAt: String?

        enum CodingKeys: String, CodingKey {
            case provider
            case userID = "user_id"
            case providerID = "provider_id"
            case identityData = "identity_data"
            case createdAt = "created_at"
        }
    }

    private func supabase(_ row: SupabaseIdentity) throws(ImportRecordProblem) -> ImportedUser {
        guard let id = row.userID else { throw ImportRecordProblem(reason: "user_id is missing") }
        let data = row.identityData
        let (first, last) = ImportedUser.splitting(fullName: data?.fullName ?? data?.name)
        let subject = row.provider == "apple" ? (row.providerID ?? data?.sub).flatMap { $0.isEmpty ? nil : $0 } : nil
        return ImportedUser(
            accountID: id,
            subject: subject,
            email: data?.email,
            emailVerified: data?.emailVerified,
            isPrivateEmail: data?.isPrivateEmail,
            firstName: first,
            lastName: last,
            createdAt: try row.createdAt.map { text throws(ImportRecordProblem) in try date(text, field: "created_at") }
        )
    }

    // MARK: Auth0

    /// A line of Auth0's user export: `user_id`, `email`, `email_verified`, `given_name`, `family_name`, `created_at`,
    /// and `identities` (the `apple` one's `user_id` is Apple's `sub`).
    private struct Auth0User: Decodable {
        struct Identity: Decodable {
            var provider: String?
            var userID: String?
            enum CodingKeys: String, CodingKey {
                case provider
                case userID = "user_id"
            }
        }
        var userID: String?
        var email: String?
        var emailVerified: Bool?
        var givenName: String?
        var familyName: String?
        var name: String?
        var createdAt: String?
        var identities: [Identity]?

        enum CodingKeys: String, CodingKey {
            case email, name, identities
            case userID = "user_id"
            case emailVerified = "email_verified"
            case givenName = "given_name"
            case familyName = "family_name"
            case createdAt = "created_at"
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            userID = try container.decodeIfPresent(String.self, forKey: .userID)
            email = try container.decodeIfPresent(String.self, forKey: .email)
            emailVerified = try container.decodeLenientBoolIfPresent(forKey: .emailVerified)
            givenName = try container.decodeIfPresent(String.self, forKey: .givenName)
            familyName = try container.decodeIfPresent(String.self, forKey: .familyName)
            name = try container.decodeIfPresent(String.self, forKey: .name)
            createdAt = try container.decodeIfPresent(String.self, forKey: .createdAt)
            identities = try container.decodeIfPresent([Identity].self, forKey: .identities)
        }
    }

    private func auth0(_ user: Auth0User) throws(ImportRecordProblem) -> ImportedUser {
        guard let id = user.userID else { throw ImportRecordProblem(reason: "user_id is missing") }
        let apple = user.identities?.first { $0.provider == "apple" }
        var (first, last) = (user.givenName, user.familyName)
        if first == nil, last == nil { (first, last) = ImportedUser.splitting(fullName: user.name) }
        return ImportedUser(
            accountID: id,
            subject: apple?.userID.flatMap { $0.isEmpty ? nil : $0 },
            email: user.email,
            emailVerified: user.emailVerified,
            firstName: first,
            lastName: last,
            createdAt: try user.createdAt.map { text throws(ImportRecordProblem) in try date(text, field: "created_at") }
        )
    }

    // MARK: Dates

    /// RFC 3339 (with or without a fraction), or PostgreSQL's text for `timestamptz` (`2024-01-15 10:00:00.123456+00`).
    private func date(_ text: String, field: String) throws(ImportRecordProblem) -> Date {
        if let date = internetDate(text) { return date }
        throw ImportRecordProblem(reason: "\(field) is not a date")
    }

    private func internetDate(_ text: String) -> Date? {
        var normalized = text.trimmingCharacters(in: .whitespaces)
        // RFC 3339 allows a lowercase t and z; the format style takes them uppercase.
        if normalized.count > 10, normalized[normalized.index(normalized.startIndex, offsetBy: 10)] == "t" {
            normalized.replaceSubrange(
                normalized.index(normalized.startIndex, offsetBy: 10)...normalized.index(normalized.startIndex, offsetBy: 10),
                with: "T"
            )
        }
        if normalized.hasSuffix("z") { normalized = normalized.dropLast() + "Z" }
        // PostgreSQL's text: a space for the T, an offset of hours only, microseconds.
        if normalized.count > 10, normalized[normalized.index(normalized.startIndex, offsetBy: 10)] == " " {
            normalized.replaceSubrange(
                normalized.index(normalized.startIndex, offsetBy: 10)...normalized.index(normalized.startIndex, offsetBy: 10),
                with: "T"
            )
        }
        if let sign = normalized.lastIndex(where: { $0 == "+" || $0 == "-" }), normalized.distance(from: sign, to: normalized.endIndex) == 3,
            normalized.contains("T")
        {
            normalized += ":00"
        }
        if let dot = normalized.firstIndex(of: ".") {
            let digits = normalized[normalized.index(after: dot)...].prefix { $0.isNumber }
            if digits.count > 3 {
                normalized.replaceSubrange(digits.index(digits.startIndex, offsetBy: 3)..<digits.endIndex, with: "")
            }
        }
        guard let date = (try? rfc3339WithFraction.parse(normalized)) ?? (try? rfc3339.parse(normalized)) else { return nil }
        // The format style moves impossible fields on (February 30 becomes March 1, 25:00 the next day's 01:00), where
        // the formatter it replaced refused them: a date is taken only if it reads back as it was written.
        return Self.readsBack(date, as: normalized) ? date : nil
    }

    /// Whether `date`, written in the offset `text` names, has the date and time `text` starts with
    /// (`YYYY-MM-DDTHH:MM:SS`).
    static func readsBack(_ date: Date, as text: String) -> Bool {
        let written = Array(text.utf8)
        guard written.count >= 20 else { return false }
        var zone = written[19...].drop { $0 == UInt8(ascii: ".") || (0x30...0x39).contains($0) }
        var offset = 0
        if let sign = zone.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
            zone = zone.dropFirst()
            let digits = zone.filter { $0 != UInt8(ascii: ":") }
            guard digits.count == 4, digits.allSatisfy({ (0x30...0x39).contains($0) }) else { return false }
            let value = digits.map { Int($0 - 0x30) }
            offset = (value[0] * 10 + value[1]) * 3600 + (value[2] * 10 + value[3]) * 60
            if sign == UInt8(ascii: "-") { offset = -offset }
        }
        // Whole seconds, so that a fraction is never rounded up into the next second.
        let local = Date(timeIntervalSince1970: (date.timeIntervalSince1970 + Double(offset)).rounded(.down))
        let shown = Array(Date.ISO8601FormatStyle().format(local).utf8.prefix(19))
        let asWritten = written.prefix(19).map { $0 == UInt8(ascii: "t") ? UInt8(ascii: "T") : $0 }
        return shown == asWritten
    }
}
