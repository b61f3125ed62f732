public import Foundation
import JWTKit

/// `orchard token inspect`: every check reported, rather than the first failure thrown.
extension AppleTokenVerifier {
    /// Runs every check on `token` and reports each one; never throws.
    ///
    /// The steps are the very functions ``verifyIdentityToken(_:expectedAudience:)`` and ``verifyNotification(_:)`` run.
    /// - Parameters:
    ///   - token: An identity token or a notification JWS (told apart by `events` in the payload).
    ///   - audiences: The client ids `aud` may name; `nil` or empty skips the audience check.
    ///   - at: The instant to evaluate `exp` and `iat` at; `nil` means the verifier's clock.
    ///   - nonce: The raw nonce the token's `nonce` must match (itself or its SHA-256); `nil` skips the check.
    public func inspect(_ token: String, audiences: [String]?, at: Date?, nonce: String?) async -> TokenInspection {
        let now = at ?? clock.now()
        let jws: DecodedJWS
        do throws(AppleIDError) {
            jws = try DecodedJWS(token)
        } catch {
            return Self.report(jws: nil, now: now, checks: Self.undecodable(error))
        }

        var checks: [TokenInspection.Check] = []
        var notificationType: AppleNotificationType?
        do throws(AppleIDError) {
            switch jws.kind {
            case .identityToken:
                _ = try jws.claims(as: AppleIdentityClaims.self)
            case .notification:
                notificationType = try jws.claims(as: AppleNotification.self).events.type
            }
            checks.append(.init(name: .format, outcome: .pass))
        } catch {
            checks.append(Self.failed(.format, error))
        }

        do throws(AppleIDError) {
            try await checkSignature(jws)
            checks.append(.init(name: .signature, outcome: .pass))
        } catch {
            checks.append(Self.failed(.signature, error))
        }
        checks.append(Self.run(.iss) { () throws(AppleIDError) in try Self.checkIssuer(jws.envelope) })
        if let audiences, !audiences.isEmpty {
            checks.append(Self.run(.aud) { () throws(AppleIDError) in try Self.checkAudience(jws.envelope, allowed: audiences, expected: nil) })
        } else {
            checks.append(.init(name: .aud, outcome: .skipped("no audience given")))
        }
        checks.append(Self.run(.exp) { () throws(AppleIDError) in try checkExpiry(jws.envelope, now: now) })
        checks.append(Self.run(.iat) { () throws(AppleIDError) in try checkIssuedAt(jws.envelope, now: now) })
        if let nonce {
            if jws.kind == .notification {
                checks.append(.init(name: .nonce, outcome: .skipped("notifications carry no nonce")))
            } else {
                checks.append(Self.run(.nonce) { () throws(AppleIDError) in try Self.checkNonce(jws.envelope, raw: nonce) })
            }
        } else {
            checks.append(.init(name: .nonce, outcome: .skipped("no nonce given")))
        }
        return Self.report(jws: jws, notificationType: notificationType, now: now, checks: checks)
    }

    /// The checks of a token that could not be decoded: format failed, the rest skipped.
    private static func undecodable(_ error: AppleIDError) -> [TokenInspection.Check] {
        [failed(.format, error)]
            + TokenInspection.CheckName.allCases.dropFirst().map { .init(name: $0, outcome: .skipped("the token is malformed")) }
    }

    private static func run(_ name: TokenInspection.CheckName, _ step: () throws(AppleIDError) -> Void) -> TokenInspection.Check {
        do throws(AppleIDError) {
            try step()
            return .init(name: name, outcome: .pass)
        } catch {
            return failed(name, error)
        }
    }

    private static func failed(_ name: TokenInspection.CheckName, _ error: AppleIDError) -> TokenInspection.Check {
        .init(name: name, outcome: .fail(error.reason), code: error.code)
    }

    private static func report(
        jws: DecodedJWS?,
        notificationType: AppleNotificationType? = nil,
        now: Date,
        checks: [TokenInspection.Check]
    ) -> TokenInspection {
        TokenInspection(
            kind: jws?.kind,
            keyID: jws?.header.kid,
            algorithm: jws?.header.alg,
            issuer: jws?.envelope.iss,
            audience: jws?.envelope.aud?.joined(separator: ", "),
            issuedAt: jws?.envelope.iat,
            expiresAt: jws?.envelope.exp,
            notificationType: notificationType,
            evaluatedAt: now,
            checks: checks
        )
    }
}
