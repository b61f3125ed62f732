import Accounts
import AppleID
import AppleIDEmulator
import Foundation
import SQLKit
import Storage

/// Inserts accounts the way a sign-in leaves them: a grant at the emulator, the refresh and access tokens sealed under
/// the contexts Orchard opens them with, `apple_credential = 'valid'`, and one live session each.
///
/// Rows go in with multi-row `INSERT`s, a thousand accounts per transaction, instead of one sign-in each.
struct AccountLoader: Sendable {
    /// Accounts per transaction (13 bound columns each, well under SQLite's 32,766 bound variables).
    static let batchSize = 1_000

    let database: SQLiteDatabaseClient
    let emulator: AppleEmulator
    let vault: TokenVault
    let clientID: String
    /// The moment the benchmark's clock stands at.
    let now: Date

    private static let accountColumns = [
        "id", "subject_hash", "sealed_subject", "is_private_email", "email_forwarding", "client_id", "sealed_refresh_token",
        "sealed_access_token", "apple_credential", "last_validated_at", "next_validation_at", "created_at", "updated_at",
    ]
    private static let sessionColumns = ["token_hash", "account_id", "created_at", "expires_at"]

    /// Inserts `count` accounts, none of them due: each was validated within the last day and is next due between one
    /// hour and one day from now.
    func load(count: Int) async throws {
        var remaining = count
        while remaining > 0 {
            let size = min(remaining, Self.batchSize)
            let (accounts, sessions) = try makeRows(count: size)
            try await database.transaction { db in
                try await db.insert(into: "accounts").columns(Self.accountColumns).rows(accounts).run()
                try await db.insert(into: "sessions").columns(Self.sessionColumns).rows(sessions).run()
            }
            remaining -= size
        }
    }

    private func makeRows(count: Int) throws -> (accounts: [[any SQLExpression]], sessions: [[any SQLExpression]]) {
        var generator = SystemRandomNumberGenerator()
        let nowMilliseconds = Self.milliseconds(now)
        let day: Int64 = 86_400_000
        var accounts: [[any SQLExpression]] = []
        var sessions: [[any SQLExpression]] = []
        accounts.reserveCapacity(count)
        sessions.reserveCapacity(count)
        for _ in 0..<count {
            let id = "acct_" + Self.hex(bytes: 16, using: &generator)
            let user = EmulatedUser(sub: EmulatedUser.makeSubject(), email: nil, isPrivateEmail: false)
            let tokens = try emulator.issueGrant(user: user, clientID: clientID)
            let subject = Redacted(user.sub)
            let nextValidation = nowMilliseconds + Int64.random(in: (day / 24)...day, using: &generator)
            let values: [any Encodable & Sendable] = [
                id,
                vault.subjectHash(subject),
                try vault.seal(subject, context: "account:\(id):subject"),
                0,
                EmailForwarding.enabled.rawValue,
                clientID,
                try vault.seal(tokens.refreshToken, context: "account:\(id):refresh_token"),
                try vault.seal(tokens.accessToken, context: "account:\(id):access_token"),
                AppleCredentialState.valid.rawValue,
                nextValidation - day,
                nextValidation,
                nowMilliseconds - 30 * day,
                nowMilliseconds - 30 * day,
            ]
            accounts.append(values.map { SQLBind($0) })
            let session: [any Encodable & Sendable] = [
                Self.hex(bytes: 32, using: &generator), id, nowMilliseconds - day, nowMilliseconds + 29 * day,
            ]
            sessions.append(session.map { SQLBind($0) })
        }
        return (accounts, sessions)
    }

    /// Milliseconds since 1970, as Orchard stores instants.
    static func milliseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded())
    }

    private static func hex(bytes: Int, using generator: inout SystemRandomNumberGenerator) -> String {
        var text = ""
        text.reserveCapacity(bytes * 2)
        for _ in 0..<(bytes / 8) {
            let word = String(generator.next() as UInt64, radix: 16)
            text += String(repeating: "0", count: 16 - word.count) + word
        }
        return text
    }
}
