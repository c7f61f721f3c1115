public import AuthCore
import Locking
public import Logging

/// `authorization.autoLogin`: keeps a session logged in with a grant that needs no person
/// (client credentials, a JWT bearer assertion, a token exchange). It follows the session's
/// events and acts as ``AutoLoginRule`` decides: it logs in at start and whenever the
/// session ends, except after a logout someone asked for, and retries a failed login with
/// ``BackoffPolicy`` (1 s, 2 s, … up to 5 min, the server's `Retry-After` honoured).
/// `/readyz` says `not_logged_in` until the session is logged in. Each failure is logged
/// with its code, never a token or the contents of a file.
public final class SessionAutoLogin: Sendable {
    private struct State {
        var loggedIn = false
        var paused = false
        var task: Task<Void, Never>?
        /// Tells the current login task from one that has been replaced.
        var attempt: UInt64 = 0
    }

    private let grant: Grant
    private let session: AuthActor
    private let backoff: BackoffPolicy
    private let clock: any AuthClock
    private let logger: Logger
    private let state = Locked(State())

    /// Creates the follower of `session`, which logs in by presenting `grant`.
    public init(grant: Grant, session: AuthActor, clock: any AuthClock, logger: Logger, backoff: BackoffPolicy = BackoffPolicy())
    {
        self.grant = grant
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
            case .logIn: start()
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
            s.task = Task { [self] in await run(attempt) }
        }
    }

    /// Records the session's state; stops trying.
    private func settle(loggedIn: Bool, paused: Bool) {
        let running = state.withLock { s in
            s.loggedIn = loggedIn
            s.paused = paused
            defer { s.task = nil }
            return s.task
        }
        running?.cancel()
        if paused { logger.info("auto login paused by a logout someone asked for; a login or a restart resumes it") }
    }

    /// Logs in until it succeeds, the session is logged in otherwise, or the task is cancelled.
    private func run(_ attempt: UInt64) async {
        var failures = 0
        while !Task.isCancelled {
            if await session.status.isLoggedIn { break }
            do {
                try await session.login(grant)
                logger.info("auto login succeeded", metadata: ["auth.grant": "\(grant.grantType)"])
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
                        "auth.grant": "\(grant.grantType)", "error": "\(error)", "auth.login.failures": "\(failures)",
                        "auth.login.retry_in": "\(delay)",
                    ])
                do { try await clock.sleep(for: delay) } catch { break }
            }
        }
        state.withLock { s in if s.attempt == attempt { s.task = nil } }
    }
}
