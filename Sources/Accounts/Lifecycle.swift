public import AppleID
public import Logging
public import Metrics

/// Every part of the lifecycle, assembled over one store that serves them all (the SQL store does), each part given
/// only the narrow protocol it uses. The composition root (`buildLifecycle`) and the CLI's operator commands build it.
public struct Lifecycle: Sendable {
    /// What the one store provides.
    public typealias Store = AccountStore & AccountChangeStore & NotificationInbox & RevocationOutbox & ValidationSchedule
        & TransferStore & OutboxQueries & SigningKeyStore & WebFlowStateStore & AccountImportStore

    /// Sign-in, sessions, sign-out and deletion.
    public let accounts: AccountDesk
    /// The account changes the jobs and the deletion make.
    public let changes: AccountChanges
    /// Apple's notification endpoint's half.
    public let notifications: NotificationReceiver
    /// App transfer, both sides.
    public let transfer: AppTransfer
    /// The queues as operators see them.
    public let outboxes: Outboxes
    /// The one job engine.
    public let engine: JobEngine
    /// Wakes the background workers when a request wrote work for them.
    public let wakeups: JobWakeups
    /// Revocations, with the background worker's 10 s deadline.
    public let revocationHandler: RevocationHandler
    /// Apple's notifications.
    public let notificationHandler: NotificationHandler
    /// Refresh-token validation.
    public let validationHandler: RefreshValidationHandler
    /// Access tokens for the app's other backends, and their signing keys.
    public let accessTokens: AccessTokens
    /// The web flow's states, between the redirect to Apple and Apple's form post.
    public let webFlowStates: WebFlowStates
    /// Bringing an app's existing users in from another system.
    public let imports: AccountImport

    /// How many notifications this process may have stored ahead of processing before Apple's endpoint holds the next
    /// one back: two of the handler's batches, one being processed and one gathering.
    public static let inboxRoom = 2 * 1024

    /// Assembles the parts over `store`.
    public init(
        store: any Store,
        vault: TokenVault,
        apple: any AppleGateway,
        clock: any WallClock,
        random: any RandomSource = SystemRandomSource(),
        configuration: AccountsConfiguration = AccountsConfiguration(),
        deadlines: Deadlines = Deadlines(),
        inboxRoom: Int = Lifecycle.inboxRoom,
        metrics: any MetricsFactory = MetricsSystem.factory
    ) {
        let engine = JobEngine(clock: clock, metrics: metrics)
        let wakeups = JobWakeups()
        let webhooks = WebhookFanout(urls: configuration.webhookURLs, random: random)
        let audit = AuditDigests(store: store)
        let backpressure = InboxBackpressure(room: inboxRoom, longestWait: deadlines.notificationHold, metrics: metrics)
        let backoff = Backoff(configuration.retryPolicy, random: random)
        func revocations(deadline: Duration) -> RevocationHandler {
            RevocationHandler(
                store: store,
                vault: vault,
                apple: apple,
                clock: clock,
                backoff: backoff,
                metrics: metrics,
                deadline: deadline
            )
        }
        let changes = AccountChanges(
            store: store,
            vault: vault,
            clock: clock,
            random: random,
            webhooks: webhooks,
            audit: audit,
            metrics: metrics,
            wakeups: wakeups,
            engine: engine,
            revocations: revocations(deadline: deadlines.revocationWait)
        )
        self.engine = engine
        self.wakeups = wakeups
        self.changes = changes
        self.accounts = AccountDesk(
            store: store,
            changes: changes,
            vault: vault,
            apple: apple,
            clock: clock,
            random: random,
            configuration: configuration,
            webhooks: webhooks,
            wakeups: wakeups,
            metrics: metrics
        )
        self.notifications = NotificationReceiver(
            inbox: store,
            apple: apple,
            vault: vault,
            audit: audit,
            clock: clock,
            metrics: metrics,
            wakeups: wakeups,
            backpressure: backpressure
        )
        self.transfer = AppTransfer(
            store: store,
            accounts: store,
            apple: apple,
            vault: vault,
            clock: clock,
            webhooks: webhooks,
            wakeups: wakeups
        )
        self.outboxes = Outboxes(store: store)
        self.revocationHandler = revocations(deadline: deadlines.appleCall)
        self.notificationHandler = NotificationHandler(
            inbox: store,
            accounts: store,
            changes: changes,
            vault: vault,
            clock: clock,
            backoff: backoff,
            policy: NotificationHandler.Policy(consentRevoked: configuration.consentRevokedPolicy, clockLeeway: configuration.clockLeeway),
            metrics: metrics,
            backpressure: backpressure
        )
        self.validationHandler = RefreshValidationHandler(
            schedule: store,
            apple: apple,
            vault: vault,
            changes: changes,
            clock: clock,
            timing: ValidationTiming(interval: configuration.refreshValidationInterval, random: random),
            backoff: backoff,
            metrics: metrics
        )
        self.accessTokens = AccessTokens(
            accounts: accounts,
            keys: SigningKeys(store: store, vault: vault, clock: clock, random: random, configuration: configuration.accessTokens),
            clock: clock,
            random: random
        )
        self.webFlowStates = WebFlowStates(store: store, vault: vault, clock: clock, random: random, lifetime: configuration.nonceLifetime)
        self.imports = AccountImport(
            store: store,
            vault: vault,
            clock: clock,
            random: random,
            timing: ValidationTiming(interval: configuration.refreshValidationInterval, random: random),
            audit: audit
        )
    }

    /// One pass of refresh validation, as the server's worker runs each tick; returns how many accounts it claimed.
    @discardableResult
    public func validateDue(limit: Int = 64, logger: Logger) async -> Int {
        await engine.runPass(validationHandler, limit: limit, logger: logger)
    }
}
