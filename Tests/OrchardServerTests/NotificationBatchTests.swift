import Accounts
import AppleIDEmulator
import Foundation
import OrchardServer
import OrchardTesting
import Storage
import Synchronization
import Testing

/// A claimed batch of Apple's notifications is acted on in a few statements, not five per notification, and nothing
/// about it changes: each notification once, with its webhook, in the order they arrived for each subject.
@Suite("Notifications are processed in batches")
struct NotificationBatchTests {
    @Test("forty email-disabled notifications for forty accounts: one pass, far fewer statements than notifications, each acted on once")
    func fewStatements() async throws {
        let counting = Mutex<CountingDatabaseClient?>(nil)
        let webhooks: @Sendable (inout OrchardConfiguration) -> Void = {
            $0.webhooks.urls = [URL(string: "http://127.0.0.1:9/hooks")!]
            $0.webhooks.secret = OrchardHarness.webhookSecret
        }
        let countStatements: @Sendable (any DatabaseClient) -> any DatabaseClient = { base in
            let client = CountingDatabaseClient(base)
            counting.withLock { $0 = client }
            return client
        }
        try await OrchardHarness.with(configure: webhooks, wrapDatabase: countStatements, jobs: .byTest) { h in
            let database = try #require(counting.withLock { $0 })
            var users: [EmulatedUser] = []
            for _ in 0..<40 {
                let user = h.emulator.makeUser()
                _ = try await h.signUp(user)
                users.append(user)
            }
            // The same subject twice, in arrival order: the later one in a second round, after the first committed.
            let twice = users[0]
            for (index, user) in users.enumerated() {
                let payload = try h.emulator.signNotification(type: "email-disabled", sub: user.sub, clientID: OrchardHarness.clientID)
                #expect(try await h.postNotification(payload).status == 200)
                if index == 0 {
                    let again = try h.emulator.signNotification(type: "email-enabled", sub: twice.sub, clientID: OrchardHarness.clientID)
                    #expect(try await h.postNotification(again).status == 200)
                }
            }
            database.reset()
            let claimed = await h.runJobs(.notifications)
            #expect(claimed[.notifications] == 41)
            let statements = database.statements
            // The claim, two rounds of a lookup and a transaction, the completion; one by one, five per notification.
            #expect(statements <= 25, "\(statements) statements for 41 notifications: \(database.sent.map { String($0.prefix(60)) })")
            #expect(try await h.database.count("SELECT COUNT(*) AS n FROM notification_inbox WHERE processed_at IS NULL") == 0)
            #expect(try await h.database.count("SELECT COUNT(*) AS n FROM notification_inbox WHERE outcome = 'processed'") == 41)
            #expect(try await h.database.count("SELECT COUNT(*) AS n FROM accounts WHERE email_forwarding = 'disabled'") == 39)
            // The subject with two events ends as the later one left it.
            #expect(try await h.database.count("SELECT COUNT(*) AS n FROM accounts WHERE email_forwarding = 'enabled'") == 1)
            #expect(
                try await h.database.count(
                    "SELECT COUNT(*) AS n FROM webhook_outbox WHERE event_type = 'account.email_forwarding_changed'"
                ) == 41
            )
            // Nothing is left to do: a second pass claims nothing.
            #expect(await h.runJobs()[.notifications] == 0)
        }
    }
}
