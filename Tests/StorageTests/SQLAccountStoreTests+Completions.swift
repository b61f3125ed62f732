import Accounts
import Foundation
import OrchardTesting
import SQLKit
import Storage
import Testing

extension SQLAccountStoreTests {
    static func webhook(_ index: Int, at now: Date) -> WebhookDelivery {
        WebhookDelivery(
            id: "whd_\(index)",
            eventID: "evt_\(index)",
            eventType: "account.deleted",
            url: "https://hooks.example.com/\(index)",
            body: "{}",
            attempts: 0,
            createdAt: now
        )
    }

    static func inboxEntry(_ jti: String, at now: Date) -> InboxEntry {
        InboxEntry(jti: jti, receivedAt: now, eventType: "email-disabled", subjectDigest: "d-\(jti)", sealedEvent: "v1.k.e", attempts: 0)
    }

    @Test("one batch of webhook outcomes: delivered, retried and given up, each with one more attempt", arguments: Self.backends)
    func webhookCompletions(_ backend: TestDatabase.Backend) async throws {
        try await withStore(backend) { store, database in
            let now = Date(timeIntervalSince1970: 1_790_000_000)
            try await database.transaction { db in
                for index in 0..<4 {
                    let delivery = Self.webhook(index, at: now)
                    try await db.raw(
                        """
                        INSERT INTO webhook_outbox (id, event_id, event_type, url, body, status, attempts, next_attempt_at, created_at)
                        VALUES (\(bind: delivery.id), \(bind: delivery.eventID), \(bind: delivery.eventType), \(bind: delivery.url), '{}',
                            'pending', 0, \(bind: Int64(now.timeIntervalSince1970 * 1000)), \(bind: Int64(now.timeIntervalSince1970 * 1000)))
                        """
                    ).run()
                }
            }
            let claimed = try await store.claimWebhooks(now: now, leaseUntil: now.addingTimeInterval(60), limit: 10)
            #expect(claimed.map(\.id).sorted() == ["whd_0", "whd_1", "whd_2", "whd_3"])
            let byID = Dictionary(uniqueKeysWithValues: claimed.map { ($0.id, $0) })
            try await store.completeWebhooks(
                [
                    JobResult(job: try #require(byID["whd_0"]), outcome: .done),
                    JobResult(job: try #require(byID["whd_1"]), outcome: .done),
                    JobResult(job: try #require(byID["whd_2"]), outcome: .retry(at: now.addingTimeInterval(5), error: "HTTP 503")),
                    JobResult(job: try #require(byID["whd_3"]), outcome: .failed(error: "HTTP 410")),
                ],
                at: now.addingTimeInterval(1)
            )
            let delivered = try await store.webhooks(status: "delivered", limit: 10)
            #expect(delivered.map(\.delivery.id).sorted() == ["whd_0", "whd_1"])
            #expect(delivered.allSatisfy { $0.delivery.attempts == 1 && $0.nextAttemptAt == nil })
            let pending = try await store.webhooks(status: "pending", limit: 10)
            #expect(pending.map(\.delivery.id) == ["whd_2"])
            #expect(pending.first?.lastError == "HTTP 503")
            #expect(pending.first?.nextAttemptAt == now.addingTimeInterval(5))
            let failed = try await store.webhooks(status: "failed", limit: 10)
            #expect(failed.map(\.delivery.id) == ["whd_3"])
            #expect(failed.first?.lastError == "HTTP 410")
            // The retry is released (no lease) and due again at its time, not before.
            #expect(try await store.claimWebhooks(now: now.addingTimeInterval(4), leaseUntil: now.addingTimeInterval(64), limit: 10).isEmpty)
            let again = try await store.claimWebhooks(now: now.addingTimeInterval(5), leaseUntil: now.addingTimeInterval(65), limit: 10)
            #expect(again.map(\.id) == ["whd_2"])
            #expect(again.first?.attempts == 1)
        }
    }

    @Test("one batch of notification outcomes keeps what an account change recorded and marks the rest", arguments: Self.backends)
    func notificationCompletions(_ backend: TestDatabase.Backend) async throws {
        try await withStore(backend) { store, database in
            let now = Date(timeIntervalSince1970: 1_790_000_000)
            for jti in ["a", "b", "c"] {
                #expect(try await store.insertNotification(Self.inboxEntry(jti, at: now), nextAttemptAt: now))
            }
            let claimed = try await store.claimNotifications(now: now, leaseUntil: now.addingTimeInterval(60), limit: 10)
            #expect(claimed.count == 3)
            // "a" was acted on: its account change marked it processed in its own transaction.
            let millis = Int64(now.timeIntervalSince1970 * 1000)
            try await database.withDatabase { db in
                try await db.raw(
                    """
                    UPDATE notification_inbox SET processed_at = \(bind: millis), outcome = 'processed', sealed_event = NULL,
                        next_attempt_at = NULL, lease_until = NULL
                    WHERE jti = 'a'
                    """
                ).run()
            }
            let byJTI = Dictionary(uniqueKeysWithValues: claimed.map { ($0.jti, $0) })
            try await store.completeNotifications(
                [
                    JobResult(job: try #require(byJTI["a"]), outcome: .done(InboxOutcome(.unknownSubject))),
                    JobResult(job: try #require(byJTI["b"]), outcome: .done(InboxOutcome(.unknownType))),
                    JobResult(job: try #require(byJTI["c"]), outcome: .retry(at: now.addingTimeInterval(2), error: "boom")),
                ],
                at: now.addingTimeInterval(1)
            )
            let outcomes = try await database.withDatabase { db in
                try await db.raw("SELECT jti, outcome, sealed_event, attempts FROM notification_inbox ORDER BY jti").all().map { row in
                    [
                        try row.decode(column: "jti", as: String.self),
                        try row.decode(column: "outcome", as: String?.self) ?? "-",
                        try row.decode(column: "sealed_event", as: String?.self) == nil ? "dropped" : "kept",
                        String(try row.decode(column: "attempts", as: Int.self)),
                    ]
                }
            }
            #expect(outcomes == [["a", "processed", "dropped", "0"], ["b", "unknown_type", "dropped", "0"], ["c", "-", "kept", "1"]])
            #expect(try await store.claimNotifications(now: now.addingTimeInterval(1.5), leaseUntil: now.addingTimeInterval(61), limit: 10).isEmpty)
            let due = try await store.claimNotifications(now: now.addingTimeInterval(2), leaseUntil: now.addingTimeInterval(62), limit: 10)
            #expect(due.map(\.jti) == ["c"])
        }
    }
}
