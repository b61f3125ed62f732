public import AppleID
import Crypto
import Foundation

/// The web flow's `state`: made when the browser leaves for Apple, taken (once) when Apple posts back.
///
/// Apple's form post is cross-site, so the browser sends no `SameSite=Lax` cookie with it; the state is therefore kept
/// server side, found by its SHA-256 alone, and removed by the first post that presents it. It carries the raw nonce
/// (sealed under the vault, bound to the state) and the path to return to. A state lives as long as a nonce.
public struct WebFlowStates: Sendable {
    let store: any WebFlowStateStore
    let vault: TokenVault
    let clock: any WallClock
    let random: any RandomSource
    let lifetime: Duration

    /// Creates the states over their store.
    ///
    /// - Parameter lifetime: How long a state may be posted back: 10 minutes, as a nonce.
    public init(
        store: any WebFlowStateStore,
        vault: TokenVault,
        clock: any WallClock,
        random: any RandomSource = SystemRandomSource(),
        lifetime: Duration = .seconds(600)
    ) {
        self.store = store
        self.vault = vault
        self.clock = clock
        self.random = random
        self.lifetime = lifetime
    }

    /// Makes and stores a fresh state for one authorization.
    ///
    /// - Parameters:
    ///   - nonce: The nonce issued for it (``Accounts/issueNonce()``).
    ///   - returnTo: The path on this site to return to, already checked by the caller.
    /// - Returns: The state to send to Apple (256 random bits, base64url).
    /// - Throws: `storage_unavailable`.
    public func begin(nonce: IssuedNonce, returnTo: String) async throws(AccountsError) -> String {
        let state = Data(random.bytes(32)).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        let hash = Self.hash(state)
        let now = clock.now()
        do {
            let record = WebFlowStateRecord(
                stateHash: hash,
                sealedNonce: try vault.seal(nonce.value, context: Self.context(hash)),
                returnTo: returnTo,
                expiresAt: now.addingTimeInterval(lifetime.seconds)
            )
            try await store.insertWebFlowState(record, now: now)
        } catch {
            throw AccountsError.storage(error)
        }
        return state
    }

    /// Takes the state Apple posted back: it cannot be used again, whatever happens next.
    ///
    /// - Throws: `state_invalid` for a state that is missing, malformed, unknown (never issued, or tampered with),
    ///   already taken, or expired; `storage_unavailable`.
    public func take(_ state: String?) async throws(AccountsError) -> PendingWebFlow {
        guard let state, !state.isEmpty else { throw AccountsError(.stateInvalid, "Apple's post carries no state") }
        guard state.utf8.count <= 256, state.utf8.allSatisfy(Self.isBase64URL) else {
            throw AccountsError(.stateInvalid, "the state is not one Orchard issued")
        }
        let hash = Self.hash(state)
        let record: WebFlowStateRecord?
        do {
            record = try await store.takeWebFlowState(hash: hash)
        } catch {
            throw AccountsError.storage(error)
        }
        guard let record else { throw AccountsError(.stateInvalid, "the state is unknown or was already used") }
        guard record.expiresAt > clock.now() else { throw AccountsError(.stateInvalid, "the state has expired") }
        let nonce: Redacted<String>
        do {
            nonce = try vault.open(record.sealedNonce, context: Self.context(hash))
        } catch {
            throw AccountsError(.stateInvalid, "the state's nonce cannot be opened with the configured vault keys")
        }
        return PendingWebFlow(nonce: nonce.value, returnTo: record.returnTo)
    }

    /// SHA-256 of the state, lowercase hex: the stored key.
    static func hash(_ state: String) -> String {
        SHA256.hash(data: Data(state.utf8)).hexString
    }

    /// Binds the sealed nonce to its state.
    static func context(_ hash: String) -> String {
        "web_flow:\(hash):nonce"
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
