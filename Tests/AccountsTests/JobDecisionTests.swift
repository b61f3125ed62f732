import Accounts
import AppleID
import Foundation
import OrchardTesting
import Testing

/// What refresh validation, revocation and deletion decide, over the in-memory store with a scripted Apple.
@Suite("Job decisions: validation verdicts, retries, the deletion's revocation")
struct JobDecisionTests {
    /// Makes `subject`'s account due for validation now.
    func due(_ f: LifecycleFixture, _ subject: String) {
        f.store.edit { $0.accounts["acct_\(subject)"]?.nextValidationAt = f.clock.now() }
    }

    @Test("a valid refresh token moves the schedule on and keeps the new access token; the sessions stay")
    func validGrant() async throws {
        let f = LifecycleFixture()
        try f.account("ada")
        due(f, "ada")
        #expect(await f.lifecycle.validateDue(logger: f.logger) == 1)
        #expect(f.apple.validated == ["rt-1"])
        let account = try #require(f.store.snapshot.accounts["acct_ada"])
        #expect(try #require(account.nextValidationAt) >= f.clock.now().addingTimeInterval(86_400))
        #expect(account.sealedAccessToken != nil)
        #expect(f.endReason("ada") == nil)
        #expect(f.store.snapshot.validationLeases.isEmpty, "the validation's lease ends with it")
    }

    @Test("invalid_grant for the token still held ends every session and revokes the credential, once")
    func invalidGrant() async throws {
        let f = LifecycleFixture()
        try f.account("ada")
        due(f, "ada")
        f.apple.validations(answer: .invalidGrant)
        await f.lifecycle.validateDue(logger: f.logger)
        #expect(f.endReason("ada") == .appleCredentialRevoked)
        #expect(f.store.snapshot.accounts["acct_ada"]?.appleCredential == .revoked)
        #expect(f.store.snapshot.accounts["acct_ada"]?.nextValidationAt == nil)
        #expect(f.webhookTypes == ["account.credential_revoked"])
        #expect(await f.lifecycle.validateDue(logger: f.logger) == 0, "a revoked credential is not validated again")
    }

    @Test("invalid_grant for a token a sign-in replaced meanwhile is superseded: sessions, credential and schedule stay")
    func replacedToken() async throws {
        let f = LifecycleFixture()
        try f.account("ada")
        due(f, "ada")
        let claimed = try await f.store.claimDueValidations(now: f.clock.now(), leaseUntil: f.clock.now().addingTimeInterval(15), limit: 1)
        // A sign-in stores a new grant's token while Apple answers about the old one.
        let replaced = try f.vault.seal("rt-2", context: SealingContext.account("acct_ada", .refreshToken))
        let newSchedule = f.clock.now().addingTimeInterval(86_400)
        f.store.edit {
            $0.accounts["acct_ada"]?.sealedRefreshToken = replaced
            $0.accounts["acct_ada"]?.nextValidationAt = newSchedule
        }
        f.apple.validations(answer: .invalidGrant)
        let results = await f.lifecycle.engine.run(claimed: claimed, with: f.lifecycle.validationHandler, logger: f.logger)
        #expect(results.count == 1)
        #expect(f.endReason("ada") == nil)
        #expect(f.store.snapshot.accounts["acct_ada"]?.appleCredential == .valid)
        #expect(f.store.snapshot.accounts["acct_ada"]?.nextValidationAt == newSchedule)
        #expect(f.webhookTypes.isEmpty)
    }

    @Test("Apple unavailable keeps the sessions and retries with backoff; a refused client retries at the longest delay")
    func validationRetries() async throws {
        let f = LifecycleFixture()
        try f.account("ada")
        due(f, "ada")
        f.apple.validations(answer: .unavailable)
        await f.lifecycle.validateDue(logger: f.logger)
        let retry = try #require(f.store.snapshot.accounts["acct_ada"]?.nextValidationAt)
        #expect(retry > f.clock.now() && retry <= f.clock.now().addingTimeInterval(3))
        #expect(f.endReason("ada") == nil)
        f.clock.advance(by: 3)
        f.apple.validations(answer: .clientRejected)
        await f.lifecycle.validateDue(logger: f.logger)
        let afterRefusal = try #require(f.store.snapshot.accounts["acct_ada"]?.nextValidationAt)
        #expect(afterRefusal == f.clock.now().addingTimeInterval(600))
        #expect(f.endReason("ada") == nil, "an outage or a misconfiguration never signs anyone out")
    }

    @Test("a revocation Apple cannot take is retried with doubling backoff and one more attempt each time, then removed")
    func revocationRetries() async throws {
        let f = LifecycleFixture()
        let account = try f.account("ada")
        f.apple.revocations(answer: .unavailable)
        let result = try await f.deleteAsUser(account)
        #expect(result.appleRevocation == .pending)
        var delays: [TimeInterval] = []
        for _ in 0..<3 {
            let job = try #require(f.store.snapshot.revocations.values.first)
            delays.append(job.nextAttemptAt.timeIntervalSince(f.clock.now()))
            f.clock.set(job.nextAttemptAt)
            #expect(await f.lifecycle.engine.runPass(f.lifecycle.revocationHandler, logger: f.logger) == 1)
        }
        // The deletion's own attempt, then three by the job.
        #expect(f.store.snapshot.revocations.values.first?.attempts == 4)
        // Each wait roughly doubles (2 s, then 4 s, with a quarter of jitter).
        #expect(delays[2] > delays[1])
        f.apple.revocations(answer: .accepted)
        f.clock.set(try #require(f.store.snapshot.revocations.values.first).nextAttemptAt)
        await f.lifecycle.engine.runPass(f.lifecycle.revocationHandler, logger: f.logger)
        #expect(f.store.snapshot.revocations.isEmpty)
        #expect(f.apple.revoked.map(\.token) == ["rt-1", "rt-1", "rt-1", "rt-1", "rt-1"])
    }

    @Test(
        "a deletion revokes the refresh token it removed, else the access token, else answers manual_required",
        arguments: [("rt-9", "at-9", "refresh_token"), (nil, "at-9", "access_token"), (nil, nil, nil)] as [(String?, String?, String?)]
    )
    func deletionRevokes(_ refresh: String?, _ access: String?, _ hint: String?) async throws {
        let f = LifecycleFixture()
        let account = try f.account("ada", refreshToken: refresh, accessToken: access)
        let result = try await f.deleteAsUser(account)
        if let hint {
            #expect(result.appleRevocation == .revoked)
            #expect(f.apple.revoked.map(\.hint.rawValue) == [hint])
            #expect(f.apple.revoked.map(\.token) == [refresh ?? access!])
        } else {
            #expect(result.appleRevocation == .manualRequired)
            #expect(result.manualRevocationURL == DeletionResult.manualRevocationURL)
            #expect(f.apple.revoked.isEmpty)
        }
        #expect(f.store.snapshot.accounts.isEmpty)
        #expect(f.webhookTypes == ["account.deleted"])
    }
}
