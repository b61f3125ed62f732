import AppleID
public import Foundation

/// Where a signing key is in its life.
public enum SigningKeyState: String, Sendable, Equatable {
    /// Published, not signing yet.
    case next
    /// Signing.
    case current
    /// No longer signing; published until the last token it signed has expired.
    case retired
    /// Taken out of the key set at once (a compromised key).
    case withdrawn
    /// Retired, and every token it signed has expired: no longer published.
    case expired
}

/// The signing keys' schedule at an instant, decided from the stored keys alone, so that every replica decides the
/// same: which key signs, which are published, when the next must be made and when it takes over.
///
/// A key is published at least `ttl` + 300 seconds before it signs (an installation's first key signs at once), signs
/// for `lifetime`, and stays published until `ttl` after the next key took over.
public struct KeySchedule: Sendable {
    /// Published this long (beyond the token lifetime) before a key signs, for verifiers' cached key sets.
    public static let publicationLead: TimeInterval = 300

    /// The keys, by generation.
    public let keys: [SigningKeyRecord]
    /// How long a token lives.
    public let ttl: TimeInterval
    /// How long a key signs before the next takes over.
    public let lifetime: TimeInterval

    /// The schedule of `keys`.
    public init(keys: [SigningKeyRecord], ttl: Duration, lifetime: Duration) {
        self.keys = keys.sorted { $0.generation < $1.generation }
        self.ttl = ttl.seconds
        self.lifetime = lifetime.seconds
    }

    /// The key that signs at `now`: the newest that has taken over and was not withdrawn.
    public func current(at now: Date) -> SigningKeyRecord? {
        keys.last { $0.activatesAt <= now && $0.withdrawnAt == nil }
    }

    /// When `key` stopped signing: when a newer key took over, if one has.
    func retiredAt(_ key: SigningKeyRecord, at now: Date) -> Date? {
        keys.filter { $0.generation > key.generation && $0.activatesAt <= now }.map(\.activatesAt).min()
    }

    /// Until when `key` is published: for a retired key, `ttl` after it stopped signing; `nil` while it is next or
    /// current (published on), and for a withdrawn one.
    public func publishedUntil(_ key: SigningKeyRecord, at now: Date) -> Date? {
        guard key.withdrawnAt == nil, let retired = retiredAt(key, at: now) else { return nil }
        return retired.addingTimeInterval(ttl)
    }

    /// `key`'s state at `now`.
    public func state(of key: SigningKeyRecord, at now: Date) -> SigningKeyState {
        if key.withdrawnAt != nil { return .withdrawn }
        if key.activatesAt > now { return .next }
        if key.id == current(at: now)?.id { return .current }
        if let until = publishedUntil(key, at: now), until <= now { return .expired }
        return .retired
    }

    /// The keys a verifier needs at `now`: the next ones, the current one, and the retired ones whose tokens may live.
    public func published(at now: Date) -> [SigningKeyRecord] {
        keys.filter { [.next, .current, .retired].contains(state(of: $0, at: now)) }
    }

    /// When a key to be made at `now` takes over, or `nil` when none is due: at once when nothing signs and nothing is
    /// waiting to; else, once the current key is within `ttl` + 300 s of its lifetime's end and no newer key exists,
    /// at that end, or `ttl` + 300 s from now if that is later.
    public func dueKeyActivation(at now: Date) -> Date? {
        guard let current = current(at: now) else {
            return keys.contains { $0.withdrawnAt == nil && $0.activatesAt > now } ? nil : now
        }
        guard !keys.contains(where: { $0.generation > current.generation && $0.withdrawnAt == nil }) else { return nil }
        let planned = current.activatesAt.addingTimeInterval(lifetime)
        guard now >= planned.addingTimeInterval(-(ttl + Self.publicationLead)) else { return nil }
        return max(planned, now.addingTimeInterval(ttl + Self.publicationLead))
    }

    /// The keys no longer needed at `now`: expired a day ago, or withdrawn a week ago.
    public func removable(at now: Date) -> [String] {
        keys.filter { key in
            if let withdrawn = key.withdrawnAt { return withdrawn.addingTimeInterval(7 * 86_400) < now }
            guard let until = publishedUntil(key, at: now) else { return false }
            return until.addingTimeInterval(86_400) < now
        }.map(\.id)
    }

    /// The next instant after `now` at which the schedule changes by itself (a key takes over, a publication ends, a
    /// key becomes due), if any.
    public func nextChange(after now: Date) -> Date? {
        var instants = keys.map(\.activatesAt) + keys.compactMap { publishedUntil($0, at: .distantFuture) }
        if let current = current(at: now) {
            instants.append(current.activatesAt.addingTimeInterval(lifetime - ttl - Self.publicationLead))
        }
        return instants.filter { $0 > now }.min()
    }

    /// The generation a new key takes.
    public var nextGeneration: Int { (keys.last?.generation ?? 0) + 1 }
}
