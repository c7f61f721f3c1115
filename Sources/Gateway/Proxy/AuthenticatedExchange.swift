public import AuthCore

/// Runs an exchange made with a session's token: the actions of its ``ExchangeMachine``
/// (slot, token, send, refresh, replay, resend), with the session, the in-flight limiter and
/// the clock, in the caller's task, for exchanges whose sends are async (`send`): the
/// user-info call. A proxied request runs the same machine on its loop instead
/// (``ProxiedRequest``), since its sends answer through the loop's callbacks.
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

    /// Sends attempts until one is answered; each replay carries a newer token than the try
    /// before it. Throws a ``GatewayError`` when it stops without an answer:
    /// ``GatewayError/Code/noToken`` (no token to start with: no session, or it could not be
    /// refreshed), ``GatewayError/Code/replayRefreshFailed`` (the refresh a replay needed
    /// failed: refused, unreachable, or the session ended), both with the session's error
    /// ``GatewayError/underlying``; or the ``InFlightLimiter``'s error when no slot at the
    /// upstream came in time or would have, or the wait was cancelled.
    public func run<Result: Sendable>(
        bodyReplayable: Bool, send: (AccessToken, ReplayRule.Attempt) async -> Step<Result>
    ) async throws(GatewayError) -> Result {
        var machine = self.machine(bodyReplayable: bodyReplayable)
        let action = machine.start()
        return try await run(machine, action) { token, sending in await send(token, sending.attempt) }
    }

    /// A machine for one request of this exchange.
    func machine(bodyReplayable: Bool) -> ExchangeMachine {
        ExchangeMachine(policy: policy, rule: rule, bodyReplayable: bodyReplayable, bounded: limiter != nil, withToken: true)
    }

    /// Runs `machine`'s actions from `action` on until an attempt is answered. `send` gets the token and the machine with the attempt at the
    /// upstream (``ExchangeMachine/attempt``), to judge the answer's head
    /// (``ExchangeMachine/headArrived(_:session:)``). Throws as
    /// ``run(bodyReplayable:send:)`` does.
    func run<Result: Sendable>(
        _ machine: ExchangeMachine, _ action: ExchangeMachine.Action,
        send: (AccessToken, ExchangeMachine) async -> Step<Result>
    ) async throws(GatewayError) -> Result {
        var machine = machine
        var action = action
        let clock = ContinuousClock()
        var started = clock.now
        func lap(_ phase: Phase) {
            guard let observe else { return }
            let now = clock.now
            observe(phase, now - started)
            started = now
        }
        // The token obtained last; the next attempt carries it.
        var token: AccessToken?
        // Exchanges at the upstream when this attempt took its slot, itself included; nil
        // while the exchange holds no slot.
        var inFlight: Int?
        var result: Result?
        var error: any Error = CancellationError()
        var refused = GatewayError.slotCancelled
        while true {
            switch action {
            case .acquireSlot(let lane):
                // The machine is bounded exactly when there is a limiter (it was made so).
                guard let limiter else { preconditionFailure("a slot was asked for on a route without a limit") }
                do throws(GatewayError) {
                    inFlight = try await limiter.acquire(lane, timeout: queueTimeout)
                    lap(.queue)
                    action = machine.slotGranted()
                } catch {
                    refused = error
                    action = machine.slotRefused()
                }
            case .takeToken(let firstTry):
                do {
                    let t = try await session.token()
                    token = t
                    if firstTry { lap(.token) }
                    action = machine.tokenObtained(generation: t.generation)
                } catch let e {
                    if inFlight != nil { limiter?.release() }
                    inFlight = nil
                    error = e
                    action = machine.tokenFailed()
                }
            case .refresh(let generation):
                do {
                    let t = try await trace.refresh(session, after: generation)
                    token = t
                    lap(.refresh)
                    action = machine.refreshed(generation: t.generation)
                } catch let e {
                    error = e
                    action = machine.refreshFailed()
                }
            case .send:
                guard let token else { preconditionFailure("an attempt is sent with the token obtained last") }
                let sent = clock.now
                let step = await send(token, machine)
                if let limiter, let n = inFlight {
                    let ended = clock.now
                    limiter.release(
                        AdaptiveLimit.Sample(latency: ended - sent, inFlight: n, outcome: step.sampleOutcome), at: ended)
                }
                inFlight = nil
                lap(.upstream)
                switch step {
                case .done(let r), .failed(let r, _):
                    result = r
                    action = machine.attemptEnded(.answered)
                case .replay:
                    action = machine.attemptEnded(.heldForRefresh)
                case .resend:
                    action = machine.attemptEnded(.heldForNonce)
                }
            case .finish:
                guard let result else { preconditionFailure("an exchange finishes with an answer") }
                return result
            case .fail(.token):
                throw .noToken(error)
            case .fail(.refresh):
                throw .replayRefreshFailed(error)
            case .fail(.busy):
                throw refused
            case .none:
                preconditionFailure("the exchange machine was given an event out of turn")
            }
        }
    }
}
