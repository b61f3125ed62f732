import Accounts
import SQLKit

/// One step of the schema, written once in SQL that SQLite and PostgreSQL both accept.
struct Migration: Sendable {
    /// Applied in increasing order; never renumbered.
    let version: Int
    /// What the step is for.
    let summary: String
    /// The statements, run in one transaction.
    let statements: [String]
    /// What the step fills in for existing rows, after its statements and in their transaction, where SQL the two
    /// dialects share cannot (a random value per row).
    var backfill: (@Sendable (any SQLDatabase, any RandomSource) async throws -> Void)? = nil
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
        ),
        Migration(
            version: 2,
            summary: "revocation outbox, audit log, notification inbox, webhook outbox",
            statements: [
                """
                CREATE TABLE revocations (
                    id TEXT PRIMARY KEY,
                    client_id TEXT NOT NULL,
                    sealed_token TEXT NOT NULL,
                    token_type_hint TEXT NOT NULL,
                    attempts INTEGER NOT NULL,
                    next_attempt_at BIGINT NOT NULL,
                    lease_until BIGINT,
                    last_error TEXT,
                    created_at BIGINT NOT NULL
                )
                """,
                "CREATE INDEX revocations_next_attempt_at ON revocations (next_attempt_at)",
                """
                CREATE TABLE audit_events (
                    id TEXT PRIMARY KEY,
                    subject_digest TEXT NOT NULL,
                    event TEXT NOT NULL,
                    reason TEXT,
                    occurred_at BIGINT NOT NULL
                )
                """,
                "CREATE INDEX audit_events_subject_digest ON audit_events (subject_digest)",
                """
                CREATE TABLE notification_inbox (
                    jti TEXT PRIMARY KEY,
                    received_at BIGINT NOT NULL,
                    event_type TEXT NOT NULL,
                    subject_digest TEXT NOT NULL,
                    sealed_event TEXT,
                    attempts INTEGER NOT NULL,
                    next_attempt_at BIGINT,
                    lease_until BIGINT,
                    processed_at BIGINT,
                    outcome TEXT
                )
                """,
                "CREATE INDEX notification_inbox_next_attempt_at ON notification_inbox (next_attempt_at)",
                "CREATE INDEX notification_inbox_subject_digest ON notification_inbox (subject_digest)",
                """
                CREATE TABLE webhook_outbox (
                    id TEXT PRIMARY KEY,
                    event_id TEXT NOT NULL,
                    event_type TEXT NOT NULL,
                    url TEXT NOT NULL,
                    body TEXT NOT NULL,
                    status TEXT NOT NULL,
                    attempts INTEGER NOT NULL,
                    next_attempt_at BIGINT,
                    lease_until BIGINT,
                    last_error TEXT,
                    created_at BIGINT NOT NULL,
                    delivered_at BIGINT
                )
                """,
                "CREATE INDEX webhook_outbox_next_attempt_at ON webhook_outbox (next_attempt_at)",
                "CREATE INDEX webhook_outbox_status ON webhook_outbox (status)",
            ]
        ),
        Migration(
            version: 3,
            summary: "web-flow states (the state and sealed nonce between the redirect to Apple and its form post)",
            statements: [
                """
                CREATE TABLE web_flow_states (
                    state_hash TEXT PRIMARY KEY,
                    sealed_nonce TEXT NOT NULL,
                    return_to TEXT NOT NULL,
                    expires_at BIGINT NOT NULL
                )
                """,
                "CREATE INDEX web_flow_states_expires_at ON web_flow_states (expires_at)",
            ]
        ),
        Migration(
            version: 4,
            summary: "the webhook claim ranges over pending rows by due time (status alone made a tick read every pending row)",
            statements: [
                "DROP INDEX webhook_outbox_status",
                "CREATE INDEX webhook_outbox_status_next_attempt_at ON webhook_outbox (status, next_attempt_at)",
            ]
        ),
        Migration(
            version: 5,
            summary: "retention: processed notifications and delivered webhooks are found by age through an index",
            statements: [
                // Partial, so that the claims (which look for processed_at IS NULL) keep their due-time indexes.
                "CREATE INDEX notification_inbox_processed_at ON notification_inbox (processed_at) WHERE processed_at IS NOT NULL",
                "CREATE INDEX webhook_outbox_delivered_at ON webhook_outbox (delivered_at) WHERE delivered_at IS NOT NULL",
            ]
        ),
        Migration(
            version: 6,
            summary: "app transfer (TN3159): each account's transfer state, on the sending and on the receiving side",
            statements: [
                """
                CREATE TABLE transfer_exports (
                    account_id TEXT PRIMARY KEY,
                    client_id TEXT NOT NULL,
                    target_team TEXT NOT NULL,
                    state TEXT NOT NULL,
                    sealed_transfer_sub TEXT,
                    attempts INTEGER NOT NULL,
                    last_error TEXT,
                    updated_at BIGINT NOT NULL
                )
                """,
                // An imported account is found by its transfer identifier through accounts.subject_hash until the
                // exchange re-keys it; this table only says where each one stands.
                """
                CREATE TABLE transfer_imports (
                    account_id TEXT PRIMARY KEY,
                    client_id TEXT NOT NULL,
                    state TEXT NOT NULL,
                    attempts INTEGER NOT NULL,
                    last_error TEXT,
                    updated_at BIGINT NOT NULL
                )
                """,
            ]
        ),
        Migration(
            version: 7,
            summary: "acting on what was read: each account's latest grant, a lease of its own for a validation, ended sessions found by age",
            statements: [
                // The last successful code exchange; NULL (older rows) reads as the account's creation.
                "ALTER TABLE accounts ADD COLUMN granted_at BIGINT",
                // A claimed validation's lease, so that the claim leaves next_validation_at (its place in the queue) alone.
                "ALTER TABLE accounts ADD COLUMN validation_lease_until BIGINT",
                "CREATE INDEX sessions_ended_at ON sessions (ended_at) WHERE ended_at IS NOT NULL",
            ]
        ),
        Migration(
            version: 8,
            summary: "the replicas that answer session checks from memory, each while its lease is current",
            statements: [
                "CREATE TABLE session_cache_replicas (id TEXT PRIMARY KEY, lease_until BIGINT NOT NULL)"
            ]
        ),
        Migration(
            version: 9,
            summary: "sessions per device: each session's public id, its sealed device label, when it was last checked",
            statements: [
                "ALTER TABLE sessions ADD COLUMN id TEXT",
                "ALTER TABLE sessions ADD COLUMN sealed_device TEXT",
                "ALTER TABLE sessions ADD COLUMN last_seen_at BIGINT",
            ],
            backfill: { db, random in
                // Sessions from before this step get an id of their own, random like a new one's.
                let rows = try await db.raw("SELECT token_hash FROM sessions WHERE id IS NULL").all()
                for row in rows {
                    let tokenHash = try row.decode(column: "token_hash", as: String.self)
                    try await db.raw("UPDATE sessions SET id = \(bind: random.id("sess_")) WHERE token_hash = \(bind: tokenHash)").run()
                }
                try await db.raw("CREATE UNIQUE INDEX sessions_id ON sessions (id)").run()
            }
        ),
        Migration(
            version: 10,
            summary: "access tokens: the signing keys every replica shares, the private halves sealed",
            statements: [
                """
                CREATE TABLE signing_keys (
                    id TEXT PRIMARY KEY,
                    generation INTEGER NOT NULL UNIQUE,
                    sealed_private_key TEXT,
                    public_x TEXT NOT NULL,
                    public_y TEXT NOT NULL,
                    created_at BIGINT NOT NULL,
                    activates_at BIGINT NOT NULL,
                    withdrawn_at BIGINT
                )
                """
            ]
        ),
        Migration(
            version: 11,
            summary: "each account's history; Work & School accounts' organization and whether Apple verified the email",
            statements: [
                "ALTER TABLE accounts ADD COLUMN org_id TEXT",
                "ALTER TABLE accounts ADD COLUMN email_verified INTEGER NOT NULL DEFAULT 1",
                """
                CREATE TABLE account_events (
                    id TEXT PRIMARY KEY,
                    account_id TEXT NOT NULL,
                    type TEXT NOT NULL,
                    reason TEXT,
                    session_id TEXT,
                    sealed_device TEXT,
                    occurred_at BIGINT NOT NULL
                )
                """,
                "CREATE INDEX account_events_account ON account_events (account_id, occurred_at, id)",
                "CREATE INDEX account_events_occurred_at ON account_events (occurred_at)",
            ]
        ),
        Migration(
            version: 12,
            summary: "each session's Apple client id, which its access tokens carry",
            statements: ["ALTER TABLE sessions ADD COLUMN client_id TEXT"]
        ),
        Migration(
            version: 13,
            summary: "the session memory's change counter: every change to what a session check shows moves it (SQLite)",
            statements: [
                "CREATE TABLE session_epoch (id INTEGER PRIMARY KEY, value BIGINT NOT NULL)",
                "INSERT INTO session_epoch (id, value) VALUES (1, 0)",
            ]
        ),
        Migration(
            version: 14,
            summary: "operators: their tokens' hashes, console logins, the audit log; finding accounts by email; what the queues show them",
            statements: [
                "CREATE TABLE operators (name TEXT PRIMARY KEY, token_hash TEXT NOT NULL UNIQUE, created_at BIGINT NOT NULL)",
                """
                CREATE TABLE operator_logins (
                    token_hash TEXT PRIMARY KEY,
                    operator TEXT NOT NULL REFERENCES operators (name) ON DELETE CASCADE,
                    expires_at BIGINT NOT NULL
                )
                """,
                "CREATE INDEX operator_logins_operator ON operator_logins (operator)",
                "CREATE INDEX operator_logins_expires_at ON operator_logins (expires_at)",
                // No reference to operators or accounts: an entry outlives both.
                """
                CREATE TABLE operator_audit (
                    id TEXT PRIMARY KEY,
                    at BIGINT NOT NULL,
                    operator TEXT NOT NULL,
                    method TEXT NOT NULL,
                    route TEXT NOT NULL,
                    account_id TEXT,
                    status INTEGER NOT NULL
                )
                """,
                "CREATE INDEX operator_audit_at ON operator_audit (at, id)",
                // The lowercased email's keyed hash, beside the subject's (filled for older rows at serve's start).
                "ALTER TABLE accounts ADD COLUMN email_hash TEXT",
                "CREATE INDEX accounts_email_hash ON accounts (email_hash)",
                // Which deleted account a queued revocation is for, and deletions with no token to revoke.
                "ALTER TABLE revocations ADD COLUMN account_id TEXT",
                "CREATE INDEX revocations_created_at ON revocations (created_at)",
                """
                CREATE TABLE manual_revocations (
                    account_id TEXT PRIMARY KEY,
                    client_id TEXT NOT NULL,
                    deleted_at BIGINT NOT NULL
                )
                """,
                "CREATE INDEX manual_revocations_deleted_at ON manual_revocations (deleted_at)",
                // Each notification's client id, the account it acted on, and how often Apple sent it again.
                "ALTER TABLE notification_inbox ADD COLUMN client_id TEXT",
                "ALTER TABLE notification_inbox ADD COLUMN account_id TEXT",
                "ALTER TABLE notification_inbox ADD COLUMN duplicates INTEGER NOT NULL DEFAULT 0",
                "CREATE INDEX notification_inbox_received_at ON notification_inbox (received_at, jti)",
                "CREATE INDEX notification_inbox_client_received_at ON notification_inbox (client_id, received_at)",
                // When a webhook was given up.
                "ALTER TABLE webhook_outbox ADD COLUMN failed_at BIGINT",
            ]
        ),
        Migration(
            version: 15,
            summary: "the inbox finds a subject's notifications that still hold a sealed event through an index of those only",
            statements: [
                // A deletion looks for its subject's notifications that still hold the user's sealed event. The old
                // index held every row ever received, on a random key, so each stored notification wrote a page of it.
                // Not `processed_at IS NULL`: a claim implies that, and PostgreSQL could then range over this index
                // instead of the due-time one.
                "DROP INDEX notification_inbox_subject_digest",
                "CREATE INDEX notification_inbox_sealed_subject ON notification_inbox (subject_digest) WHERE sealed_event IS NOT NULL",
            ]
        ),
    ]
}
