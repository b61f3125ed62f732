public import Accounts
import AppleID
import Foundation
import Logging
import Metrics
public import Storage

/// The background jobs, one handler per kind, run by one ``JobService`` on the lifecycle's engine: the revocation
/// outbox, the notification inbox, refresh-token validation and (with a webhook secret) the webhook outbox.
func backgroundJobs(lifecycle: Lifecycle, store: SQLAccountStore, dependencies: OrchardDependencies) -> JobService {
    var handlers: [any JobHandler] = [
        lifecycle.revocationHandler,
        lifecycle.notificationHandler,
        lifecycle.validationHandler,
        RetentionHandler(store: store, clock: dependencies.clock, windows: dependencies.configuration.lifecycle.retention),
    ]
    if let secret = dependencies.configuration.webhooks.secret {
        handlers.append(
            WebhookHandler(
                store: store,
                signer: WebhookSigner(secret: secret),
                transport: HTTPWebhookTransport(client: dependencies.httpClient, deadline: dependencies.deadlines.webhookAttempt),
                clock: dependencies.clock,
                random: dependencies.random,
                configuration: dependencies.configuration.accounts,
                attemptDeadline: dependencies.deadlines.webhookAttempt,
                metrics: dependencies.metrics
            )
        )
    }
    return JobService(
        engine: lifecycle.engine,
        handlers: handlers,
        wakeups: lifecycle.wakeups,
        tick: dependencies.jobTick ?? .seconds(1),
        logger: dependencies.logger
    )
}

/// Wires the lifecycle: migrates the database, then Apple's side (keys, verifier, client secrets, REST client), the
/// vault and the store. The server and the CLI's operator commands both use it, so there is one deletion.
///
/// - Throws: ``ConfigurationError`` for a setting that cannot be used, or a storage error when migration fails.
public func buildLifecycle(_ dependencies: OrchardDependencies) async throws -> (Lifecycle, SQLAccountStore) {
    let configuration = dependencies.configuration
    let logger = dependencies.logger
    try await Migrator(database: dependencies.database, logger: logger).migrate(random: dependencies.random)

    if !configuration.apple.isProduction {
        logger.warning(
            "APPLE_BASE_URL is not Apple's: Orchard talks to a stand-in",
            metadata: ["apple.base_url": "\(configuration.apple.baseURL.absoluteString)"]
        )
        Gauge(label: "orchard_apple_base_url_overridden", factory: dependencies.metrics).record(1)
    } else {
        Gauge(label: "orchard_apple_base_url_overridden", factory: dependencies.metrics).record(0)
    }
    try AppleConfiguration.checkTransport(configuration.apple.baseURL)

    let apple = AppleEndpoints(
        baseURL: configuration.apple.baseURL,
        httpClient: dependencies.httpClient,
        metrics: dependencies.metrics,
        logger: logger
    )
    let keySet = AppleKeySet(
        source: HTTPAppleKeySource(apple, timeout: dependencies.deadlines.appleKeyFetch),
        clock: dependencies.clock,
        logger: logger
    )
    let verifier = AppleTokenVerifier(
        keys: keySet,
        clientIDs: configuration.apple.allClientIDs,
        clock: dependencies.clock,
        leeway: configuration.lifecycle.clockLeeway
    )
    let secrets: ClientSecretSigner
    do {
        // Each account's calls are signed by the team that owns its client id.
        secrets = try ClientSecretSigner(teams: configuration.apple.allTeams, clock: dependencies.clock)
    } catch {
        throw ConfigurationError(
            setting: configuration.apple.teams.isEmpty ? "APPLE_PRIVATE_KEY_FILE" : "apple.teams",
            problem: "cannot be used: \(error.reason)"
        )
    }
    let client = AppleRESTClient(apple, secrets: secrets)
    let keeper = SessionKeeper(
        database: dependencies.database,
        backend: dependencies.sessionBackend,
        answering: dependencies.answersSessionChecks,
        timings: dependencies.sessionTimings,
        clock: dependencies.monotonicClock,
        metrics: dependencies.metrics,
        logger: logger
    )
    let store = SQLAccountStore(keeper: keeper)
    let lifecycle = Lifecycle(
        store: store,
        vault: TokenVault(keys: configuration.vaultKeys),
        apple: LiveAppleGateway(verifier: verifier, client: client),
        clock: dependencies.clock,
        random: dependencies.random,
        configuration: configuration.accounts,
        deadlines: dependencies.deadlines,
        inboxRoom: dependencies.inboxRoom,
        metrics: dependencies.metrics
    )
    return (lifecycle, store)
}
