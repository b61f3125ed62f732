import AppleID
import Foundation
import OrchardTesting
import Testing

@Suite("Genuine Apple tokens and notifications")
struct RealAppleFixtureTests {
    private func verifier(_ fixture: RealAppleFixture, clientIDs: [String]? = nil, jwks: Data? = nil) throws -> (AppleTokenVerifier, TestWallClock) {
        let clock = TestWallClock(fixture.validInstant)
        let source = try StaticAppleKeySource(json: jwks ?? fixture.ownKeyJSON)
        let keys = AppleKeySet(source: source, clock: clock, logger: Shared.logger)
        return (AppleTokenVerifier(keys: keys, clientIDs: clientIDs ?? [fixture.payload.aud], clock: clock), clock)
    }

    private func failure(_ verifier: AppleTokenVerifier, _ fixture: RealAppleFixture) async -> AppleIDError.Code? {
        do {
            if fixture.isNotification {
                _ = try await verifier.verifyNotification(fixture.jwt)
            } else {
                _ = try await verifier.verifyIdentityToken(fixture.jwt, expectedAudience: fixture.payload.aud)
            }
            return nil
        } catch {
            return error.code
        }
    }

    @Test("every fixture is present: 14 identity tokens, 6 notifications, 3 negative controls, 12 key sets")
    func inventory() {
        let all = RealAppleFixture.all
        #expect(all.filter { !$0.isNegative && !$0.isNotification }.count == 14)
        #expect(all.filter { !$0.isNegative && $0.isNotification }.count == 6)
        #expect(all.filter(\.isNegative).count == 3)
        #expect(RealAppleFixture.jwksFiles.count == 12)
    }

    @Test(
        "a genuine token passes inside its validity window, with its own key and its aud as the client id",
        arguments: RealAppleFixture.all.filter { !$0.isNegative }
    )
    func genuinePasses(fixture: RealAppleFixture) async throws {
        let (verifier, _) = try verifier(fixture)
        if fixture.isNotification {
            let notification = try await verifier.verifyNotification(fixture.jwt)
            #expect(notification.aud == fixture.payload.aud)
            #expect(notification.iat == Date(timeIntervalSince1970: TimeInterval(fixture.payload.iat)))
            let events = try #require(fixture.payload.events)
            let type = try #require(try JSONSerialization.jsonObject(with: Data(events.utf8)) as? [String: Any])["type"] as? String
            #expect(notification.events.type == AppleNotificationType(rawValue: try #require(type)))
        } else {
            let claims = try await verifier.verifyIdentityToken(fixture.jwt, expectedAudience: fixture.payload.aud)
            #expect(claims.aud == fixture.payload.aud)
            #expect(claims.exp == Date(timeIntervalSince1970: TimeInterval(fixture.payload.exp)))
            #expect(claims.nonce == fixture.payload.nonce)
            #expect(claims.sub.value.hasPrefix("00"))
        }
    }

    @Test(
        "a genuine token passes against the whole key set it was published with",
        arguments: RealAppleFixture.all.filter { !$0.isNegative }
    )
    func genuinePassesWithFullKeySet(fixture: RealAppleFixture) async throws {
        let (verifier, _) = try verifier(fixture, jwks: try RealAppleFixture.data(named: fixture.jwkSourceFile))
        #expect(await failure(verifier, fixture) == nil)
    }

    @Test("a genuine token is expired once exp + leeway has passed", arguments: RealAppleFixture.all.filter { !$0.isNegative })
    func genuineExpires(fixture: RealAppleFixture) async throws {
        let (verifier, clock) = try verifier(fixture)
        clock.set(Date(timeIntervalSince1970: TimeInterval(fixture.payload.exp + 60)))
        #expect(await failure(verifier, fixture) == .identityTokenExpired)
    }

    @Test("a genuine token is refused for another audience", arguments: RealAppleFixture.all.filter { !$0.isNegative })
    func genuineWrongAudience(fixture: RealAppleFixture) async throws {
        let (verifier, _) = try verifier(fixture, clientIDs: ["com.example.not-this-app"])
        #expect(await failure(verifier, fixture) == .identityTokenAudience)
    }

    @Test("a tampered copy fails the signature check", arguments: RealAppleFixture.all.filter(\.isNegative))
    func negativeFails(fixture: RealAppleFixture) async throws {
        let (verifier, _) = try verifier(fixture)
        #expect(await failure(verifier, fixture) == .identityTokenSignature)
    }

    @Test(
        "inspection passes every check of a genuine token, nonce included when it has one",
        arguments: RealAppleFixture.all.filter { !$0.isNegative }
    )
    func inspectGenuine(fixture: RealAppleFixture) async throws {
        let (verifier, _) = try verifier(fixture)
        let report = await verifier.inspect(fixture.jwt, audiences: [fixture.payload.aud], at: nil, nonce: fixture.payload.nonce)
        #expect(report.passed)
        #expect(report.kind == (fixture.isNotification ? .notification : .identityToken))
        for name in [TokenInspection.CheckName.format, .signature, .iss, .aud, .exp, .iat] {
            #expect(report.outcome(of: name) == .pass)
        }
        if fixture.payload.nonce != nil, !fixture.isNotification {
            #expect(report.outcome(of: .nonce) == .pass)
        } else {
            #expect(report.outcome(of: .nonce) != .pass)
        }
        let text = report.lines.joined(separator: "\n")
        #expect(!text.contains(fixture.jwt.prefix(30)))
        #expect(!text.contains("privaterelay"))
        let subject = try #require(fixture.subject)
        #expect(!text.contains(subject))
        if let email = fixture.payload.email { #expect(!text.contains(email)) }
    }

    @Test("inspection of a tampered copy fails the signature alone", arguments: RealAppleFixture.all.filter(\.isNegative))
    func inspectNegative(fixture: RealAppleFixture) async throws {
        let (verifier, _) = try verifier(fixture)
        let report = await verifier.inspect(fixture.jwt, audiences: [fixture.payload.aud], at: nil, nonce: nil)
        #expect(!report.passed)
        #expect(report.checks.filter { if case .fail = $0.outcome { true } else { false } }.map(\.name) == [.signature])
        #expect(report.checks.first { $0.name == .signature }?.code == .identityTokenSignature)
    }

    @Test("inspection at an instant after exp + leeway fails exp only", arguments: RealAppleFixture.all.filter { !$0.isNegative })
    func inspectExpired(fixture: RealAppleFixture) async throws {
        let (verifier, _) = try verifier(fixture)
        let late = Date(timeIntervalSince1970: TimeInterval(fixture.payload.exp + 3600))
        let report = await verifier.inspect(fixture.jwt, audiences: nil, at: late, nonce: nil)
        #expect(!report.passed)
        #expect(report.outcome(of: .signature) == .pass)
        #expect(report.outcome(of: .aud) == .skipped("no audience given"))
        if case .fail = report.outcome(of: .exp) {} else { Issue.record("exp should fail") }
    }

    @Test("every real JWKS document loads, and each of its keys is cached under its kid", arguments: RealAppleFixture.jwksFiles)
    func jwksFilesLoad(name: String) async throws {
        let data = try RealAppleFixture.data(named: name)
        let kids = try #require(try JSONSerialization.jsonObject(with: data) as? [String: [[String: Any]]])["keys"]?
            .compactMap { $0["kid"] as? String }
        let keys = AppleKeySet(source: try StaticAppleKeySource(json: data), clock: TestWallClock(), logger: Shared.logger)
        for kid in try #require(kids) {
            _ = try await keys.key(for: kid)
        }
        #expect(await keys.cachedKeyIDs == kids?.sorted())
    }
}
