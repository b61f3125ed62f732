public import Foundation

/// One access-token signing key as stored: its private half sealed under the vault keys, its public half in clear.
public struct SigningKeyRecord: Sendable, Equatable {
    /// The key id (`kid`).
    public var id: String
    /// Its place in the order of keys: each new key takes the next, so two replicas cannot both add one.
    public var generation: Int
    /// The PKCS#8 PEM private key, sealed under ``SealingContext/signingKey(_:)``; `nil` once withdrawn.
    public var sealedPrivateKey: String?
    /// The public key's x coordinate, base64url.
    public var publicX: String
    /// The public key's y coordinate, base64url.
    public var publicY: String
    /// When it was made, and published.
    public var createdAt: Date
    /// When it starts signing.
    public var activatesAt: Date
    /// When it was withdrawn from the key set (`orchard keys rotate --revoke-current`).
    public var withdrawnAt: Date?

    /// Creates a record.
    public init(
        id: String,
        generation: Int,
        sealedPrivateKey: String?,
        publicX: String,
        publicY: String,
        createdAt: Date,
        activatesAt: Date,
        withdrawnAt: Date? = nil
    ) {
        self.id = id
        self.generation = generation
        self.sealedPrivateKey = sealedPrivateKey
        self.publicX = publicX
        self.publicY = publicY
        self.createdAt = createdAt
        self.activatesAt = activatesAt
        self.withdrawnAt = withdrawnAt
    }
}

/// Where the signing keys live, shared by every replica.
public protocol SigningKeyStore: Sendable {
    /// Every stored key, by generation.
    func signingKeys() async throws -> [SigningKeyRecord]
    /// In one transaction: adds `key` unless a key of its generation exists (another replica or command added one
    /// first: then `false` and nothing changes), withdraws `withdrawing` (its private key erased), and deletes
    /// `deleting` (keys that never signed, or whose tokens have all expired).
    func changeSigningKeys(adding key: SigningKeyRecord?, withdrawing: [String], deleting: [String], at: Date) async throws -> Bool
}
