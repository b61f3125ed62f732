import Accounts
import Foundation

extension AccountRecord {
    /// An account as the storage tests store it: placeholder sealed values, a valid credential, validated `now`.
    static func fixture(id: String, subjectHash: String, at now: Date) -> AccountRecord {
        AccountRecord(
            id: id,
            subjectHash: subjectHash,
            sealedSubject: "v1.k.s",
            sealedEmail: nil,
            isPrivateEmail: true,
            emailForwarding: .enabled,
            sealedName: nil,
            clientID: "com.example.app",
            sealedRefreshToken: "v1.k.r",
            sealedAccessToken: nil,
            sealedIdentityToken: nil,
            appleCredential: .valid,
            lastValidatedAt: now,
            nextValidationAt: now.addingTimeInterval(86_400),
            createdAt: now,
            updatedAt: now
        )
    }
}
