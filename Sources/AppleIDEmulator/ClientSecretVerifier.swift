import Crypto
import Foundation

/// Checks a client secret the way Apple does before any grant is looked at: an ES256 JWT from the configured key.
///
/// Apple answers every failure with a bare `invalid_client`; the reason returned here is the emulator's own note,
/// kept in the call log to help whoever debugs the client.
struct ClientSecretVerifier: Sendable {
    /// The audience every client secret must name.
    static let audience = "https://appleid.apple.com"
    /// The longest `exp - iat` Apple accepts: 15,777,000 s, about six months.
    static let maximumLifetime: TimeInterval = 15_777_000
    /// How far ahead of the emulator's clock `iat` may be.
    static let allowedClockSkew: TimeInterval = 60

    /// The `iss` every secret must carry.
    let teamID: String
    /// The header `kid` every secret must carry.
    let keyID: String
    /// The key whose signature every secret must carry.
    let publicKey: P256.Signing.PublicKey

    private struct Header: Decodable {
        var alg: String?
        var kid: String?
    }

    private struct Claims: Decodable {
        var iss: String?
        var sub: String?
        var aud: Audience?
        var iat: Double?
        var exp: Double?
    }

    private enum Audience: Decodable {
        case one(String)
        case many([String])

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let one = try? container.decode(String.self) {
                self = .one(one)
            } else {
                self = .many(try container.decode([String].self))
            }
        }

        func contains(_ value: String) -> Bool {
            switch self {
            case .one(let one): one == value
            case .many(let many): many.contains(value)
            }
        }
    }

    /// Returns why `secret` does not authenticate `clientID` (a client id of this verifier's team) at `now`, or `nil`
    /// when it does.
    func rejection(of secret: String, clientID: String, now: Date) -> String? {
        let parts = secret.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
            let headerData = Base64URL.decode(parts[0]),
            let payloadData = Base64URL.decode(parts[1]),
            let signatureData = Base64URL.decode(parts[2]),
            let header = try? JSONDecoder().decode(Header.self, from: headerData),
            let claims = try? JSONDecoder().decode(Claims.self, from: payloadData)
        else {
            return "client secret is not a JWT"
        }
        guard header.alg == "ES256" else { return "client secret alg is not ES256" }
        guard header.kid == keyID else { return "client secret kid is not the configured key id" }
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureData),
            publicKey.isValidSignature(signature, for: SHA256.hash(data: Data("\(parts[0]).\(parts[1])".utf8)))
        else {
            return "client secret signature does not verify with the configured key (it must be the raw 64-byte r||s)"
        }
        return claimsRejection(claims, clientID: clientID, now: now)
    }

    private func claimsRejection(_ claims: Claims, clientID: String, now: Date) -> String? {
        guard claims.iss == teamID else { return "client secret iss is not the team id" }
        guard claims.sub == clientID else { return "client secret sub is not the client_id" }
        guard let aud = claims.aud, aud.contains(Self.audience) else { return "client secret aud is not \(Self.audience)" }
        guard let iat = claims.iat, let exp = claims.exp else { return "client secret lacks iat or exp" }
        let nowSeconds = now.timeIntervalSince1970
        guard exp > nowSeconds else { return "client secret expired" }
        guard iat <= nowSeconds + Self.allowedClockSkew else { return "client secret iat is in the future" }
        guard exp > iat else { return "client secret exp is not after iat" }
        guard exp - iat <= Self.maximumLifetime else { return "client secret lives longer than 15777000 s" }
        return nil
    }
}
