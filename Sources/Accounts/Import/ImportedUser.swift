public import Foundation

/// One user of an import's file, in Orchard's terms, before anything is sealed.
public struct ImportedUser: Sendable, Equatable {
    /// The account id the source gave (its user id), or `nil` for a new Orchard id.
    public var accountID: String?
    /// Apple's `sub`; `nil` when the source holds no Apple identity for the user.
    public var subject: String?
    /// The line's client id, if it names one.
    public var clientID: String?
    /// The email, if any.
    public var email: String?
    /// Whether the source says the email is verified.
    public var emailVerified: Bool?
    /// Whether the source says the email is one of Apple's relay addresses (never guessed from the domain).
    public var isPrivateEmail: Bool?
    /// The given name.
    public var firstName: String?
    /// The family name.
    public var lastName: String?
    /// When the source created the user.
    public var createdAt: Date?
    /// Apple's refresh token, when the source kept it.
    public var refreshToken: String?

    /// A user with every field given.
    public init(
        accountID: String? = nil,
        subject: String? = nil,
        clientID: String? = nil,
        email: String? = nil,
        emailVerified: Bool? = nil,
        isPrivateEmail: Bool? = nil,
        firstName: String? = nil,
        lastName: String? = nil,
        createdAt: Date? = nil,
        refreshToken: String? = nil
    ) {
        self.accountID = accountID
        self.subject = subject
        self.clientID = clientID
        self.email = email
        self.emailVerified = emailVerified
        self.isPrivateEmail = isPrivateEmail
        self.firstName = firstName
        self.lastName = lastName
        self.createdAt = createdAt
        self.refreshToken = refreshToken
    }

    /// A source's single full name, split at its first space into first and last name.
    static func splitting(fullName: String?) -> (first: String?, last: String?) {
        guard let name = fullName?.trimmingCharacters(in: .whitespaces), !name.isEmpty else { return (nil, nil) }
        guard let space = name.firstIndex(of: " ") else { return (name, nil) }
        let last = name[name.index(after: space)...].trimmingCharacters(in: .whitespaces)
        return (String(name[..<space]), last.isEmpty ? nil : last)
    }

    /// The rule an account id must meet: 1 to 128 characters of `A-Z a-z 0-9 . _ - | : @`.
    public static func isAccountID(_ id: String) -> Bool {
        let bytes = id.utf8
        return (1...128).contains(bytes.count)
            && bytes.allSatisfy { byte in
                (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || Array(".-_|:@".utf8).contains(byte)
            }
    }
}
