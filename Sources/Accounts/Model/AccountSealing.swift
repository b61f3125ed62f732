import AppleID
import Foundation

/// Sealing and opening an account's personal data under its contexts: a new account's record, a name, and the
/// opened view an answer shows. Sign-in, app transfer and the operators' reads all use it.
struct AccountSealing: Sendable {
    let vault: TokenVault

    /// A new account keyed by `subject`, sealed, with no email, name or Apple tokens yet (`apple_credential` unknown).
    func newAccount(id: String, subject: Redacted<String>, clientID: String, at now: Date) throws -> AccountRecord {
        AccountRecord(
            id: id,
            subjectHash: vault.subjectHash(subject),
            sealedSubject: try vault.seal(subject.value, context: SealingContext.account(id, .subject)),
            sealedEmail: nil,
            isPrivateEmail: false,
            emailForwarding: .enabled,
            sealedName: nil,
            clientID: clientID,
            sealedRefreshToken: nil,
            sealedAccessToken: nil,
            sealedIdentityToken: nil,
            appleCredential: .unknown,
            lastValidatedAt: nil,
            nextValidationAt: nil,
            createdAt: now,
            updatedAt: now
        )
    }

    /// A name as stored: JSON `{"first_name", "last_name"}`, sealed under the account's `name` context.
    func sealName(_ name: AccountView.Name, accountID: String) throws -> String {
        try vault.seal(String(decoding: try JSONEncoder().encode(name), as: UTF8.self), context: SealingContext.account(accountID, .name))
    }

    /// An account's shown fields, opened.
    ///
    /// - Throws: `storage_unavailable` when a value cannot be opened with the configured vault keys.
    func view(of record: SealedAccountView) throws(AccountsError) -> AccountView {
        do {
            let subject = try vault.open(record.sealedSubject, context: SealingContext.account(record.id, .subject))
            let email = try record.sealedEmail.map { try vault.open($0, context: SealingContext.account(record.id, .email)) }
            let name = try record.sealedName.map { sealed -> AccountView.Name? in
                let json = try vault.open(sealed, context: SealingContext.account(record.id, .name))
                return try? JSONDecoder().decode(AccountView.Name.self, from: Data(json.value.utf8))
            }
            return AccountView(
                id: record.id,
                appleSub: subject.value,
                email: email?.value,
                isPrivateEmail: record.isPrivateEmail,
                emailForwarding: record.emailForwarding,
                name: name ?? nil,
                createdAt: record.createdAt,
                appleCredential: record.appleCredential,
                lastValidatedAt: record.lastValidatedAt,
                orgID: record.orgID,
                emailVerified: record.emailVerified
            )
        } catch {
            throw AccountsError(.storageUnavailable, "a stored value of account \(record.id) cannot be opened with the configured vault keys")
        }
    }
}
