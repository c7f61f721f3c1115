public import CoreMetrics
public import Foundation
internal import Locking
public import Logging
internal import Metrics
internal import Synchronization

/// Owns one account's session: it serialises token storage, refresh and logout.
///
/// - ``token()`` returns the current access token, refreshing first when it expires within
///   the skew window (with jitter) on the injected monotonic clock.
/// - ``refresh(after:)`` is for a 401: when a newer token exists it returns it at once (the
///   401 was for a stale token); otherwise it joins the single in-flight refresh.
/// - A refresh runs in a task owned by the actor: a caller that is cancelled stops waiting,
///   the refresh goes on and its result serves everyone else.
/// - With rotation, the new pair is persisted before any waiter is resumed.
/// - ``logout(reason:)`` bumps the session epoch; a refresh result from an older epoch is
///   dropped, so a late refresh never revives a logged-out session.
/// - Refresh failures are typed: terminal (`invalid_grant`, …) ends the session with one
///   ``AuthEvent/loggedOut(reason:epoch:)``; transient ones keep the tokens and back off.
///
/// Every state change that touches the stores (login, logout, refresh commit, restore) runs
/// under one FIFO store lock, so the state file and the token store are always written in
/// the documented order: login writes tokens then state; logout writes state then deletes
/// tokens; restore reconciles.
public actor AuthActor {
    /// The account whose session this actor owns.
    public nonisolated let account: AccountID
    /// The broadcaster of this session's events.
    public nonisolated let events: EventBroadcaster

    let client: any TokenGrantClient
    let tokenStore: any TokenStore
    /// Who may refresh, across the processes that share ``tokenStore`` (see
    /// ``RefreshCoordinator``); a ``LocalRefreshCoordinator`` when the store is not shared.
    let coordinator: any RefreshCoordinator
    let stateStore: any SessionStateStore
    /// Shares a device login with the processes that share ``tokenStore`` (see
    /// ``DeviceLoginCoordinator``); nil when the store is this process's alone.
    let deviceCoordinator: (any DeviceLoginCoordinator)?
    let clock: any AuthClock
    /// Timing of refreshes, and the session's DPoP key.
    public nonisolated let configuration: Configuration
    let logger: Logger
    let randomFraction: @Sendable () -> Double
    private let executor: (any SerialExecutor)?
    private let executorHost = ExecutorHost()

    var phase: Phase = .loggedOut(nil) {
        didSet { publishSnapshot() }
    }
    var sessionState = SessionState.loggedOut
    var epoch: UInt64 = 0
    var lastGeneration = TokenGeneration.zero
    var inFlight: InFlightRefresh?
    var nextFlightID: UInt64 = 0
    var nextWaiterID: UInt64 = 0
    var gate: RefreshGate
    /// A rotated pair held only in memory (its save failed and is being retried); mirrored
    /// in ``holdsUnsavedCredentials`` for readers off the actor.
    var needsPersist: Bool {
        get { unsaved.load(ordering: .relaxed) }
        set { unsaved.store(newValue, ordering: .relaxed) }
    }
    var persistRetryAt = MonotonicInstant(offset: .zero)
    /// The lease of the rotated pair whose commit failed and is retried (its fence).
    var pendingLease: RefreshLease?
    var persistFailures = 0
    var storeLockHeld = false
    var storeLockQueue: [CheckedContinuation<Void, Never>] = []
    var refreshesStarted = 0
    /// Revocations started by logout and not yet awaited (``finishRevocations()``).
    var revocations: [Task<Void, Never>] = []
    /// Epochs that a logout someone asked for ended: a refresh of theirs that completes
    /// afterwards has its rotated tokens revoked too, not only dropped.
    var revokingEpochs: Set<UInt64> = []
    /// The task of the latest refresh (``finishBackgroundWork()`` waits for it).
    var refreshTask: Task<Void, Never>?
    /// A generated DPoP key announced for the next login (``nextSessionDPoPThumbprint()``).
    var nextDPoPKey: DPoPSessionKey?
    /// Whether a server refusing this session's DPoP proofs has a clock far from ours: the
    /// token endpoint's answers are read here, the APIs' by the proxy.
    public nonisolated let clockSkew = ClockSkewWatch()
    /// The device login waiting for a person, if any (``startDeviceLogin(scope:subject:)``).
    var deviceFlow: DeviceFlow?
    /// The binding a refresh was last refused for (``checkCertificateBinding(_:shown:)``),
    /// so that the refusal is logged once, not once per request.
    var outdatedCertificateNoted: CertificateBinding?
    var nextDeviceFlowID: UInt64 = 0
    /// `authgate_device_logins_total` and `authgate_device_polls_total`, made on a device
    /// login's first use (a session that never starts one shows none).
    var deviceCounters: [String: Counter] = [:]

    /// Where the session's instruments are made (a gateway's own registry, or the
    /// process-wide `MetricsSystem`).
    let metricsFactory: any MetricsFactory
    /// `authgate_refreshes_total`, by outcome: `success`, `transient` (tokens kept, backing
    /// off), `terminal` (refused for good: logged out), `loop_guard` (refresh loop stopped).
    let refreshCounters: [String: Counter]
    /// `authgate_token_store_failures_total`.
    let storeFailureCounter: Counter
    /// `authgate_dpop_proofs_refused_total`, by where the proof was refused: `token_endpoint`
    /// or `upstream` (an API, or the user-info call).
    nonisolated let dpopRefusalCounters: [String: Counter]

    /// Counts a DPoP proof of this session that a server refused (`invalid_dpop_proof`):
    /// `by` is `token_endpoint` or `upstream`.
    public nonisolated func countDPoPProofRefused(by: String) {
        dpopRefusalCounters[by]?.increment()
    }

    /// Counts one refresh outcome (see ``refreshCounters``).
    func countRefresh(_ outcome: String) {
        refreshCounters[outcome]?.increment()
    }

    /// Creates the actor for `account`. Call ``restore()`` before serving.
    ///
    /// - Parameters:
    ///   - account: the session's account.
    ///   - client: the token endpoint client (normally ``OAuth2Client``).
    ///   - tokenStore: where tokens are persisted.
    ///   - stateStore: where the non-secret session state is persisted.
    ///   - clock: the monotonic and wall clock.
    ///   - events: the broadcaster to publish to; a new one when `nil`.
    ///   - configuration: refresh timing.
    ///   - logger: where to log (secrets are never logged).
    ///   - executor: a serial executor to run on (e.g. an event loop's); the default actor
    ///     executor when `nil`.
    ///   - randomFraction: the jitter source (refresh lead and backoff), a value in `0..<1`.
    ///   - metricsFactory: where the session's counters are made; `MetricsSystem.factory`
    ///     when `nil`.
    ///   - refreshCoordinator: who may refresh when other processes share `tokenStore` (a
    ///     ``LocalRefreshCoordinator`` over `tokenStore` when `nil`).
    ///   - deviceLoginCoordinator: who shares a device login when other processes share
    ///     `tokenStore` (the refresh coordinator, when it is one, when `nil`).
    public init(
        account: AccountID = .default, client: any TokenGrantClient, tokenStore: any TokenStore,
        stateStore: any SessionStateStore, clock: any AuthClock, events: EventBroadcaster? = nil,
        configuration: Configuration = Configuration(),
        logger: Logger = Logger(label: "authgate.auth"), executor: (any SerialExecutor)? = nil,
        randomFraction: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
        metricsFactory: (any MetricsFactory)? = nil, refreshCoordinator: (any RefreshCoordinator)? = nil,
        deviceLoginCoordinator: (any DeviceLoginCoordinator)? = nil
    ) {
        self.coordinator = refreshCoordinator ?? LocalRefreshCoordinator(store: tokenStore)
        self.deviceCoordinator = deviceLoginCoordinator ?? (refreshCoordinator as? any DeviceLoginCoordinator)
        self.account = account
        self.client = client
        self.tokenStore = tokenStore
        self.stateStore = stateStore
        self.clock = clock
        self.events =
            events
            ?? EventBroadcaster(
                initialStatus: SessionStatus(account: account, isLoggedIn: false),
                wallClock: { [clock] in clock.wallNow })
        self.configuration = configuration
        self.gate = RefreshGate(policy: configuration.backoff, window: configuration.refreshWindow)
        var logger = logger
        logger[metadataKey: "auth.account"] = "\(account)"
        self.logger = logger
        self.executor = executor
        self.randomFraction = randomFraction
        let factory = metricsFactory ?? MetricsSystem.factory
        self.metricsFactory = factory
        var counters: [String: Counter] = [:]
        for outcome in ["success", "transient", "terminal", "loop_guard"] {
            counters[outcome] = Counter(
                label: "authgate_refreshes_total", dimensions: [("session", account.rawValue), ("outcome", outcome)],
                factory: factory)
        }
        self.refreshCounters = counters
        self.storeFailureCounter = Counter(
            label: "authgate_token_store_failures_total", dimensions: [("session", account.rawValue)], factory: factory)
        var refusals: [String: Counter] = [:]
        if configuration.dpop != nil {
            for by in ["token_endpoint", "upstream"] {
                refusals[by] = Counter(
                    label: "authgate_dpop_proofs_refused_total", dimensions: [("session", account.rawValue), ("by", by)],
                    factory: factory)
            }
        }
        self.dpopRefusalCounters = refusals
    }

    nonisolated let published = Locked<(snapshot: TokenSnapshot, token: AccessToken)?>(nil)
    /// The client certificate the current tokens are bound to, for
    /// ``clientCertificateOutdated``.
    nonisolated let publishedCertificate = Locked<CertificateBinding?>(nil)
    private nonisolated let unsaved = Atomic<Bool>(false)

    /// Whether a rotated pair is held only in memory because its save failed (the previous
    /// refresh token is spent: a restart now would log the session out). Read without a hop
    /// onto the actor, for `/readyz` and the metrics.
    public nonisolated var holdsUnsavedCredentials: Bool { unsaved.load(ordering: .relaxed) }

    /// The current token's generation and refresh deadline, read without a hop onto the
    /// actor; `nil` when logged out. It can be stale by the time the caller acts on it, so
    /// it serves decisions that the actor checks again (``refresh(after:)``).
    public nonisolated var tokenSnapshot: TokenSnapshot? { published.withLock { $0?.snapshot } }

    /// The current instant on the session's monotonic clock (to compare with
    /// ``tokenSnapshot``).
    public nonisolated var now: MonotonicInstant { clock.now }

    /// The current wall-clock time of the session's clock (to compare with the dates of
    /// ``status``).
    public nonisolated var wallNow: Date { clock.wallNow }

    private func publishSnapshot() {
        let value: (TokenSnapshot, AccessToken)? =
            switch phase {
            case .active(let s): (TokenSnapshot(generation: s.credentials.generation, refreshAt: s.refreshAt), s.token)
            case .loggedOut: nil
            }
        published.withLock { $0 = value }
        let certificate: CertificateBinding? =
            switch phase {
            case .active(let s): s.certificate
            case .loggedOut: nil
            }
        publishedCertificate.withLock { $0 = certificate }
    }

    /// The custom executor when one was given, else a default actor executor.
    public nonisolated var unownedExecutor: UnownedSerialExecutor {
        executor?.asUnownedSerialExecutor() ?? executorHost.unownedExecutor
    }
}

/// An empty default actor whose executor an ``AuthActor`` borrows when no custom executor
/// is given (an actor that declares `unownedExecutor` has no default executor of its own;
/// returning another actor's is the supported way to get one).
actor ExecutorHost {}
