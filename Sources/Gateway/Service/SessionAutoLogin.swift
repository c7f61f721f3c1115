public import AuthCore
import Locking
public import Logging

/// `authorization.autoLogin`: keeps a session logged in with a grant that needs no person
/// (client credentials, a JWT bearer assertion, a token exchange), or keeps a device login
/// (RFC 8628) waiting for one. It follows the session's
/// events and acts as ``AutoLoginRule`` decides: it logs in at start and whenever the
/// session ends, except after a logout someone asked for, and retries a failed login with
/// ``BackoffPolicy`` (1 s, 2 s, … up to 5 min, the server's `Retry-After` honoured).
/// `/readyz` says `not_logged_in` until the session is logged in. Each failure is logged
/// with its code, never a token or the contents of a file.
///
/// With ``Method/device(scope:)`` a login is started, not awaited: the session polls and
/// publishes the outcome. A device login that ends unapproved (expired, declined, refused)
/// starts a new one, after the backoff's delay for the number of such endings in a row, so a
/// server that refuses every poll is not asked in a loop.
public final class SessionAutoLogin: Sendable {
    /// How the session logs in.
    public enum Method: Sendable, Equatable {
        /// Present a grant that needs no person.
        case grant(Grant)
        /// Start a device login asking for `scope`, and leave it waiting for a person.
        case device(scope: String?)
    }

    private struct State {
        var loggedIn = false
        var paused = false
        var task: Task<Void, Never>?
        /// Tells the current login task from one that has been replaced.
        var attempt: UInt64 = 0
        /// Device logins that ended unapproved in a row.
        var deviceEndings = 0
    }

    private let method: Method
    private let session: AuthActor
    private let backoff: BackoffPolicy
    private let clock: any AuthClock
    private let logger: Logger
    private let state = Locked(State())

    /// Creates the follower of `session`, which logs in by presenting `grant`.
    public convenience init(
        grant: Grant, session: AuthActor, clock: any AuthClock, logger: Logger, backoff: BackoffPolicy = BackoffPolicy()
    ) {
        self.init(method: .grant(grant), session: session, clock: clock, logger: logger, backoff: backoff)
    }

    /// Creates the follower of `session`, which logs in by `method`.
    public init(
        method: Method, session: AuthActor, clock: any AuthClock, logger: Logger, backoff: BackoffPolicy = BackoffPolicy()
    ) {
        self.method = method
        self.session = session
        self.clock = clock
        self.logger = logger
        self.backoff = backoff
    }

    /// Whether the session is logged in (as its events last said).
    public var isLoggedIn: Bool { state.withLock { $0.loggedIn } }

    /// Follows the session until `events` ends, then stops a login in progress.
    public func follow(_ events: AsyncStream<AuthEventRecord>) async {
        for await record in events {
            switch AutoLoginRule.decide(record.event) {
            case .logIn:
                if case .deviceLoginEnded = record.event { state.withLock { $0.deviceEndings += 1 } }
                start()
            case .loggedIn: settle(loggedIn: true, paused: false)
            case .pause: settle(loggedIn: false, paused: true)
            case .none: break
            }
        }
        let running = state.withLock { s in
            defer { s.task = nil }
            return s.task
        }
        running?.cancel()
        await running?.value
    }

    /// Starts logging in, unless paused or already trying.
    private func start() {
        state.withLock { s in
            s.loggedIn = false
            guard !s.paused, s.task == nil else { return }
            s.attempt += 1
            let attempt = s.attempt
            let endings = s.deviceEndings
            s.task = Task { [self] in await run(attempt, delayedBy: endings) }
        }
    }

    /// Records the session's state; stops trying.
    private func settle(loggedIn: Bool, paused: Bool) {
        let running = state.withLock { s in
            s.loggedIn = loggedIn
            s.paused = paused
            if loggedIn { s.deviceEndings = 0 }
            defer { s.task = nil }
            return s.task
        }
        running?.cancel()
        if paused { logger.info("auto login paused by a logout someone asked for; a login or a restart resumes it") }
    }

    /// The grant type logs name.
    private var grantType: String {
        switch method {
        case .grant(let grant): grant.grantType
        case .device: Grant.deviceCodeType
        }
    }

    /// Logs in (or starts a device login) until it succeeds, the session is logged in
    /// otherwise, or the task is cancelled; first waits out `delayedBy` unapproved device
    /// logins in a row.
    private func run(_ attempt: UInt64, delayedBy endings: Int) async {
        var failures = 0
        if endings > 0 {
            let delay = backoff.delay(
                afterConsecutiveFailures: endings, retryAfter: nil, randomFraction: Double.random(in: 0..<1))
            do { try await clock.sleep(for: delay) } catch {}
        }
        while !Task.isCancelled {
            if await session.status.isLoggedIn { break }
            do {
                switch method {
                case .grant(let grant):
                    try await session.login(grant)
                    logger.info("auto login succeeded", metadata: ["auth.grant": "\(grant.grantType)"])
                case .device(let scope):
                    do {
                        let pending = try await session.startDeviceLogin(scope: scope)
                        logger.notice(
                            "auto login: a device login waits for approval",
                            metadata: [
                                "auth.device.user_code": "\(pending.userCode)",
                                "auth.device.verification_uri": "\(pending.verificationURI)",
                            ])
                    } catch let error as AuthError where error.code == .deviceLoginPending {
                        // Someone started one through the admin API: it is the login.
                    }
                }
                break
            } catch is CancellationError {
                break
            } catch {
                failures += 1
                let retryAfter = (error as? AuthError)?.retryAfter
                let delay = backoff.delay(
                    afterConsecutiveFailures: failures, retryAfter: retryAfter, randomFraction: Double.random(in: 0..<1))
                logger.warning(
                    "auto login failed; trying again",
                    metadata: [
                        "auth.grant": "\(grantType)", "error": "\(error)", "auth.login.failures": "\(failures)",
                        "auth.login.retry_in": "\(delay)",
                    ])
                do { try await clock.sleep(for: delay) } catch { break }
            }
        }
        state.withLock { s in if s.attempt == attempt { s.task = nil } }
    }
}
