import AppleID
import Crypto
import Foundation

/// The web flow's `state`: made when the browser leaves for Apple, taken (once) when Apple posts back.
///
/// Apple's form post is cross-site, so the browser sends no `SameSite=Lax` cookie with it; the state is therefore kept
/// server side and removed by the first post that presents it. It carries the raw nonce (sealed under the vault, bound
/// to the state) and the path to return to. A state lives as long as a nonce.
///
/// Each state is bound to the browser that started the flow by a second random value, the binder, which that browser
/// keeps in a cookie and posts back with the state. The row is keyed by the SHA-256 of the two together, so only a
/// hash of the binder is stored, and a post with a missing or foreign binder finds no row: it is refused without using
/// up the state (the flow's own browser can still complete it), and an attacker's kept form post replayed from a
/// victim's browser is refused (login CSRF).
public struct WebFlowStates: Sendable {
    let store: any WebFlowStateStore
    let vault: TokenVault
    let clock: any WallClock
    let random: any RandomSource
    /// How long a state may be posted back: as long as a nonce (``AccountsConfiguration/nonceLifetime``).
    public let lifetime: Duration

    /// Makes and stores a fresh state for one authorization.
    ///
    /// - Parameters:
    ///   - nonce: The nonce issued for it (``AccountDesk/issueNonce()``).
    ///   - returnTo: The path on this site to return to, already checked by the caller.
    /// - Returns: The state to send to Apple and the binder for the browser's cookie (256 random bits each,
    ///   base64url).
    /// - Throws: `storage_unavailable`.
    public func begin(nonce: IssuedNonce, returnTo: String) async throws(AccountsError) -> (state: String, binder: String) {
        let state = randomToken()
        let binder = randomToken()
        let hash = Self.hash(state, binder: binder)
        let now = clock.now()
        do {
            let record = WebFlowStateRecord(
                stateHash: hash,
                sealedNonce: try vault.seal(nonce.value, context: SealingContext.webFlowState(hash)),
                returnTo: returnTo,
                expiresAt: now.addingTimeInterval(lifetime.seconds)
            )
            try await store.insertWebFlowState(record, now: now)
        } catch {
            throw AccountsError.storage(error)
        }
        return (state, binder)
    }

    /// Takes the state Apple posted back, with the binder the browser's cookie holds: it cannot be used again,
    /// whatever happens next.
    ///
    /// - Throws: `state_invalid` for a state that is missing, malformed, unknown (never issued, or tampered with),
    ///   already taken, or expired, or posted without its browser's binder; `storage_unavailable`.
    public func take(_ state: String?, binder: String?) async throws(AccountsError) -> PendingWebFlow {
        guard let state, !state.isEmpty else { throw AccountsError(.stateInvalid, "Apple's post carries no state") }
        guard state.utf8.count <= 256, state.utf8.allSatisfy(Self.isBase64URL) else {
            throw AccountsError(.stateInvalid, "the state is not one Orchard issued")
        }
        guard let binder, !binder.isEmpty else {
            throw AccountsError(.stateInvalid, "the post came without the cookie of the browser that started the flow")
        }
        guard binder.utf8.count <= 256, binder.utf8.allSatisfy(Self.isBase64URL) else {
            throw AccountsError(.stateInvalid, "the flow's cookie is not one Orchard set")
        }
        let hash = Self.hash(state, binder: binder)
        let record: WebFlowStateRecord?
        do {
            record = try await store.takeWebFlowState(hash: hash)
        } catch {
            throw AccountsError.storage(error)
        }
        guard let record else {
            throw AccountsError(.stateInvalid, "the state is unknown, was already used, or belongs to another browser")
        }
        guard record.expiresAt > clock.now() else { throw AccountsError(.stateInvalid, "the state has expired") }
        let nonce: Redacted<String>
        do {
            nonce = try vault.open(record.sealedNonce, context: SealingContext.webFlowState(hash))
        } catch {
            throw AccountsError(.stateInvalid, "the state's nonce cannot be opened with the configured vault keys")
        }
        return PendingWebFlow(nonce: nonce.value, returnTo: record.returnTo)
    }

    /// SHA-256 of the state and its binder, lowercase hex: the stored key.
    static func hash(_ state: String, binder: String) -> String {
        SHA256.hash(data: Data("\(state).\(binder)".utf8)).hexString
    }

    /// 256 random bits, base64url without padding.
    private func randomToken() -> String {
        Base64URL.encode(random.bytes(32))
    }

    private static func isBase64URL(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "_"):
            true
        default:
            false
        }
    }
}
