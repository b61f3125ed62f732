import AppleID
import Foundation
import Logging

/// One line of a transfer file: what the sending team hands the receiving one for an account. Never the subject or the
/// email.
public struct TransferLine: Codable, Sendable, Equatable {
    /// Orchard's account id, kept through the move.
    public var accountID: String
    /// The app's client id (it moves to the receiving team with the app).
    public var clientID: String
    /// Apple's transfer identifier for the user.
    public var transferSub: String
    /// The name from the user's first authorization, if any.
    public var name: AccountView.Name?

    private enum CodingKeys: String, CodingKey {
        case name
        case accountID = "account_id"
        case clientID = "client_id"
        case transferSub = "transfer_sub"
    }

    /// Whether an account id can be taken as it is: letters, digits, `_` and `-`, at most 128 characters.
    public static func isValidAccountID(_ id: String) -> Bool {
        !id.isEmpty && id.count <= 128
            && id.unicodeScalars.allSatisfy { CharacterSet.alphanumerics.contains($0) && $0.isASCII || $0 == "_" || $0 == "-" }
    }
}

/// What one run of `transfer export` or `transfer import` ended with: the accounts it covered, by state.
public struct TransferOutcome: Sendable, Equatable {
    /// Accounts by state.
    public var counts: [TransferState: Int] = [:]
    /// Accounts created by this run (receiving side).
    public var imported = 0
    /// The sending side's lines, for the file (sending side).
    public var lines: [TransferLine] = []

    /// Creates an empty outcome.
    public init() {}

    /// The count of one state.
    public subscript(state: TransferState) -> Int { counts[state] ?? 0 }
}
