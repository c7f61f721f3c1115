public import AuthCore

/// The one path of an exchange made with a session's token: token → send → classify →
/// refresh → replay, under the ``ReplayRule``. The proxy and the user-info call both run it;
/// only how one attempt is sent differs.
public struct AuthenticatedExchange: Sendable {
    /// What one attempt came to.
    public enum Step<Result: Sendable>: Sendable {
        /// The answer went to its caller (delivered or passed through).
        case done(Result)
        /// The answer was held back: send again with the token ``AuthActor/refresh(after:)``
        /// gives for the attempt's generation.
        case replay
        /// The answer was held back: the upstream asked the DPoP proof for its nonce. Send
        /// again with the session's token as it is now (no refresh), once.
        case resend
        /// No answer came from the upstream (`outcome`: dropped or timed out); `Result` went to
        /// the caller. The same as ``done(_:)`` but for what the in-flight limit learns.
        case failed(Result, AdaptiveLimit.Outcome)

        /// What the attempt tells the in-flight limit: a held-back answer is a 401 for a
        /// token superseded while the attempt was at the upstream.
        var sampleOutcome: AdaptiveLimit.Outcome {
            switch self {
            case .done, .resend: .answered
            case .replay: .superseded
            case .failed(_, let outcome): outcome
            }
        }
    }

    /// Why ``run(bodyReplayable:send:)`` stopped without an answer.
    public enum Failure: Error {
        /// No token to start with (no session, or it could not be refreshed).
        case token(any Error)
        /// The refresh a replay needed failed (refused, unreachable, or the session ended).
        case refresh(any Error)
        /// No slot at the upstream came in time or would have (``InFlightLimiter``), or the
        /// wait was cancelled.
        case busy(InFlightLimiter.Failure)
    }

    /// Where an exchange spends its time.
    public enum Phase: String, Sendable, CaseIterable {
        /// Waiting for a slot at the upstream (``InFlightLimiter``).
        case queue
        /// Waiting for the session's token (a proactive refresh included).
        case token
        /// Waiting for the refresh (or the newer token) a replay needs.
        case refresh
        /// One try at the upstream, from sending to the end of its answer.
        case upstream
    }

    /// The session whose token the exchange carries.
    public let session: AuthActor
    /// What counts as a rejected token.
    public let policy: UpstreamRejectionPolicy
    /// When a rejected exchange is sent again.
    public let rule: ReplayRule
    /// Told how long each phase took, when set.
    public let observe: (@Sendable (Phase, Duration) -> Void)?
    /// Bounds the attempts at the upstream at once, when set: an attempt takes its token
    /// only once it has a slot, so the token is fresh when it leaves.
    public let limiter: InFlightLimiter?
    /// The longest an attempt waits for a slot of ``limiter`` (nil: the limiter's own timeout).
    public var queueTimeout: Duration?
    /// The request's spans when it is traced: each refresh a replay waits for is one.
    var trace: RequestTrace?

    /// Creates the path for `session`.
    public init(
        session: AuthActor, policy: UpstreamRejectionPolicy, rule: ReplayRule,
        observe: (@Sendable (Phase, Duration) -> Void)? = nil, limiter: InFlightLimiter? = nil
    ) {
        self.limiter = limiter
        self.session = session
        self.policy = policy
        self.rule = rule
        self.observe = observe
    }

    /// The verdict on the head of an answer to `attempt`; synchronous, so it can be taken in
    /// an upstream client's head callback before any byte of the body reaches the client.
    public func verdict(status: Int, wwwAuthenticate: [String], attempt: ReplayRule.Attempt) -> ReplayRule.Verdict {
        Self.verdict(
            policy: policy, rule: rule, session: session, status: status, wwwAuthenticate: wwwAuthenticate, attempt: attempt)
    }

    /// ``verdict(status:wwwAuthenticate:attempt:)`` from its parts, for a caller that holds
    /// them without an exchange (the proxy's head callback, which then captures no copy of one).
    public static func verdict(
        policy: UpstreamRejectionPolicy, rule: ReplayRule, session: AuthActor, status: Int, wwwAuthenticate: [String],
        attempt: ReplayRule.Attempt
    ) -> ReplayRule.Verdict {
        let rejected = policy.classify(status: status, wwwAuthenticate: wwwAuthenticate) == .tokenRejected
        guard rejected else { return .deliver }
        return rule.verdict(tokenRejected: true, attempt: attempt, current: session.tokenSnapshot, now: session.now)
    }

    /// Sends attempts until one is answered; each replay carries a newer token than the try
    /// before it. With `rejected`, the first try was already sent (with a token taken without
    /// waiting) and its answer held back: the path goes on from its replay, or, with
    /// `resending`, from sending it again as it was (the upstream asked for a DPoP nonce).
    /// Throws ``Failure``.
    public func run<Result: Sendable>(
        bodyReplayable: Bool, after rejected: ReplayRule.Attempt? = nil, resending: Bool = false,
        send: (AccessToken, ReplayRule.Attempt) async -> Step<Result>
    ) async throws(Failure) -> Result {
        let clock = ContinuousClock()
        var started = clock.now
        func lap(_ phase: Phase) {
            guard let observe else { return }
            let now = clock.now
            observe(phase, now - started)
            started = now
        }
        // Exchanges at the upstream when this attempt took its slot, itself included.
        var inFlight = 0
        func enter(_ lane: AdmissionQueue.Lane) async throws(Failure) {
            guard let limiter else { return }
            do {
                inFlight = try await limiter.acquire(lane, timeout: queueTimeout)
            } catch {
                throw .busy(error)
            }
            lap(.queue)
        }
        /// The token a replay of `attempt` carries: a newer one than it had.
        func replayToken(after attempt: ReplayRule.Attempt) async throws(Failure) -> AccessToken {
            var token: AccessToken
            do {
                if let trace {
                    token = try await trace.refresh(session, after: attempt.generation)
                } else {
                    token = try await session.refresh(after: attempt.generation)
                }
            } catch {
                throw .refresh(error)
            }
            lap(.refresh)
            if limiter != nil {
                try await enter(.replay)
                // The slot may have taken a while: the token may be superseded or due by now.
                do {
                    token = try await session.token()
                } catch {
                    limiter?.release()
                    throw .refresh(error)
                }
            }
            return token
        }
        /// The token a resend carries: the session's as it is now, in a slot of its own.
        func resendToken() async throws(Failure) -> AccessToken {
            try await enter(.replay)
            do {
                return try await session.token()
            } catch {
                limiter?.release()
                throw .refresh(error)
            }
        }
        var token: AccessToken
        var replays = 0
        var nonceResent = false
        if let rejected, resending {
            token = try await resendToken()
            replays = rejected.replaysSoFar
            nonceResent = true
        } else if let rejected {
            token = try await replayToken(after: rejected)
            replays = rejected.replaysSoFar + 1
        } else {
            try await enter(.first)
            do {
                token = try await session.token()
            } catch {
                limiter?.release()
                throw .token(error)
            }
            lap(.token)
        }
        while true {
            var attempt = ReplayRule.Attempt(
                generation: token.generation, replaysSoFar: replays, bodyReplayable: bodyReplayable)
            attempt.nonceResent = nonceResent
            let sent = clock.now
            let step = await send(token, attempt)
            if let limiter {
                let ended = clock.now
                limiter.release(
                    AdaptiveLimit.Sample(latency: ended - sent, inFlight: inFlight, outcome: step.sampleOutcome), at: ended)
            }
            lap(.upstream)
            switch step {
            case .done(let result), .failed(let result, _):
                return result
            case .replay:
                token = try await replayToken(after: attempt)
                replays += 1
            case .resend:
                token = try await resendToken()
                nonceResent = true
            }
        }
    }
}
