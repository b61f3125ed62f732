public import Foundation

/// Every claim of an identity token Apple issues, read the way Apple sends them.
///
/// `email_verified`, `is_private_email` and `nonce_supported` are read from JSON booleans or from the strings
/// `"true"`/`"false"`; `aud` from a string or a one-element array. The subject, the email and the transfer subject are
/// ``Redacted``, so printing or dumping the claims never shows them.
public struct AppleIdentityClaims: Codable, Sendable, Equatable {
    /// `iss`: the issuer, `https://appleid.apple.com` for a genuine token.
    public var iss: String
    /// `aud`: the client id (bundle id or Services ID) the token was issued to.
    public var aud: String
    /// `exp`: when the token stops being valid.
    public var exp: Date
    /// `iat`: when Apple issued the token.
    public var iat: Date
    /// `sub`: the user's stable identifier for this team (`000123.<32 hex>.0456`).
    public var sub: Redacted<String>
    /// `email`: the user's address or their private relay address.
    public var email: Redacted<String>?
    /// `email_verified`: whether Apple verified the address (false for some managed Apple IDs).
    public var emailVerified: Bool?
    /// `is_private_email`: whether ``email`` is a private relay address.
    public var isPrivateEmail: Bool?
    /// `real_user_status`: 0 unsupported, 1 unknown, 2 likely real.
    public var realUserStatus: Int?
    /// `auth_time`: when the user authenticated.
    public var authTime: Date?
    /// `nonce`: the nonce the app passed to Apple (the raw nonce or its SHA-256, lowercase hex).
    public var nonce: String?
    /// `nonce_supported`: whether the platform supports nonces.
    public var nonceSupported: Bool?
    /// `c_hash`: the hash of the authorization code issued with this token.
    public var cHash: String?
    /// `at_hash`: the hash of the access token issued with this token.
    public var atHash: String?
    /// `transfer_sub`: the user's identifier from before an app transfer (for 60 days after it).
    public var transferSub: Redacted<String>?
    /// `org_id`: the organization of a managed Apple ID.
    public var orgID: String?

    private enum CodingKeys: String, CodingKey {
        case iss, aud, exp, iat, sub, email, nonce
        case emailVerified = "email_verified"
        case isPrivateEmail = "is_private_email"
        case realUserStatus = "real_user_status"
        case authTime = "auth_time"
        case nonceSupported = "nonce_supported"
        case cHash = "c_hash"
        case atHash = "at_hash"
        case transferSub = "transfer_sub"
        case orgID = "org_id"
    }

    /// Reads the claims as Apple sends them (see the type's documentation for the tolerated shapes).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        iss = try container.decode(String.self, forKey: .iss)
        aud = try container.decodeSingleAudience(forKey: .aud)
        exp = try container.decodeSeconds(forKey: .exp)
        iat = try container.decodeSeconds(forKey: .iat)
        sub = Redacted(try container.decode(String.self, forKey: .sub))
        email = try container.decodeIfPresent(String.self, forKey: .email).map(Redacted.init)
        emailVerified = try container.decodeLenientBoolIfPresent(forKey: .emailVerified)
        isPrivateEmail = try container.decodeLenientBoolIfPresent(forKey: .isPrivateEmail)
        realUserStatus = try container.decodeLenientIntIfPresent(forKey: .realUserStatus)
        authTime = try container.decodeSecondsIfPresent(forKey: .authTime)
        nonce = try container.decodeIfPresent(String.self, forKey: .nonce)
        nonceSupported = try container.decodeLenientBoolIfPresent(forKey: .nonceSupported)
        cHash = try container.decodeIfPresent(String.self, forKey: .cHash)
        atHash = try container.decodeIfPresent(String.self, forKey: .atHash)
        transferSub = try container.decodeIfPresent(String.self, forKey: .transferSub).map(Redacted.init)
        orgID = try container.decodeIfPresent(String.self, forKey: .orgID)
    }

    /// Writes the claims in Apple's shapes (seconds since 1970, JSON booleans); the redacted values are written in full.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(iss, forKey: .iss)
        try container.encode(aud, forKey: .aud)
        try container.encodeSeconds(exp, forKey: .exp)
        try container.encodeSeconds(iat, forKey: .iat)
        try container.encode(sub.value, forKey: .sub)
        try container.encodeIfPresent(email?.value, forKey: .email)
        try container.encodeIfPresent(emailVerified, forKey: .emailVerified)
        try container.encodeIfPresent(isPrivateEmail, forKey: .isPrivateEmail)
        try container.encodeIfPresent(realUserStatus, forKey: .realUserStatus)
        try container.encodeSecondsIfPresent(authTime, forKey: .authTime)
        try container.encodeIfPresent(nonce, forKey: .nonce)
        try container.encodeIfPresent(nonceSupported, forKey: .nonceSupported)
        try container.encodeIfPresent(cHash, forKey: .cHash)
        try container.encodeIfPresent(atHash, forKey: .atHash)
        try container.encodeIfPresent(transferSub?.value, forKey: .transferSub)
        try container.encodeIfPresent(orgID, forKey: .orgID)
    }
}
