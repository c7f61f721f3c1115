import AuthCore
import HTTPWire
import Runtime

/// One proxied request, run on its loop: the actions of its ``ExchangeMachine`` (slot,
/// token, send, refresh, replay, resend), from the first try to the answer the client gets,
/// and the request's end. A public request runs the same way with no session: a slot on a
/// bounded route, the send, the answer.
///
/// Every action that can be taken at once is taken at once, from the loop: a free slot of the
/// route's in-flight limit nobody waits for, the session's token when it is current
/// (``AuthActor/tokenWithoutWaiting()``), the send itself, whose answer comes back through
/// ``ProxyExchange``'s callbacks. A wait for a slot is a callback from the limiter, brought
/// back to the loop as a job; a wait for the session (a token, a refresh) runs in a task,
/// which prefers the request's loop, so it comes back to the loop with the machine's next
/// event. A request whose token is current (or that needs none) and whose route has room is
/// thus sent and answered without a task or a hop.
///
/// Loop-confined: every method runs on the request's loop.
final class ProxiedRequest: ExchangeAttemptOwner, @unchecked Sendable {
    // @unchecked: touched only on `loop` (the tasks it starts prefer that loop).
    private let proxy: ReverseProxy
    /// The request, while an attempt may still be sent: kept for an authenticated request's
    /// replays and resends; for a public one only while it waits for its slot, and not at all
    /// when it is sent at once. A request not kept leaves its header fields' storage to serve
    /// the next message parsed on this thread (``HTTPHeaders/recycle()``), where a kept one's
    /// is shared and reallocated (two allocations).
    private var request: HTTPRequest?
    /// The request's loop.
    private let loop: EventLoop
    private let context: RouteContext
    /// The session whose token the request carries; nil on a public route.
    private let session: AuthActor?
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
    /// What the client hears when the upstream refused the DPoP proof, made as the refusal
    /// came (the clock skew it names is the one that refusal measured).
    private var proofRefusal: Problem?

    private init(_ proxy: ReverseProxy, _ request: HTTPRequest, _ context: RouteContext, _ session: AuthActor?) {
        self.proxy = proxy
        self.loop = request.loop
        self.context = context
        self.session = session
        let s = context.settings
        limiter = s.limiter(for: context.route)
        machine = ExchangeMachine(
            policy: s.rejectionPolicy, rule: s.replayRule, bodyReplayable: request.bodyIsReplayable, bounded: limiter != nil,
            withToken: session != nil)
        phaseStart = context.end.startOffset
    }

    /// Runs `request` on `context`'s route, with `session`'s token (nil: a public route).
    static func start(_ proxy: ReverseProxy, _ request: HTTPRequest, _ context: RouteContext, _ session: AuthActor?) {
        let runner = ProxiedRequest(proxy, request, context, session)
        let first = runner.machine.start()
        if case .send(let attempt) = first {
            // Nothing to wait for and no other attempt to come (a public route without a
            // limit): sent now, the request not kept.
            return runner.send(attempt, nil, request)
        }
        runner.request = request
        runner.run(first)
    }

    /// Takes `action` and those that follow while each can be taken at once; a wait ends the
    /// loop here and its task takes the machine's next event from there. `token`: the one
    /// obtained last (an attempt is sent right after its token comes).
    private func run(_ action: ExchangeMachine.Action, token: AccessToken? = nil) {
        assert(loop.inEventLoop, "a proxied request runs on its loop")
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
                    if session != nil { proxy.observePhase(.queue, .zero) }
                    action = machine.slotGranted()
                    continue
                }
                return waitForSlot(lane, limiter)
            case .takeToken(let firstTry):
                // The machine asks for a token only when it was made with one.
                guard let session else { preconditionFailure("a token was asked for on a public route") }
                if let t = session.tokenWithoutWaiting() {
                    token = t
                    tokenPhaseOpen = firstTry
                    action = machine.tokenObtained(generation: t.generation)
                    continue
                }
                return waitForToken(session, firstTry: firstTry)
            case .refresh(let generation):
                guard let session else { preconditionFailure("a refresh was asked for on a public route") }
                return waitForRefresh(session, after: generation)
            case .send(let attempt):
                // A public request is sent once: the runner lets it go as it is sent.
                guard let request = session == nil ? request.take() : request else {
                    preconditionFailure("an attempt is sent after the request was let go")
                }
                return send(attempt, token, request)
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

    // MARK: Waits

    /// Waits in the limiter's queue without a task: the limiter tells whoever releases the
    /// slot (or times the wait out), and the answer comes back to the loop as a job. Under
    /// overload nearly every request waits here, so the wait costs no task, no executor hop
    /// and no timer of its own. Counted in the proxy's tasks all the same: shutdown waits for
    /// it before it stops the loop the answer comes back to.
    private func waitForSlot(_ lane: AdmissionQueue.Lane, _ limiter: InFlightLimiter) {
        let loop = self.loop
        proxy.tasks.enter()
        let request = limiter.requestSlot(lane, timeout: context.route.queueTimeout) { [self] result in
            loop.execute { [self] in slotDecided(result) }
        }
        switch request {
        case .waiting: return
        case .granted(let n): slotDecided(.success(n))
        case .refused(let failure): slotDecided(.failure(failure))
        }
    }

    private func slotDecided(_ result: Result<Int, GatewayError>) {
        proxy.tasks.leave()
        switch result {
        case .success(let n):
            inFlight = n
            if session != nil { endPhase(.queue) }
            run(machine.slotGranted())
        case .failure(let failure):
            refused = failure
            run(machine.slotRefused())
        }
    }

    // MARK: Waits for the session, in a task on the request's loop

    private func waitForToken(_ session: AuthActor, firstTry: Bool) {
        proxy.tasks.start(on: loop) { [self] in
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

    private func waitForRefresh(_ session: AuthActor, after generation: TokenGeneration) {
        let trace = context.trace
        proxy.tasks.start(on: loop) { [self] in
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
    private func endPhase(_ phase: ExchangePhase) {
        let now = RequestEnd.offset(of: .now)
        proxy.observePhase(phase, now - phaseStart)
        phaseStart = now
    }

    private func releaseSlot() {
        if inFlight != nil { limiter?.release() }
        inFlight = nil
    }

    // MARK: The attempt at the upstream

    /// Sends `attempt` of `request` with `token`: the one obtained last, or none on a public
    /// route.
    private func send(_ attempt: ReplayRule.Attempt, _ token: AccessToken?, _ request: HTTPRequest) {
        // The latency of an attempt is read for the limit and the phases only.
        if limiter != nil || session != nil { sent = RequestEnd.offset(of: .now) }
        if let token {
            dpopKey = token.isDPoP ? token.dpopKey : nil
            if tokenPhaseOpen {
                proxy.observePhase(.token, sent - phaseStart)
                tokenPhaseOpen = false
            }
            phaseStart = sent
            if attempt.replaysSoFar > 0 { proxy.metrics.replay("replayed", session: context.route.session) }
            context.facts?.attempt(attempt)
        } else if session != nil {
            preconditionFailure("an attempt is sent with the token obtained last")
        }
        proxy.start(request, context, token: token, runner: self)
    }

    /// What to do with the head of the answer to the attempt at the upstream
    /// (``ExchangeMachine/headArrived(_:session:)``): deliver it, hold it back for a replay
    /// or a resend, or pass it through (refreshing in the background when the machine says
    /// so). With a DPoP-bound token, a `DPoP-Nonce` the upstream sends is kept for the next
    /// proofs to its origin (``DPoPNonceRule``).
    func decide(status: Int, headers: HTTPHeaders) -> ExchangeMachine.HeadAction {
        // A public request's answer goes to the client whatever it is.
        guard let session else { return .deliver }
        let name = context.route.session
        let metrics = proxy.metrics
        var head = ExchangeMachine.Head(status: status, wwwAuthenticate: headers[all: "www-authenticate"])
        if let key = dpopKey {
            let dpop = DPoPNonceRule.verdict(status: status, headers: headers, nonceResent: machine.attempt.nonceResent)
            if let nonce = dpop.nonce { key.nonces.remember(nonce, for: context.route.upstream.url("/")) }
            head.nonceRequested = dpop.nonceRequested
            if dpop.proofRefused {
                metrics.replay("dpop_proof_rejected", session: name)
                session.countDPoPProofRefused(by: "upstream")
                session.clockSkew.proofRefused(serverDate: headers[first: "date"])
                proofRefusal = DPoPNonceRule.proofRejected(skew: session.clockSkew.skew)
                head.proofRefused = true
            } else if dpop.proofAccepted {
                session.clockSkew.proofAccepted()
            }
        }
        let action = machine.headArrived(head) {
            ExchangeMachine.SessionNow(current: session.tokenSnapshot, now: session.now)
        }
        switch action {
        case .deliver, .holdForRefresh, .refuseProof:
            break
        case .holdForNonce:
            metrics.replay("dpop_nonce", session: name)
        case .passThrough(let reason, let refreshInBackground):
            metrics.replay(reason.rawValue, session: name)
            if refreshInBackground {
                let generation = machine.attempt.generation
                proxy.tasks.start(on: nil) { _ = try? await session.refresh(after: generation) }
            }
        }
        return action
    }

    /// The attempt at the upstream ended as `outcome`: the limit learns from it, and the
    /// machine says what comes next.
    func ended(_ outcome: ExchangeOutcome) {
        assert(loop.inEventLoop, "a proxied request runs on its loop")
        let now = ContinuousClock.now
        let ended = RequestEnd.offset(of: now)
        if let limiter, let n = inFlight {
            limiter.release(outcome, latency: ended - sent, inFlight: n, at: now)
        }
        inFlight = nil
        if session != nil {
            proxy.observePhase(.upstream, ended - sent)
            phaseStart = ended
        }
        context.facts?.exchanged(outcome)
        let next = machine.attemptEnded(outcome.attemptEnd)
        if case .finish = next {
            var status = outcome.status
            if case .held(.proofRefused, _) = outcome, let problem = proofRefusal {
                // The upstream refused the proof AuthGate made: the client hears why from AuthGate.
                context.writer.respond(problem: problem)
                status = problem.status
            }
            context.end.finish(proxy.metrics, status: status, at: now)
            return
        }
        // A replay or a resend goes on from a later turn of the loop, not from inside the
        // upstream client's callbacks for the attempt that just ended.
        loop.execute { [self] in run(next) }
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
            return refuse(refused ?? .slotCancelled, writer)
        }
    }

    /// Answers a request that got no slot of its route's limit (`failure`, the limiter's:
    /// ``GatewayError/Code/upstreamBusy``, ``GatewayError/Code/upstreamShed`` or
    /// ``GatewayError/Code/slotCancelled``); the status the client got.
    private func refuse(_ failure: GatewayError, _ writer: ResponseWriter) -> Int {
        var h = HTTPHeaders()
        switch failure.code {
        case .upstreamBusy:
            proxy.metrics.upstreamShed(limiter, reason: "timeout")
            h.add(name: "Retry-After", value: String(failure.retryAfter ?? 1))
            writer.respond(problem: GatewayProblem.upstreamBusy, headers: h)
        case .upstreamShed:
            proxy.metrics.upstreamShed(limiter, reason: "expected_wait")
            h.add(name: "Retry-After", value: String(failure.retryAfter ?? 1))
            writer.respond(problem: GatewayProblem.upstreamBusyAtOnce, headers: h)
        default:
            // The client went away while waiting: nobody to answer.
            writer.abort()
            return 499
        }
        return 503
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
    /// How the attempt ended, for the exchange's machine: a proof the upstream refused is
    /// answered (by AuthGate), like an answer that went to the client.
    var attemptEnd: ExchangeMachine.AttemptEnd {
        switch self {
        case .held(.forRefresh, _): .heldForRefresh
        case .held(.forNonce, _): .heldForNonce
        case .held(.proofRefused, _), .forwarded, .failed: .answered
        }
    }

    /// What the exchange teaches an in-flight limit: nil when nothing (an attempt that failed
    /// otherwise than by a timeout, a refused connect or a reset: the client left, the answer
    /// was invalid, the request's body failed).
    var sample: AdaptiveLimit.Outcome? {
        switch self {
        case .held(.forRefresh, _): .superseded
        case .held(.forNonce, _), .held(.proofRefused, _), .forwarded: .answered
        case .failed(let e):
            switch e.code {
            case .timeout: .timedOut
            case .connectFailed, .connectionReset: .dropped
            default: nil
            }
        }
    }

    /// The status the upstream answered with, or the problem's that went to the client in
    /// its place (a held answer's is the upstream's: the runner answers a refused proof with
    /// a problem of its own).
    var status: Int {
        switch self {
        case .forwarded(let s, _): s
        case .held(_, let s): s
        case .failed(let e): e.status
        }
    }
}

extension InFlightLimiter {
    /// Gives back the slot of an exchange that ended with `outcome`, with what it teaches.
    func release(_ outcome: ExchangeOutcome, latency: Duration, inFlight: Int, at now: ContinuousClock.Instant) {
        if let sample = outcome.sample {
            release(AdaptiveLimit.Sample(latency: latency, inFlight: inFlight, outcome: sample), at: now)
        } else {
            release()
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
