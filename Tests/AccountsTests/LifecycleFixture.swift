import Accounts
import Foundation
import Logging
import OrchardTesting

@testable import AppleID

/// A lifecycle over the in-memory store, a scripted Apple and a test clock: the lifecycle's decisions, in milliseconds
/// and without a database.
struct LifecycleFixture {
    let store = InMemoryStore()
    let apple = ScriptedAppleGateway()
    let clock = TestWallClock()
    let vault = TokenVault(keys: [VaultKey.generate(id: "unit")])
    let lifecycle: Lifecycle
    let logger = Logger(label: "unit")

    init(policy: ConsentRevokedPolicy = .signOut, webhookURLs: [String] = ["https://hooks.example/in"]) {
        var configuration = AccountsConfiguration()
        configuration.consentRevokedPolicy = policy
        configuration.webhookURLs = webhookURLs
        lifecycle = Lifecycle(store: store, vault: vault, apple: apple, clock: clock, configuration: configuration)
    }

    /// An account of `subject` created now, granted `grantedAt` (now by default), with a refresh token and a live session.
    @discardableResult
    func account(_ subject: String, grantedAt: Date? = nil, refreshToken: String? = "rt-1", accessToken: String? = nil) throws -> AccountRecord {
        let now = clock.now()
        let id = "acct_\(subject)"
        var record = AccountRecord(
            id: id,
            subjectHash: vault.subjectHash(Redacted(subject)),
            sealedSubject: try vault.seal(subject, context: SealingContext.account(id, .subject)),
            sealedEmail: nil,
            isPrivateEmail: true,
            emailForwarding: .enabled,
            sealedName: nil,
            clientID: "com.example.app",
            sealedRefreshToken: try refreshToken.map { try vault.seal($0, context: SealingContext.account(id, .refreshToken)) },
            sealedAccessToken: try accessToken.map { try vault.seal($0, context: SealingContext.account(id, .accessToken)) },
            sealedIdentityToken: nil,
            appleCredential: refreshToken == nil ? .unknown : .valid,
            lastValidatedAt: now,
            nextValidationAt: now.addingTimeInterval(86_400),
            createdAt: now,
            updatedAt: now
        )
        record.grantedAt = grantedAt ?? now
        store.edit { tables in
            tables.accounts[id] = record
            tables.sessions["session-\(subject)"] = SessionRecord(
                id: "sess_\(subject)",
                tokenHash: "session-\(subject)",
                accountID: id,
                createdAt: now,
                expiresAt: now.addingTimeInterval(30 * 86_400)
            )
        }
        return record
    }

    /// Stores Apple's event of `type` about `subject` at `eventTime` in the inbox, as the endpoint would; returns its jti.
    @discardableResult
    func notification(_ type: AppleNotificationType, about subject: String, at eventTime: Date) throws -> String {
        let jti = "jti-\(UUID().uuidString)"
        let event = AppleNotificationEvent(type: type, sub: Redacted(subject), eventTimeMilliseconds: Int(eventTime.timeIntervalSince1970 * 1000))
        let json = String(decoding: try JSONEncoder().encode(event), as: UTF8.self)
        let entry = InboxEntry(
            jti: jti,
            receivedAt: clock.now(),
            eventType: type.rawValue,
            subjectDigest: "digest-\(subject)",
            sealedEvent: try vault.seal(json, context: SealingContext.notification(jti)),
            attempts: 0
        )
        store.edit { $0.inbox[jti] = InMemoryStore.InboxRow(entry: entry, nextAttemptAt: clock.now()) }
        return jti
    }

    /// Runs one pass of the notification handler; returns how many it claimed.
    @discardableResult
    func processNotifications() async -> Int {
        await lifecycle.engine.runPass(lifecycle.notificationHandler, logger: logger)
    }

    /// The outcome recorded for a notification.
    func outcome(_ jti: String) -> InboxOutcome.Kind? {
        store.snapshot.inbox[jti]?.processed?.outcome
    }

    /// Why the session of `subject` ended, if it did.
    func endReason(_ subject: String) -> SessionEndReason? {
        store.snapshot.sessions["session-\(subject)"]?.endReason
    }

    /// The webhook event types written, in order.
    var webhookTypes: [String] { store.snapshot.webhooks.map(\.delivery.eventType) }

    /// Deletes `account` as its user asks, revoking at Apple; the deletion's result.
    func deleteAsUser(_ account: AccountRecord) async throws -> DeletionResult {
        let deletion = try await lifecycle.changes.delete(
            accountID: account.id,
            sealedSubject: account.sealedSubject,
            reason: .userRequest,
            revoke: true,
            completesNotification: nil,
            condition: nil,
            logger: logger
        )
        guard case .deleted(let result) = deletion else { throw FixtureError.notDeleted("\(deletion)") }
        return result
    }
}

/// A fixture step that did not happen.
enum FixtureError: Error {
    case notDeleted(String)
}
