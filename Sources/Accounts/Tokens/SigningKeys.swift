import AppleID
public import Foundation
import JWTKit
import Synchronization

/// The keys that sign access tokens and verify them (`GET /.well-known/jwks.json`): their whole life, over the narrow
/// ``SigningKeyStore``. ``AccessTokens`` signs with them; `orchard keys` lists and rotates them.
///
/// Every replica keeps the keys in memory and reads them again at most every ``refreshInterval`` (and whenever the
/// schedule changes by itself), so neither the key set nor a token costs a database read of its own. The replica that
/// finds a key due makes it; the keys' generations keep two replicas from both adding one.
public struct SigningKeys: Sendable {
    /// How long a replica signs and publishes from memory before it reads the keys again: half of the 10 seconds within
    /// which `orchard keys rotate` reaches every replica, since a replica goes on with the keys in memory while it reads
    /// them again (a read slowed by a loaded database must not carry the old key past the 10 seconds).
    public static let refreshInterval: TimeInterval = 5

    /// A key as `orchard keys list` shows it.
    public struct KeyInfo: Sendable, Equatable {
        /// The key id (`kid`).
        public var id: String
        /// Its state now.
        public var state: SigningKeyState
        /// When it was made (and published).
        public var createdAt: Date
        /// When it signs (or signed) from.
        public var usedFrom: Date
        /// Until when it stays published: for a retired key, when its last token expires; for a withdrawn key, when
        /// it was withdrawn; `nil` while it is next or current.
        public var publishedUntil: Date?
    }

    /// What a rotation did.
    public struct Rotation: Sendable, Equatable {
        /// The new key, signing from now on.
        public var newKeyID: String
        /// The key that signed before it, if one did.
        public var previousKeyID: String?
        /// Whether that key was withdrawn from the key set at once.
        public var withdrewPrevious: Bool
    }

    /// The key that signs now, ready to sign.
    struct Signer: Sendable {
        let kid: String
        let keys: JWTKeyCollection
    }

    private struct Ring: Sendable {
        let schedule: KeySchedule
        let refreshBy: Date
        let loadedAt: Date
        let keySet: Data
        let signer: Signer?
    }

    private struct State {
        var ring: Ring?
        var reloading = false
    }

    /// The keys in memory, shared by every copy.
    private final class Memory: Sendable {
        let state = Mutex(State())
    }

    let store: any SigningKeyStore
    let vault: TokenVault
    let clock: any WallClock
    let random: any RandomSource
    /// Issuer, audiences, lifetimes.
    public let configuration: AccessTokenConfiguration
    private let memory = Memory()

    /// The schedule of `keys` under this configuration's lifetimes.
    func schedule(_ keys: [SigningKeyRecord]) -> KeySchedule {
        KeySchedule(keys: keys, ttl: configuration.ttl, lifetime: configuration.keyLifetime)
    }

    /// The JSON Web Key Set of the published keys (`{"keys": [...]}`), from memory.
    public func keySet() async throws(AccountsError) -> Data {
        try await currentRing().keySet
    }

    /// The key that signs now, from memory.
    func signer() async throws(AccountsError) -> Signer {
        guard let signer = try await currentRing().signer else {
            throw AccountsError(.storageUnavailable, "no access-token signing key is in use")
        }
        return signer
    }

    // MARK: For operators

    /// Every stored key with its state now.
    public func list() async throws(AccountsError) -> [KeyInfo] {
        let keys = try await storing { try await store.signingKeys() }
        let now = clock.now()
        let schedule = schedule(keys)
        return schedule.keys.reversed().map { key in
            let state = schedule.state(of: key, at: now)
            return KeyInfo(
                id: key.id,
                // A retired key whose tokens have all expired is still "retired" (the contract's four states), its
                // `published_until` in the past, until it is deleted a day later.
                state: state == .expired ? .retired : state,
                createdAt: key.createdAt,
                usedFrom: key.activatesAt,
                publishedUntil: key.withdrawnAt ?? schedule.publishedUntil(key, at: now)
            )
        }
    }

    /// Makes a new key that signs from now on (published at once: verifiers refetch the key set on an unknown `kid`);
    /// with `revokeCurrent`, the key that signed until now is withdrawn from the key set at once. A key that was
    /// waiting to take over is dropped (it never signed).
    public func rotate(revokeCurrent: Bool) async throws(AccountsError) -> Rotation {
        for _ in 0..<5 {
            let keys = try await storing { try await store.signingKeys() }
            let now = clock.now()
            let schedule = schedule(keys)
            let previous = schedule.current(at: now)
            let waiting = keys.filter { $0.withdrawnAt == nil && $0.activatesAt > now }.map(\.id)
            let key = try makeKey(generation: schedule.nextGeneration, at: now, activatesAt: now)
            let withdrawing = revokeCurrent ? [previous?.id].compactMap { $0 } : []
            let added = try await storing {
                try await store.changeSigningKeys(adding: key, withdrawing: withdrawing, deleting: waiting, at: now)
            }
            if added {
                memory.state.withLock { $0.ring = nil }
                return Rotation(newKeyID: key.id, previousKeyID: previous?.id, withdrewPrevious: !withdrawing.isEmpty)
            }
        }
        throw AccountsError(.storageUnavailable, "another key was being made at the same time, five times over; run the rotation again")
    }

    /// Reads the keys now, making the first one if there is none (`serve` at start).
    public func prepare() async throws(AccountsError) {
        memory.state.withLock { $0.ring = nil }
        _ = try await currentRing()
    }

    // MARK: The ring in memory

    /// The keys in memory, read again when they are older than ``refreshInterval`` or the schedule has moved on. One
    /// caller reads at a time; the others go on with what is in memory meanwhile (and with it while the database does
    /// not answer, trying again after ``refreshInterval``).
    private func currentRing() async throws(AccountsError) -> Ring {
        let now = clock.now()
        enum Next {
            case use(Ring)
            case reload(stale: Ring?)
        }
        let next: Next = memory.state.withLock { state in
            if let ring = state.ring, now >= ring.loadedAt, now < ring.refreshBy { return .use(ring) }
            if state.reloading, let ring = state.ring { return .use(ring) }
            state.reloading = true
            return .reload(stale: state.ring)
        }
        switch next {
        case .use(let ring):
            return ring
        case .reload(let stale):
            do {
                let ring = try await reload(at: now)
                memory.state.withLock {
                    $0.ring = ring
                    $0.reloading = false
                }
                return ring
            } catch {
                memory.state.withLock { state in
                    state.reloading = false
                    if let stale {
                        state.ring = Ring(
                            schedule: stale.schedule,
                            refreshBy: now.addingTimeInterval(Self.refreshInterval),
                            loadedAt: now,
                            keySet: stale.keySet,
                            signer: stale.signer
                        )
                    }
                }
                if let stale { return stale }
                throw error
            }
        }
    }

    /// Reads the keys; makes the one that is due and removes those no longer needed; builds the key set and the signer.
    private func reload(at now: Date) async throws(AccountsError) -> Ring {
        var keys = try await storing { try await store.signingKeys() }
        var schedule = schedule(keys)
        let removable = schedule.removable(at: now)
        let due = schedule.dueKeyActivation(at: now)
        if due != nil || !removable.isEmpty {
            let key = try due.map { activation throws(AccountsError) in
                try makeKey(generation: schedule.nextGeneration, at: now, activatesAt: activation)
            }
            // `false`: another replica made the key first; the read below finds it.
            _ = try await storing { try await store.changeSigningKeys(adding: key, withdrawing: [], deleting: removable, at: now) }
            keys = try await storing { try await store.signingKeys() }
            schedule = self.schedule(keys)
        }
        let published = schedule.published(at: now).map { key in
            JWK.ecdsa(.es256, identifier: JWKIdentifier(string: key.id), x: key.publicX, y: key.publicY, curve: .p256)
        }
        let keySet: Data
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            keySet = try encoder.encode(KeySetBody(keys: published))
        } catch {
            throw AccountsError(.internalError, "the key set could not be encoded")
        }
        var signer: Signer?
        if let current = schedule.current(at: now), let sealed = current.sealedPrivateKey {
            let key: ES256PrivateKey
            do {
                key = try ES256PrivateKey(pem: vault.open(sealed, context: SealingContext.signingKey(current.id)).value)
            } catch {
                throw AccountsError(.storageUnavailable, "the signing key \(current.id) cannot be opened with the configured vault keys")
            }
            signer = Signer(kid: current.id, keys: await JWTKeyCollection().add(ecdsa: key, kid: JWKIdentifier(string: current.id)))
        }
        let refreshBy = min(now.addingTimeInterval(Self.refreshInterval), schedule.nextChange(after: now) ?? .distantFuture)
        return Ring(schedule: schedule, refreshBy: refreshBy, loadedAt: now, keySet: keySet, signer: signer)
    }

    /// A new P-256 key, its private half sealed.
    private func makeKey(generation: Int, at now: Date, activatesAt: Date) throws(AccountsError) -> SigningKeyRecord {
        // To the millisecond below, as the database keeps instants: a key that signs at once has then begun by `now`.
        func stored(_ date: Date) -> Date { Date(timeIntervalSince1970: (date.timeIntervalSince1970 * 1000).rounded(.down) / 1000) }
        let key = ES256PrivateKey()
        let id = random.id("key_")
        guard let parameters = key.parameters else { throw AccountsError(.internalError, "a new signing key has no public parameters") }
        do {
            return SigningKeyRecord(
                id: id,
                generation: generation,
                sealedPrivateKey: try vault.seal(key.pemRepresentation, context: SealingContext.signingKey(id)),
                publicX: parameters.x,
                publicY: parameters.y,
                createdAt: stored(now),
                activatesAt: stored(activatesAt)
            )
        } catch {
            throw AccountsError(.internalError, "a new signing key could not be sealed")
        }
    }
}

/// `{"keys": [...]}`.
private struct KeySetBody: Encodable {
    let keys: [JWK]
}
