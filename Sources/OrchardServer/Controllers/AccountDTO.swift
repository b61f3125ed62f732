import Accounts
import Foundation

/// ACCOUNT as the API writes it.
struct AccountDTO: Encodable {
    var id: String
    var appleSub: String
    var email: String?
    var isPrivateEmail: Bool
    var emailForwarding: String
    var name: AccountView.Name?
    var createdAt: Date
    var appleCredential: String
    var lastValidatedAt: Date?

    init(_ view: AccountView) {
        id = view.id
        appleSub = view.appleSub
        email = view.email
        isPrivateEmail = view.isPrivateEmail
        emailForwarding = view.emailForwarding.rawValue
        name = view.name
        createdAt = view.createdAt
        appleCredential = view.appleCredential.rawValue
        lastValidatedAt = view.lastValidatedAt
    }

    enum CodingKeys: String, CodingKey {
        case id
        case appleSub = "apple_sub"
        case email
        case isPrivateEmail = "is_private_email"
        case emailForwarding = "email_forwarding"
        case name
        case createdAt = "created_at"
        case appleCredential = "apple_credential"
        case lastValidatedAt = "last_validated_at"
    }
}
