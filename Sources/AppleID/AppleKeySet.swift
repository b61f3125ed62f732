public import CryptoExtras
import Foundation
public import JWTKit
public import Logging
import Synchronization

/// Apple's public keys (the JWKS at `/auth/keys`), cached and refetched sparingly.
///
/// The keys are fetched on first use. A `kid` not in the cache triggers a refetch, but at most one per
/// `minimumRefetchInterval` (by the injected clock), and callers arriving while a fetch runs share it: a flood of tokens
/// with made-up key ids never becomes a flood of requests to Apple. Keys older than `maximumAge` are refreshed on next
/// use; if that refresh fails the cached keys stay in use. Until a first fetch has succeeded there is nothing to verify
/// with, so the interval does not apply: each caller may try again (still one fetch at a time, shared by everybody
/// waiting), and Orchard recovers as soon as Apple does rather than a minute later.
public actor AppleKeySet {
    /// How a fetch ended.
    private enum FetchOutcome: Sendable {
        case fetched
        case failed(String)
    }

    private let source: any AppleKeySource
    private let clock: any WallClock
    private let minimumRefetchInterval: TimeInterval
    private let maximumAge: TimeInterval
    private let logger: Logger

    private var keys: [String: JWTKit.Insecure.RSA.PublicKey] = [:]
    /// The same keys as swift-crypto verifying keys, made once per fetch rather than once per token.
    private var verifyingKeys: [String: _RSA.Signing.PublicKey] = [:]
    /// The verifying keys and when they were fetched, readable without entering the actor: every verification needs a
    /// key, and a hop onto the actor per token would move requests between threads under load (`Benchmarks/run`'s
    /// never-issued-nonce figure guards this).
    private nonisolated let current = Mutex<(keys: [String: _RSA.Signing.PublicKey], fetchedAt: Date?)>(([:], nil))
    private var fetchedAt: Date?
    private var attemptedAt: Date?
    private var inFlight: Task<FetchOutcome, Never>?

    /// Creates an empty cache; nothing is fetched until the first ``key(for:)``.
    /// - Parameters:
    ///   - source: Where the keys come from.
    ///   - clock: The clock that spaces refetches and ages the cache.
    ///   - minimumRefetchInterval: The least time between two fetches, whatever asks for them.
    ///   - maximumAge: How long fetched keys are used before a refresh is attempted.
    ///   - logger: Where fetches and their failures are logged.
    public init(
        source: any AppleKeySource,
        clock: any WallClock,
        minimumRefetchInterval: Duration = .seconds(60),
        maximumAge: Duration = .seconds(86_400),
        logger: Logger
    ) {
        self.source = source
        self.clock = clock
        self.minimumRefetchInterval = minimumRefetchInterval.seconds
        self.maximumAge = maximumAge.seconds
        self.logger = logger
    }

    /// The RSA public key Apple published under `kid`, for RS256 verification.
    /// - Throws: `apple_unavailable` when the keys cannot be fetched and none are cached; `identity_token_signature`
    ///   when `kid` is still unknown after the (rate-limited) refetch.
    public func key(for kid: String) async throws(AppleIDError) -> JWTKit.Insecure.RSA.PublicKey {
        let now = clock.now()
        let cached = keys[kid]
        if let cached, !isStale(at: now) { return cached }

        let outcome: FetchOutcome
        if let inFlight {
            outcome = await inFlight.value
        } else if mayFetch(at: now) {
            outcome = await fetch(at: now)
        } else if let cached {
            return cached
        } else {
            throw .signature("no key \(Self.printable(kid)) in Apple's key set (refetched recently)")
        }

        if let key = keys[kid] { return key }
        switch outcome {
        case .failed(let reason):
            if let cached { return cached }
            if fetchedAt == nil { throw .appleUnavailable("Apple's keys could not be fetched: \(reason)") }
            throw .signature("no key \(Self.printable(kid)) in Apple's key set (and refetching failed)")
        case .fetched:
            throw .signature("no key \(Self.printable(kid)) in Apple's key set")
        }
    }

    /// The RS256 verifying key for `kid`, by the same rules as ``key(for:)``.
    public nonisolated func verifyingKey(for kid: String) async throws(AppleIDError) -> _RSA.Signing.PublicKey {
        let now = clock.now()
        let maximumAge = self.maximumAge
        let cached = current.withLock { current -> _RSA.Signing.PublicKey? in
            guard let fetchedAt = current.fetchedAt, now.timeIntervalSince(fetchedAt) < maximumAge else { return nil }
            return current.keys[kid]
        }
        if let cached { return cached }
        return try await isolatedVerifyingKey(for: kid)
    }

    /// ``verifyingKey(for:)`` when the key is not cached or the cache is stale: on the actor, which may refetch.
    private func isolatedVerifyingKey(for kid: String) async throws(AppleIDError) -> _RSA.Signing.PublicKey {
        let key = try await key(for: kid)
        if let verifying = verifyingKeys[kid] { return verifying }
        do {
            let (modulus, exponent) = try key.getKeyPrimitives()
            return try _RSA.Signing.PublicKey(n: modulus, e: exponent)
        } catch {
            throw .signature("Apple's key \(Self.printable(kid)) is not a usable RSA key")
        }
    }

    /// The key ids currently cached, sorted (for diagnostics).
    public var cachedKeyIDs: [String] { keys.keys.sorted() }

    private func isStale(at now: Date) -> Bool {
        guard let fetchedAt else { return true }
        return now.timeIntervalSince(fetchedAt) >= maximumAge
    }

    private func mayFetch(at now: Date) -> Bool {
        guard fetchedAt != nil, let attemptedAt else { return true }
        let elapsed = now.timeIntervalSince(attemptedAt)
        return elapsed >= minimumRefetchInterval || elapsed < 0
    }

    /// Starts the one fetch everybody waits on, and applies its result to the cache.
    private func fetch(at now: Date) async -> FetchOutcome {
        attemptedAt = now
        let source = self.source
        let task = Task<FetchOutcome, Never> {
            let outcome: FetchOutcome
            do {
                outcome = self.apply(try await source.fetchKeys())
            } catch {
                outcome = .failed(Self.describe(error))
            }
            if case .failed(let reason) = outcome {
                self.logger.warning("Could not refresh Apple's keys", metadata: ["apple.error": "\(reason)"])
            }
            self.inFlight = nil
            return outcome
        }
        inFlight = task
        return await task.value
    }

    /// Replaces the cache with the RS256-capable RSA keys of `jwks`, unless it holds none.
    private func apply(_ jwks: JWKS) -> FetchOutcome {
        var fresh: [String: JWTKit.Insecure.RSA.PublicKey] = [:]
        var verifying: [String: _RSA.Signing.PublicKey] = [:]
        for jwk in jwks.keys {
            guard jwk.keyType == .rsa, let kid = jwk.keyIdentifier?.string, jwk.algorithm == nil || jwk.algorithm == .rs256,
                let modulus = jwk.modulus, let exponent = jwk.exponent
            else { continue }
            do {
                let key = try JWTKit.Insecure.RSA.PublicKey(modulus: modulus, exponent: exponent)
                let (n, e) = try key.getKeyPrimitives()
                verifying[kid] = try _RSA.Signing.PublicKey(n: n, e: e)
                fresh[kid] = key
            } catch {
                logger.warning("Skipping an unusable key in Apple's key set", metadata: ["apple.kid": "\(Self.printable(kid))"])
            }
        }
        guard !fresh.isEmpty else { return .failed("the key set holds no usable RS256 key") }
        keys = fresh
        verifyingKeys = verifying
        let now = clock.now()
        fetchedAt = now
        current.withLock { $0 = (verifying, now) }
        logger.debug("Refreshed Apple's keys", metadata: ["apple.kids": "\(fresh.keys.sorted().joined(separator: ","))"])
        return .fetched
    }

    private static func describe(_ error: any Error) -> String {
        if let error = error as? AppleIDError { return error.reason }
        return String(describing: type(of: error))
    }

    /// A key id as it may appear in a reason: it comes from an unverified header, so it is shortened.
    static func printable(_ kid: String) -> String {
        let short = kid.prefix(32)
        return "'" + short.filter { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" } + (kid.count > 32 ? "…'" : "'")
    }
}
