/// One step of the schema, written once in SQL that SQLite and PostgreSQL both accept.
struct Migration: Sendable {
    /// Applied in increasing order; never renumbered.
    let version: Int
    /// What the step is for.
    let summary: String
    /// The statements, run in one transaction.
    let statements: [String]
}

extension Migration {
    /// Every migration, oldest first.
    static let all: [Migration] = [
        Migration(
            version: 1,
            summary: "accounts, sessions, nonces, settings",
            statements: [
                """
                CREATE TABLE accounts (
                    id TEXT PRIMARY KEY,
                    subject_hash TEXT NOT NULL UNIQUE,
                    sealed_subject TEXT NOT NULL,
                    sealed_email TEXT,
                    is_private_email INTEGER NOT NULL,
                    email_forwarding TEXT NOT NULL,
                    sealed_name TEXT,
                    client_id TEXT NOT NULL,
                    sealed_refresh_token TEXT,
                    sealed_access_token TEXT,
                    sealed_identity_token TEXT,
                    apple_credential TEXT NOT NULL,
                    last_validated_at BIGINT,
                    next_validation_at BIGINT,
                    created_at BIGINT NOT NULL,
                    updated_at BIGINT NOT NULL
                )
                """,
                "CREATE INDEX accounts_next_validation_at ON accounts (next_validation_at)",
                """
                CREATE TABLE sessions (
                    token_hash TEXT PRIMARY KEY,
                    account_id TEXT NOT NULL,
                    created_at BIGINT NOT NULL,
                    expires_at BIGINT NOT NULL,
                    ended_at BIGINT,
                    end_reason TEXT
                )
                """,
                "CREATE INDEX sessions_account_id ON sessions (account_id)",
                "CREATE INDEX sessions_expires_at ON sessions (expires_at)",
                """
                CREATE TABLE nonces (
                    hash TEXT PRIMARY KEY,
                    expires_at BIGINT NOT NULL,
                    consumed_at BIGINT
                )
                """,
                "CREATE INDEX nonces_expires_at ON nonces (expires_at)",
                """
                CREATE TABLE orchard_settings (
                    name TEXT PRIMARY KEY,
                    value TEXT NOT NULL
                )
                """,
            ]
        )
    ]
}
