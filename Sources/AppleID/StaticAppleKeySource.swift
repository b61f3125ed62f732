public import Foundation
public import JWTKit

/// A key set that never changes: a JWKS file for `orchard token inspect --jwks FILE`, or fixed keys in tests.
public struct StaticAppleKeySource: AppleKeySource {
    /// The keys handed out on every fetch.
    public let jwks: JWKS

    /// Serves the given key set.
    public init(jwks: JWKS) {
        self.jwks = jwks
    }

    /// Serves the key set in `json` (a JWKS document, `{"keys": [...]}`).
    /// - Throws: ``AppleIDError/Code-swift.enum/invalidConfiguration`` when the data is not a JWKS document.
    public init(json: Data) throws(AppleIDError) {
        do {
            self.jwks = try JSONDecoder().decode(JWKS.self, from: json)
        } catch {
            throw .invalidConfiguration("the key set is not a JWKS document ({\"keys\": [...]})")
        }
    }

    /// The fixed key set.
    public func fetchKeys() async throws -> JWKS { jwks }
}
