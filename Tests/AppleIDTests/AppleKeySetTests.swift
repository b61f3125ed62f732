import AppleID
import Foundation
import OrchardTesting
import Testing

@Suite("Apple's key set cache")
struct AppleKeySetTests {
    @Test("keys are fetched on first use, once, not per token")
    func fetchedOnce() async throws {
        let harness = VerifierHarness()
        #expect(harness.source.fetchCount == 0)
        for _ in 0..<20 {
            #expect(await harness.identityFailure(try Shared.apple.sign(harness.claims())) == nil)
        }
        #expect(harness.source.fetchCount == 1)
    }

    @Test("100 tokens with random unknown kids within a minute cause at most one extra fetch; after 61 s one more is allowed")
    func unknownKidFlood() async throws {
        let harness = VerifierHarness()
        #expect(await harness.identityFailure(try Shared.apple.sign(harness.claims())) == nil)
        #expect(harness.source.fetchCount == 1)
        harness.clock.advance(by: 1)
        for index in 0..<100 {
            let kid = "random-\(index)-\(UInt32.random(in: 0...UInt32.max))"
            let token = try Shared.apple.sign(harness.claims(), header: ["kid": kid, "alg": "RS256"])
            #expect(await harness.identityFailure(token) == .identityTokenSignature)
            harness.clock.advance(by: 0.5)
        }
        #expect(harness.source.fetchCount <= 2)
        let afterFlood = harness.source.fetchCount
        harness.clock.advance(by: 61)
        for index in 0..<10 {
            let token = try Shared.apple.sign(harness.claims(), header: ["kid": "later-\(index)", "alg": "RS256"])
            #expect(await harness.identityFailure(token) == .identityTokenSignature)
        }
        #expect(harness.source.fetchCount == afterFlood + 1)
        #expect(await harness.identityFailure(try Shared.apple.sign(harness.claims())) == nil)
    }

    @Test("concurrent callers share one in-flight fetch")
    func concurrentCallersShareFetch() async throws {
        let harness = VerifierHarness(delay: .milliseconds(200))
        let token = try Shared.apple.sign(harness.claims())
        let unknown = try Shared.apple.sign(harness.claims(), header: ["kid": "UNKNOWN", "alg": "RS256"])
        let codes = await withTaskGroup(of: AppleIDError.Code?.self) { group in
            for index in 0..<40 {
                group.addTask { await harness.identityFailure(index.isMultiple(of: 2) ? token : unknown) }
            }
            var codes: [AppleIDError.Code?] = []
            for await code in group { codes.append(code) }
            return codes
        }
        #expect(codes.filter { $0 == nil }.count == 20)
        #expect(codes.filter { $0 == .identityTokenSignature }.count == 20)
        #expect(harness.source.fetchCount == 1)
    }

    @Test("Apple's keys unreachable with nothing cached is apple_unavailable, and the first call after recovery succeeds")
    func unreachableNothingCached() async throws {
        let harness = VerifierHarness()
        harness.source.setFailing(true)
        let token = try Shared.apple.sign(harness.claims())
        let error = await #expect(throws: AppleIDError.self) { try await harness.verifier.verifyIdentityToken(token) }
        #expect(error?.code == .appleUnavailable)
        #expect(error?.isTransient == true)
        #expect(await harness.identityFailure(token) == .appleUnavailable)
        #expect(harness.source.fetchCount == 2)
        harness.source.setFailing(false)
        #expect(await harness.identityFailure(token) == nil)
        #expect(harness.source.fetchCount == 3)
        // Once keys are cached the minute applies again: an unknown kid right after refetches nothing.
        let unknown = try Shared.apple.sign(harness.claims(), header: ["kid": "UNKNOWN", "alg": "RS256"])
        #expect(await harness.identityFailure(unknown) == .identityTokenSignature)
        #expect(harness.source.fetchCount == 3)
    }

    @Test("a flood of callers while Apple's keys are unreachable and nothing is cached shares one fetch")
    func unreachableFloodSharesFetch() async throws {
        let harness = VerifierHarness(delay: .milliseconds(200))
        harness.source.setFailing(true)
        let token = try Shared.apple.sign(harness.claims())
        let codes = await withTaskGroup(of: AppleIDError.Code?.self) { group in
            for _ in 0..<40 { group.addTask { await harness.identityFailure(token) } }
            var codes: [AppleIDError.Code?] = []
            for await code in group { codes.append(code) }
            return codes
        }
        #expect(codes.allSatisfy { $0 == .appleUnavailable })
        #expect(harness.source.fetchCount == 1)
    }

    @Test("Apple's keys unreachable with keys cached: known kids still verify, unknown ones fail the signature")
    func unreachableWithCache() async throws {
        let harness = VerifierHarness()
        #expect(await harness.identityFailure(try Shared.apple.sign(harness.claims())) == nil)
        harness.source.setFailing(true)
        harness.clock.advance(by: 120)
        let unknown = try Shared.apple.sign(harness.claims(), header: ["kid": "UNKNOWN", "alg": "RS256"])
        #expect(await harness.identityFailure(unknown) == .identityTokenSignature)
        #expect(await harness.identityFailure(try Shared.apple.sign(harness.claims())) == nil)
        #expect(harness.source.fetchCount == 2)
    }

    @Test("a key Apple starts publishing is found by the refetch an unknown kid triggers")
    func rotation() async throws {
        let harness = VerifierHarness()
        #expect(await harness.identityFailure(try Shared.apple.sign(harness.claims())) == nil)
        let next = try AppleIDTestTokens(kid: "NEXTKEY")
        harness.source.setJWKS(Shared.apple.jwksJSON(alsoHolding: [next.jwk]))
        harness.clock.advance(by: 61)
        #expect(await harness.identityFailure(try next.sign(harness.claims())) == nil)
        #expect(await harness.keys.cachedKeyIDs == ["NEXTKEY", "ORCHARDTEST1"])
    }

    @Test("keys older than the maximum age are refreshed; a key Apple withdrew then stops verifying")
    func maximumAge() async throws {
        let clock = TestWallClock()
        let source = AppleIDCountingKeySource(jwksJSON: Shared.apple.jwksJSON())
        let keys = AppleKeySet(source: source, clock: clock, maximumAge: .seconds(3600), logger: Shared.logger)
        _ = try await keys.key(for: Shared.apple.kid)
        clock.advance(by: 3599)
        _ = try await keys.key(for: Shared.apple.kid)
        #expect(source.fetchCount == 1)
        source.setJWKS(Data(#"{"keys":[]}"#.utf8))
        clock.advance(by: 1)
        // An empty key set is not taken: the cached keys stay.
        _ = try await keys.key(for: Shared.apple.kid)
        #expect(source.fetchCount == 2)
        let other = try AppleIDTestTokens(kid: "OTHER")
        source.setJWKS(other.jwksJSON())
        clock.advance(by: 60)
        let error = await #expect(throws: AppleIDError.self) { _ = try await keys.key(for: Shared.apple.kid) }
        #expect(error?.code == .identityTokenSignature)
        #expect(source.fetchCount == 3)
    }

    @Test("a JWKS document that is not JSON is a configuration error for a static source")
    func staticSourceRejectsJunk() {
        #expect(throws: AppleIDError.self) { try StaticAppleKeySource(json: Data("nope".utf8)) }
    }
}
