import AuthCore
import HTTPWire
import Runtime

/// One request on an authenticated route, run on its loop: the actions of its
/// ``ExchangeMachine`` (slot, token, send, refresh, replay, resend), from the first try to
/// the answer the client gets.
///
/// Every action that can be taken at once is taken at once, from the loop: a free slot of the
/// route's in-flight limit nobody waits for, the session's token when it is current
/// (``AuthActor/tokenWithoutWaiting()``), the send itself, whose answer comes back through
/// ``ProxyExchange``'s callbacks. Only a wait (for a slot, a token, a refresh) runs in a task,
/// which prefers the request's loop, so it comes back to the loop with the machine's next
/// event. A request whose token is current and whose route has room is thus sent and answered
/// without a task or a hop.
///
/// Loop-confined: every method runs on the request's loop.
final class AuthenticatedRequest: @unchecked Sendable {
    // @unchecked: touched only on `request.loop` (the tasks it starts prefer that loop).
    private let proxy: ReverseProxy
    private let request: HTTPRequest
    private let context: RouteContext
    private let session: AuthActor
    private let limiter: InFlightLimiter?
    private var machine: ExchangeMachine
    /// The key the attempt at the upstream proves, when its token is DPoP-bound. (The token
    /// itself is passed along, not kept: its layout is not known here, so a stored copy
    /// would go through its type's metadata.)
    private var dpopKey: DPoPSessionKey?
    /// Exchanges at the upstream when this attempt took its slot, itself included; nil while
    /// no slot is held.
    private var inFlight: Int?
    /// When the current phase began, as an offset from ``RequestEnd/origin`` (a `Duration`,
    /// whose layout is known here; see ``RequestEnd``).
    private var phaseStart: Duration
    /// The first try's token came without waiting: its phase ends when the try is sent.
    private var tokenPhaseOpen = false
    /// When the attempt at the upstream was sent (an offset, as ``phaseStart``).
    private var sent: Duration = .zero
    /// Why the session gave no token (for ``ExchangeMachine/Failure/token`` and `.refresh`);
    /// nil until then, so that no error is boxed for a request that needs none.
    private var failure: (any Error)?
    /// Why no slot came (for ``ExchangeMachine/Failure/busy``).
    private var refused: GatewayError?

    init(_ proxy: ReverseProxy, _ request: HTTPRequest, _ context: RouteContext, _ session: AuthActor) {
        self.proxy = proxy
        self.request = request
        self.context = context
        self.session = session
        let s = context.settings
        limiter = s.limiter(for: context.route)
        machine = ExchangeMachine(
            policy: s.rejectionPolicy, rule: s.replayRule, bodyReplayable: request.bodyIsReplayable, bounded: limiter != nil)
        phaseStart = context.end.startOffset
    }

    /// Starts the exchange.
    func start() {
        run(machine.start())
    }

    /// Takes `action` and those that follow while each can be taken at once; a wait ends the
    /// loop here and its task takes the machine's next event from there. `token`: the one
    /// obtained last (an attempt is sent right after its token comes).
    private func run(_ action: ExchangeMachine.Action, token: AccessToken? = nil) {
        assert(request.loop.inEventLoop, "an authenticated request runs on its loop")
        var action = action
        var token = token
        while true {
            switch action {
            case .acquireSlot(let lane):
                // The machine is bounded exactly when there is a limiter (it was made so).
                guard let limiter else { preconditionFailure("a slot was asked for on a route without a limit") }
                if let n = limiter.acquireWithoutWaiting() {
                    // A slot taken without waiting counts as a wait of zero, so the queue
                    // phase's histogram holds every attempt the limit admitted.
                    inFlight = n
                    proxy.observePhase(.queue, .zero)
                    action = machine.slotGranted()
                    continue
                }
                return waitForSlot(lane, limiter)
            case .takeToken(let firstTry):
                if let t = session.tokenWithoutWaiting() {
                    token = t
                    tokenPhaseOpen = firstTry
                    action = machine.tokenObtained(generation: t.generation)
                    continue
                }
                return waitForToken(firstTry: firstTry)
            case .refresh(let generation):
                return waitForRefresh(after: generation)
            case .send(let attempt):
                guard let token else { preconditionFailure("an attempt is sent with the token obtained last") }
                return send(attempt, token)
            case .finish:
                // Only an attempt's end finishes, and ``ended(_:)`` does it with its instant.
                preconditionFailure("an exchange finishes when its attempt ends")
            case .fail(let why):
                context.end.finish(proxy.metrics, status: answer(why))
                return
            case .none:
                preconditionFailure("the exchange machine was given an event out of turn")
            }
        }
    }

    // MARK: Waits, in a task on the request's loop

    private func waitForSlot(_ lane: AdmissionQueue.Lane, _ limiter: InFlightLimiter) {
        let timeout = context.route.queueTimeout
        proxy.tasks.start(on: request.loop) { [self] in
            do throws(GatewayError) {
                inFlight = try await limiter.acquire(lane, timeout: timeout)
                endPhase(.queue)
                run(machine.slotGranted())
            } catch {
                refused = error
                run(machine.slotRefused())
            }
        }
    }

    private func waitForToken(firstTry: Bool) {
        let session = self.session
        proxy.tasks.start(on: request.loop) { [self] in
            do {
                let t = try await session.token()
                if firstTry { endPhase(.token) }
                run(machine.tokenObtained(generation: t.generation), token: t)
            } catch {
                releaseSlot()
                failure = error
                run(machine.tokenFailed())
            }
        }
    }

    private func waitForRefresh(after generation: TokenGeneration) {
        let session = self.session
        let trace = context.trace
        proxy.tasks.start(on: request.loop) { [self] in
            do {
                let t = try await trace.refresh(session, after: generation)
                endPhase(.refresh)
                run(machine.refreshed(generation: t.generation), token: t)
            } catch {
                failure = error
                run(machine.refreshFailed())
            }
        }
    }

    /// Ends the phase under way now: observed, and the next one begins.
    private func endPhase(_ phase: AuthenticatedExchange.Phase) {
        let now = RequestEnd.offset(of: .now)
        proxy.observePhase(phase, now - phaseStart)
        phaseStart = now
    }

    private func releaseSlot() {
        if inFlight != nil { limiter?.release() }
        inFlight = nil
    }

    // MARK: The attempt at the upstream

    private func send(_ attempt: ReplayRule.Attempt, _ token: AccessToken) {
        dpopKey = token.isDPoP ? token.dpopKey : nil
        sent = RequestEnd.offset(of: .now)
        if tokenPhaseOpen {
            proxy.observePhase(.token, sent - phaseStart)
            tokenPhaseOpen = false
        }
        phaseStart = sent
        if attempt.replaysSoFar > 0 { proxy.metrics.replay("replayed", session: context.route.session) }
        context.facts?.attempt(attempt)
        proxy.start(request, context, token: token, runner: self)
    }

    /// What to do with the head of the answer to the attempt at the upstream
    /// (``ExchangeMachine/headArrived(_:session:)``): deliver it, hold it back for a replay
    /// or a resend, or pass it through (refreshing in the background when the machine says
    /// so). With a DPoP-bound token, a `DPoP-Nonce` the upstream sends is kept for the next
    /// proofs to its origin (``DPoPNonceRule``).
    func decide(status: Int, headers: HTTPHeaders) -> HeadDecision {
        let session = self.session
        let name = context.route.session
        let metrics = proxy.metrics
        var head = ExchangeMachine.Head(status: status, wwwAuthenticate: headers[all: "www-authenticate"])
        if let key = dpopKey {
            if DPoPNonceRule.refusesProof(status: status, headers: headers) {
                metrics.replay("dpop_proof_rejected", session: name)
                session.countDPoPProofRefused(by: "upstream")
                session.clockSkew.proofRefused(serverDate: headers[first: "date"])
                head.proofRefused = true
            } else {
                if status < 400 { session.clockSkew.proofAccepted() }
                if let nonce = headers[first: "dpop-nonce"] {
                    key.nonces.remember(nonce, for: context.route.upstream.url("/"))
                    head.nonceRequested = DPoPNonceRule.requestedNonce(status: status, headers: headers) != nil
                }
            }
        }
        let action = machine.headArrived(head) {
            ExchangeMachine.SessionNow(current: session.tokenSnapshot, now: session.now)
        }
        switch action {
        case .deliver:
            return .forward(HTTPHeaders())
        case .holdForRefresh:
            return .intercept
        case .holdForNonce:
            metrics.replay("dpop_nonce", session: name)
            return .resendWithNonce
        case .refuseProof:
            return .answer(DPoPNonceRule.proofRejected(skew: session.clockSkew.skew))
        case .passThrough(let reason, let refreshInBackground):
            metrics.replay(reason.rawValue, session: name)
            if refreshInBackground {
                let generation = machine.attempt.generation
                proxy.tasks.start(on: nil) { _ = try? await session.refresh(after: generation) }
            }
            return .forward(action.extraHeaders)
        }
    }

    /// The attempt at the upstream ended as `outcome`: the limit learns from it, and the
    /// machine says what comes next.
    func ended(_ outcome: ExchangeOutcome) {
        assert(request.loop.inEventLoop, "an authenticated request runs on its loop")
        let now = ContinuousClock.now
        let ended = RequestEnd.offset(of: now)
        if let limiter, let n = inFlight {
            limiter.release(outcome, latency: ended - sent, inFlight: n, at: now)
        }
        inFlight = nil
        proxy.observePhase(.upstream, ended - sent)
        phaseStart = ended
        context.facts?.exchanged(outcome)
        let next = machine.attemptEnded(outcome.attemptEnd)
        if case .finish = next {
            context.end.finish(proxy.metrics, status: outcome.status, at: now)
            return
        }
        // A replay or a resend goes on from a later turn of the loop, not from inside the
        // upstream client's callbacks for the attempt that just ended.
        request.loop.execute { [self] in run(next) }
    }

    // MARK: Answers AuthGate gives itself

    /// Answers the client for `why` the exchange failed; the status it got.
    private func answer(_ why: ExchangeMachine.Failure) -> Int {
        let writer = context.writer
        switch why {
        case .token:
            return Self.respond(failure ?? CancellationError(), writer)
        case .refresh:
            proxy.metrics.replay("refresh_failed", session: context.route.session)
            return Self.respond(failure ?? CancellationError(), writer)
        case .busy:
            return proxy.refuse(refused ?? .slotCancelled, limiter, writer)
        }
    }

    private static func respond(_ error: any Error, _ writer: ResponseWriter) -> Int {
        if error is CancellationError {
            // The waiting task was cancelled: nobody to answer.
            writer.abort()
            return 499
        }
        let authError = error as? AuthError ?? AuthError.storage(error)
        let (problem, headers) = GatewayProblem.forAuthError(authError)
        writer.respond(problem: problem, headers: headers)
        return problem.status
    }
}

extension ExchangeOutcome {
    /// How the attempt ended, for the exchange's machine.
    var attemptEnd: ExchangeMachine.AttemptEnd {
        switch self {
        case .intercepted: .heldForRefresh
        case .nonceRequested: .heldForNonce
        case .forwarded, .failed: .answered
        }
    }
}

extension HTTPRequest {
    /// Whether the body is held in memory, so the request can be sent again after a refresh.
    fileprivate var bodyIsReplayable: Bool {
        if case .buffered = body { return true }
        return false
    }
}
