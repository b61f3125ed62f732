import Foundation
import OrchardTesting
import Storage
import Testing

@testable import Accounts

extension SQLAccountStoreTests {
    @Test(
        "a validation whose holder died is claimed again when its lease ends, ahead of accounts that fell due after it",
        arguments: StoreUnderTest.all
    )
    func validationLeaseKeepsItsPlace(_ kind: StoreUnderTest) async throws {
        try await kind.with { store in
            let now = Date(timeIntervalSince1970: 1_790_000_000)
            func signIn(_ id: String, due: TimeInterval) async throws {
                var record = AccountRecord.fixture(id: id, subjectHash: "s_\(id)", at: now)
                record.nextValidationAt = now.addingTimeInterval(due)
                let session = SessionRecord(
                    id: "sess_\(id)",
                    tokenHash: "t_\(id)",
                    accountID: id,
                    createdAt: now,
                    expiresAt: now.addingTimeInterval(600)
                )
                _ = try await store.recordSignIn(
                    SignInRecord(
                        account: record,
                        isNew: true,
                        session: session,
                        history: []
                    )
                )
            }
            try await signIn("acct_victim", due: -60)
            for index in 0..<16 { try await signIn("acct_\(index)", due: 5) }
            // A replica claims the victim and dies.
            let first = try await store.claimDueValidations(now: now, leaseUntil: now.addingTimeInterval(15), limit: 1)
            #expect(first.map(\.id) == ["acct_victim"])
            let held = try await store.claimDueValidations(now: now.addingTimeInterval(14.9), leaseUntil: now.addingTimeInterval(30), limit: 1)
            #expect(!held.map(\.id).contains("acct_victim"), "claimed again within its lease")
            // At the lease's end it is first in the queue again, before the sixteen that fell due after it.
            let again = try await store.claimDueValidations(now: now.addingTimeInterval(15), leaseUntil: now.addingTimeInterval(30), limit: 1)
            #expect(again.map(\.id) == ["acct_victim"])
            // Completing a validation ends its lease.
            try await store.completeValidations(
                [JobResult(job: again[0], outcome: .retry(at: now.addingTimeInterval(16), error: "apple_unavailable"))],
                at: now.addingTimeInterval(15)
            )
            let retried = try await store.claimDueValidations(now: now.addingTimeInterval(16), leaseUntil: now.addingTimeInterval(31), limit: 20)
            #expect(retried.count == 16, "every due account but the one claimed at 14.9 s")
            #expect(retried.map(\.id).contains("acct_victim"))
        }
    }
}
