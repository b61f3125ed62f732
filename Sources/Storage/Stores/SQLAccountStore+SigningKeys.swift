public import Accounts
public import Foundation
import SQLKit

extension SQLAccountStore: SigningKeyStore {
    /// Every stored key, by generation.
    public func signingKeys() async throws -> [SigningKeyRecord] {
        try await database.read(
            """
            SELECT id, generation, sealed_private_key, public_x, public_y, created_at, activates_at, withdrawn_at
            FROM signing_keys ORDER BY generation
            """
        ).map { row in
            SigningKeyRecord(
                id: try row.string("id"),
                generation: try row.decode(column: "generation", as: Int.self),
                sealedPrivateKey: try row.optionalString("sealed_private_key"),
                publicX: try row.string("public_x"),
                publicY: try row.string("public_y"),
                createdAt: try row.date("created_at") ?? Date(timeIntervalSince1970: 0),
                activatesAt: try row.date("activates_at") ?? Date(timeIntervalSince1970: 0),
                withdrawnAt: try row.date("withdrawn_at")
            )
        }
    }

    /// Adds a key unless its generation is taken, withdraws and deletes others, in one transaction.
    public func changeSigningKeys(adding key: SigningKeyRecord?, withdrawing: [String], deleting: [String], at: Date) async throws -> Bool {
        try await database.transaction { db in
            if let key {
                let inserted = try await db.raw(
                    """
                    INSERT INTO signing_keys (id, generation, sealed_private_key, public_x, public_y, created_at, activates_at)
                    VALUES (\(bind: key.id), \(bind: key.generation), \(bind: key.sealedPrivateKey), \(bind: key.publicX),
                            \(bind: key.publicY), \(bind: key.createdAt.milliseconds), \(bind: key.activatesAt.milliseconds))
                    ON CONFLICT (generation) DO NOTHING
                    RETURNING id
                    """
                ).all()
                guard !inserted.isEmpty else { return false }
            }
            if !withdrawing.isEmpty {
                try await db.raw(
                    """
                    UPDATE signing_keys SET withdrawn_at = \(bind: at.milliseconds), sealed_private_key = NULL
                    WHERE id IN (\(binds: withdrawing)) AND withdrawn_at IS NULL
                    """
                ).run()
            }
            if !deleting.isEmpty {
                try await db.raw("DELETE FROM signing_keys WHERE id IN (\(binds: deleting))").run()
            }
            return true
        }
    }
}
