public import Accounts
public import Foundation
import SQLKit

extension SQLAccountStore: WebFlowStateStore {
    /// Stores a state. Expired states are removed by the retention job, in bounded batches, not by the request.
    public func insertWebFlowState(_ record: WebFlowStateRecord, now: Date) async throws {
        try await database.transaction { db in
            try await db.raw(
                """
                INSERT INTO web_flow_states (state_hash, sealed_nonce, return_to, expires_at)
                VALUES (\(bind: record.stateHash), \(bind: record.sealedNonce), \(bind: record.returnTo),
                        \(bind: record.expiresAt.milliseconds))
                """
            ).run()
        }
    }

    /// Deletes the state and returns what it held, in one statement.
    public func takeWebFlowState(hash: String) async throws -> WebFlowStateRecord? {
        try await database.withDatabase { db in
            let row = try await db.raw(
                """
                DELETE FROM web_flow_states WHERE state_hash = \(bind: hash)
                RETURNING state_hash, sealed_nonce, return_to, expires_at
                """
            ).first()
            return try row.map { row in
                WebFlowStateRecord(
                    stateHash: try row.string("state_hash"),
                    sealedNonce: try row.string("sealed_nonce"),
                    returnTo: try row.string("return_to"),
                    expiresAt: try row.date("expires_at") ?? Date(timeIntervalSince1970: 0)
                )
            }
        }
    }
}
