public import Foundation

/// Where web-flow states wait for Apple's form post; implemented by the Storage module over SQL, so that every replica
/// sees them.
public protocol WebFlowStateStore: Sendable {
    /// Stores a state (the retention job removes expired ones).
    func insertWebFlowState(_ record: WebFlowStateRecord, now: Date) async throws
    /// Removes the state with this hash and returns it (expired or not), atomically: of two concurrent takes of one
    /// state, one gets it and the other `nil`. `nil` as well for a state never stored or already taken.
    func takeWebFlowState(hash: String) async throws -> WebFlowStateRecord?
}
