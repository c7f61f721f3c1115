internal import Foundation
internal import Locking
internal import Synchronization
public import Logging
public import CoreMetrics
internal import Metrics

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
    /// Timing of refreshes.
    public struct Configuration: Sendable {
        /// Refresh when the token expires within this much time.
        public var skew: Duration
        /// A random extra lead in `0..<jitter`, drawn per token, so replicas do not refresh
        /// in lockstep. The total lead never exceeds half the token's lifetime.
        public var jitter: Duration
        /// The refresh-loop guard. It counts only premature refreshes (a rejected fresh token),
        /// never expiry-driven ones; see ``RefreshGate/admit(at:replacing:)``.
        public var refreshWindow: RefreshWindow
        /// Backoff after transient failures.
        public var backoff: BackoffPolicy
        /// When set (in `0 < f < 1`), refresh when this fraction of a token's lifetime is
        /// left, instead of ``skew`` before expiry (`0.5`: at half-life). Jitter then only
        /// delays the refresh, by at most a tenth of the lifetime.
        public var leadFraction: Double?

        /// Creates a configuration.
        public init(
            skew: Duration = .seconds(30), jitter: Duration = .seconds(5),
            refreshWindow: RefreshWindow = RefreshWindow(), backoff: BackoffPolicy = BackoffPolicy(),
            leadFraction: Double? = nil
        ) {
            self.leadFraction = leadFraction
            self.skew = skew
            self.jitter = jitter
            self.refreshWindow = refreshWindow
            self.backoff = backoff
        }
    }

    struct ActiveSession {
        var credentials: Credentials
        var token: AccessToken
        var refreshAt: MonotonicInstant?
        var grantType: String?
        /// When the token was obtained, on the monotonic clock (for the loop guard).
        var obtainedAt: MonotonicInstant

        /// Whether `token()` must refresh at `now`.
        func isDue(at now: MonotonicInstant) -> Bool {
            guard let refreshAt else { return false }
            return now >= refreshAt
        }

        /// The token as the loop guard sees it.
        var gateToken: RefreshGate.CurrentToken {
            RefreshGate.CurrentToken(
                generation: credentials.generation, obtainedAt: obtainedAt,
                lifetime: credentials.deadline.map { $0 - obtainedAt })
        }
    }

    /// Why a caller asks for a refresh, with the generation it saw. The decision to join,
    /// start or skip a refresh is taken from this and the state at the moment the caller
    /// registers, never from what the caller read before a suspension.
    enum RefreshTrigger {
        /// `token()` found the token of this generation due for refresh.
        case due(seen: TokenGeneration)
        /// The upstream rejected the token of this generation (`refresh(after:)`).
        case rejected(TokenGeneration)
    }

    enum Phase {
        case loggedOut(LogoutReason?)
        case active(ActiveSession)
    }

    struct InFlightRefresh {
        let id: UInt64
        let epoch: UInt64
        /// When the token request was sent: the new token's lifetime counts from here.
        let requestedAt: MonotonicInstant
        let requestedAtWall: Date
        var waiters: [UInt64: CheckedContinuation<AccessToken, any Error>] = [:]
    }

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
    let clock: any AuthClock
    let configuration: Configuration
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

    /// Where the session's instruments are made (a gateway's own registry, or the
    /// process-wide `MetricsSystem`).
    let metricsFactory: any MetricsFactory
    /// `authgate_refreshes_total`, by outcome: `success`, `transient` (tokens kept, backing
    /// off), `terminal` (refused for good: logged out), `loop_guard` (refresh loop stopped).
    let refreshCounters: [String: Counter]
    /// `authgate_token_store_failures_total`.
    let storeFailureCounter: Counter

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
    public init(
        account: AccountID = .default, client: any TokenGrantClient, tokenStore: any TokenStore,
        stateStore: any SessionStateStore, clock: any AuthClock, events: EventBroadcaster? = nil,
        configuration: Configuration = Configuration(),
        logger: Logger = Logger(label: "authgate.auth"), executor: (any SerialExecutor)? = nil,
        randomFraction: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
        metricsFactory: (any MetricsFactory)? = nil, refreshCoordinator: (any RefreshCoordinator)? = nil
    ) {
        self.coordinator = refreshCoordinator ?? LocalRefreshCoordinator(store: tokenStore)
        self.account = account
        self.client = client
        self.tokenStore = tokenStore
        self.stateStore = stateStore
        self.clock = clock
        self.events =
            events ?? EventBroadcaster(
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
    }

    nonisolated let published = Locked<(snapshot: TokenSnapshot, token: AccessToken)?>(nil)
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

    private func publishSnapshot() {
        let value: (TokenSnapshot, AccessToken)? =
            switch phase {
            case .active(let s): (TokenSnapshot(generation: s.credentials.generation, refreshAt: s.refreshAt), s.token)
            case .loggedOut: nil
            }
        published.withLock { $0 = value }
    }

    /// The custom executor when one was given, else a default actor executor.
    public nonisolated var unownedExecutor: UnownedSerialExecutor {
        executor?.asUnownedSerialExecutor() ?? executorHost.unownedExecutor
    }

    // MARK: - Tokens

    /// The current access token, refreshed first when it expires within the skew window.
    ///
    /// When that refresh fails transiently and the token has not yet expired, the current
    /// token is returned. Throws ``AuthError``: with no session, ``noSessionError``.
    public func token() async throws -> AccessToken {
        guard case .active = phase else { throw noSessionError }
        if needsPersist, clock.now >= persistRetryAt { await persistPendingCredentials() }
        // Read the session after any suspension above.
        guard case .active(let session) = phase else { throw noSessionError }
        if session.isDue(at: clock.now) {
            return try await tokenAfterProactiveRefresh(seen: session.credentials.generation)
        }
        return session.token
    }

    /// Call after the upstream rejected the token of `generation` as invalid.
    ///
    /// Returns the current token at once when it is newer than `generation` (no network);
    /// otherwise joins the single in-flight refresh (starting it if needed) and returns its
    /// token. Throws ``AuthError``: with no session, ``noSessionError``.
    public func refresh(after generation: TokenGeneration) async throws -> AccessToken {
        guard case .active(let session) = phase else { throw noSessionError }
        if session.credentials.generation > generation {
            return session.token
        }
        return try await joinRefresh(.rejected(generation))
    }

    /// The session as it stands.
    public var status: SessionStatus {
        var status = SessionStatus(
            account: account, isLoggedIn: false, subject: sessionState.subject,
            lastLogin: sessionState.lastLogin, isGuest: sessionState.isGuest, epoch: epoch)
        switch phase {
        case .active(let session):
            status.isLoggedIn = true
            status.generation = session.credentials.generation
            status.expiresAt = session.credentials.expiresAt
        case .loggedOut(let reason):
            status.logoutReason = reason
        }
        return status
    }

    /// What a request for a token meets while there is no session: the reason the last
    /// session ended (``AuthError/Code/sessionEnded``, the same for every request until a
    /// login, whichever process ended it), or ``AuthError/Code/loginRequired`` when none
    /// ended since this process started (``LogoutReason/tokensMissing`` is what restore
    /// found at start), or in guest mode.
    var noSessionError: AuthError {
        if case .loggedOut(let reason?) = phase, reason != .tokensMissing, !sessionState.isGuest {
            return AuthError.sessionEnded(reason)
        }
        return AuthError.loginRequired
    }

    /// Whether a refresh is in flight.
    public var isRefreshing: Bool { inFlight != nil }

    /// How many callers wait for the in-flight refresh (for tests and metrics).
    public var refreshWaiterCount: Int { inFlight?.waiters.count ?? 0 }

    /// How many refreshes this actor started.
    public var refreshCount: Int { refreshesStarted }

    private func tokenAfterProactiveRefresh(seen generation: TokenGeneration) async throws -> AccessToken {
        do {
            return try await joinRefresh(.due(seen: generation))
        } catch let error as AuthError where error.keepsSession {
            if case .active(let session) = phase, !session.credentials.isExpired(at: clock.now) {
                return session.token
            }
            if error.code == .refreshNotPossible, case .active = phase {
                _ = try? await endSession(reason: .expiredWithoutRefreshToken, onlyEpoch: epoch)
                throw AuthError.sessionEnded(.expiredWithoutRefreshToken)
            }
            throw error
        }
    }

    /// The session for `credentials` obtained at `obtainedAt` (monotonic). Without it (restore),
    /// the instant is derived from the credentials' wall-clock `issuedAt`.
    func makeSession(_ credentials: Credentials, grantType: String?, obtainedAt: MonotonicInstant? = nil)
        -> ActiveSession
    {
        let now = clock.now
        var refreshAt: MonotonicInstant?
        if let deadline = credentials.deadline {
            let lifetime = deadline - now
            refreshAt = deadline - refreshLead(lifetime: lifetime)
        }
        let age = Duration.interval(max(0, clock.wallNow.timeIntervalSince(credentials.issuedAt)))
        return ActiveSession(
            credentials: credentials, token: AccessToken(credentials), refreshAt: refreshAt,
            grantType: grantType, obtainedAt: min(obtainedAt ?? now - age, now))
    }

    /// How long before expiry a token of `lifetime` (what is left of it) is refreshed.
    func refreshLead(lifetime: Duration) -> Duration {
        guard lifetime > .zero else { return .zero }
        let r = max(0, min(1, randomFraction()))
        // Jitter spreads replicas apart; it never moves a refresh by more than a tenth of the
        // lifetime, so `skew: 0` still means "at expiry" for short tokens.
        let jitter = min(configuration.jitter, lifetime / 10) * r
        if let f = configuration.leadFraction {
            // Here jitter only delays: "at half-life" never means more than two refreshes
            // per lifetime.
            return max(.zero, lifetime * f - jitter)
        }
        return min(configuration.skew + jitter, lifetime / 2)
    }
}
