import Crypto
import Foundation

/// Signs webhooks as the Standard Webhooks specification does: `v1,` + base64 of HMAC-SHA256 over
/// `id.timestamp.body`, with the secret written `whsec_` + base64 of the key (a value without that prefix is used as
/// the key's bytes).
public struct WebhookSigner: Sendable {
    private let key: SymmetricKey

    /// Creates a signer from `ORCHARD_WEBHOOK_SECRET`.
    public init(secret: String) {
        if secret.hasPrefix("whsec_"), let bytes = Data(base64Encoded: String(secret.dropFirst("whsec_".count))) {
            key = SymmetricKey(data: bytes)
        } else {
            key = SymmetricKey(data: Data(secret.utf8))
        }
    }

    /// The `webhook-signature` header value for one attempt.
    public func signature(id: String, timestamp: Int, body: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Data("\(id).\(timestamp).\(body)".utf8), using: key)
        return "v1," + Data(mac).base64EncodedString()
    }
}
