public import Foundation

/// The report of `orchard token inspect`: every check on an identity token or notification, with its outcome.
///
/// It holds no subject, email, nonce or token, so it can be printed whole.
public struct TokenInspection: Sendable, Equatable {
    /// What the token is, read from its payload: a notification has `events`.
    public enum Kind: String, Sendable, Equatable {
        /// An identity token.
        case identityToken = "identity token"
        /// A server-to-server notification.
        case notification = "notification"
    }

    /// The checks, in the order they run.
    public enum CheckName: String, Sendable, Equatable, CaseIterable {
        /// Three base64url parts, JSON header and payload, the claims Apple sends.
        case format
        /// `alg` RS256, `kid` in Apple's key set, valid signature.
        case signature
        /// The issuer is Apple's.
        case iss
        /// The audience is one of the given client ids.
        case aud
        /// Not expired.
        case exp
        /// Not issued in the future.
        case iat
        /// The nonce claim matches the given nonce.
        case nonce
    }

    /// How one check ended.
    public enum Outcome: Sendable, Equatable {
        /// The check passed.
        case pass
        /// The check failed, for this reason.
        case fail(String)
        /// The check was not run, for this reason.
        case skipped(String)
    }

    /// One check and its outcome.
    public struct Check: Sendable, Equatable {
        /// Which check.
        public let name: CheckName
        /// How it ended.
        public let outcome: Outcome
        /// The error code verification would fail with, for a failed check.
        public var code: AppleIDError.Code?
    }

    /// What the token is; `nil` when it could not be decoded.
    public let kind: Kind?
    /// The header's `kid`, when there is one.
    public let keyID: String?
    /// The header's `alg`, when there is one.
    public let algorithm: String?
    /// The (unverified) `iss`.
    public let issuer: String?
    /// The (unverified) `aud`.
    public let audience: String?
    /// The (unverified) `iat`.
    public let issuedAt: Date?
    /// The (unverified) `exp`.
    public let expiresAt: Date?
    /// For a notification, the (unverified) event type.
    public let notificationType: AppleNotificationType?
    /// The instant the time checks were evaluated at.
    public let evaluatedAt: Date
    /// Every check, in ``CheckName`` order.
    public let checks: [Check]

    /// True when no check failed (skipped checks do not count against it).
    public var passed: Bool {
        !checks.contains { if case .fail = $0.outcome { true } else { false } }
    }

    /// The outcome of one check.
    public func outcome(of name: CheckName) -> Outcome? {
        checks.first { $0.name == name }?.outcome
    }

    /// The report as plain-text lines: what the token is, then one line per check, then the verdict.
    ///
    /// Values from the token are unverified unless the signature passed; subject, email and nonce are never shown.
    public var lines: [String] {
        var lines = ["kind: \(kind?.rawValue ?? "unknown (not decodable)")"]
        if let algorithm { lines.append("alg: \(Self.clean(algorithm))") }
        if let keyID { lines.append("kid: \(Self.clean(keyID))") }
        if let issuer { lines.append("iss: \(Self.clean(issuer))") }
        if let audience { lines.append("aud: \(Self.clean(audience))") }
        if let issuedAt { lines.append("iat: \(issuedAt.formatted(.iso8601))") }
        if let expiresAt { lines.append("exp: \(expiresAt.formatted(.iso8601))") }
        if let notificationType { lines.append("event: \(Self.clean(notificationType.rawValue))") }
        lines.append("evaluated at: \(evaluatedAt.formatted(.iso8601))")
        let width = CheckName.allCases.map(\.rawValue.count).max() ?? 0
        for check in checks {
            let name = check.name.rawValue.padding(toLength: width, withPad: " ", startingAt: 0)
            switch check.outcome {
            case .pass:
                lines.append("\(name)  pass")
            case .fail(let reason):
                let code = check.code.map { " [\($0.rawValue)]" } ?? ""
                lines.append("\(name)  FAIL: \(reason)\(code)")
            case .skipped(let reason):
                lines.append("\(name)  skipped: \(reason)")
            }
        }
        lines.append(passed ? "result: pass" : "result: FAIL")
        return lines
    }

    /// A value from the token, shortened and without control characters, fit for a terminal.
    private static func clean(_ value: String) -> String {
        let cleaned = String(value.unicodeScalars.filter { !CharacterSet.controlCharacters.contains($0) }.map(Character.init))
        return cleaned.count > 80 ? cleaned.prefix(80) + "…" : cleaned
    }
}
