import AuthCore
import HTTPWire
import Runtime

/// Authenticated routes: the token attached, a rejected token refreshed and the request
/// replayed (``AuthenticatedExchange``).
///
/// When the session's token is current (``AuthActor/tokenWithoutWaiting()``) and the route
/// has no in-flight bound or a free slot in it nobody waits for, the first try leaves at once
/// from the request's loop, with no task and no hop onto the actor; only when its answer says
/// the token was rejected does the rest of the path (refresh, replay) run in a task.
/// Otherwise the whole path runs in a task.
extension ReverseProxy {
    /// Sends the first try with `token`, taken without waiting, in `slot` of the route's
    /// in-flight limit when it has one (taken without waiting too; `inFlight` counts it); a
    /// rejection goes on to the refresh and the replay in a task.
    func sendWithCurrentToken(
        _ request: HTTPRequest, _ r: RouteContext, _ session: AuthActor, _ token: AccessToken,
        slot: (limiter: InFlightLimiter, inFlight: Int)?
    ) {
        var starting = ExchangeMachine(
            policy: r.settings.rejectionPolicy, rule: r.settings.replayRule, bodyReplayable: request.bodyIsReplayable,
            bounded: slot != nil)
        guard case .send(let attempt) = starting.startWithCurrentToken(generation: token.generation) else { return }
        // A constant: the callbacks below take copies, and a captured variable would be boxed.
        let machine = starting
        let metrics = self.metrics
        let observe = observePhase
        let end = r.end
        let sent = ContinuousClock.now
        // A slot taken without waiting counts as a wait of zero, so the queue phase's
        // histogram holds every attempt the limit admitted.
        if slot != nil { observe(.queue, .zero) }
        observe(.token, end.elapsed(until: sent))
        let decide = headDecision(machine, session, r.route.session, dpop: Self.dpop(r.route, token))
        end.facts?.attempt(attempt)
        start(request, r, token: token, decide: decide) { [self] outcome in
            let ended = ContinuousClock.now
            if let slot { slot.limiter.release(outcome, latency: ended - sent, inFlight: slot.inFlight, at: ended) }
            observe(.upstream, ended - sent)
            end.facts?.exchanged(outcome)
            var ending = machine
            let next = ending.attemptEnded(outcome.attemptEnd)
            if case .finish = next {
                end.finish(metrics, status: outcome.status, at: ended)
                return
            }
            let held = ending
            tasks.start(on: request.loop) {
                let status = await self.authenticated(request, r, session, machine: held, next: next)
                end.finish(metrics, status: status)
            }
        }
    }

    /// Serves one request on an authenticated route; returns the status the client got.
    /// With `machine`, its first try was sent and its answer held back: the exchange goes on
    /// from `next`.
    func authenticated(
        _ request: HTTPRequest, _ r: RouteContext, _ session: AuthActor, machine: ExchangeMachine? = nil,
        next: ExchangeMachine.Action = .none
    ) async -> Int {
        let metrics = self.metrics
        let s = r.settings
        var path = AuthenticatedExchange(
            session: session, policy: s.rejectionPolicy, rule: s.replayRule, observe: observePhase,
            limiter: s.limiter(for: r.route))
        path.queueTimeout = r.route.queueTimeout
        path.trace = r.trace
        let name = r.route.session
        var begun = machine ?? path.machine(bodyReplayable: request.bodyIsReplayable)
        let action = machine == nil ? begun.start() : next
        do throws(GatewayError) {
            return try await path.run(begun, action) { token, sending in
                let attempt = sending.attempt
                if attempt.replaysSoFar > 0 { metrics.replay("replayed", session: name) }
                r.facts?.attempt(attempt)
                let decide = headDecision(sending, session, name, dpop: Self.dpop(r.route, token))
                let outcome = await exchange(request, r, token: token, decide: decide)
                r.facts?.exchanged(outcome)
                if case .nonceRequested = outcome { return .resend }
                switch outcome.sample {
                case .superseded: return .replay
                case .some(let sample) where sample == .dropped || sample == .timedOut:
                    return .failed(outcome.status, sample)
                default: return .done(outcome.status)
                }
            }
        } catch {
            switch error.code {
            case .noToken:
                return respond(error.underlying ?? error, r.writer)
            case .replayRefreshFailed:
                metrics.replay("refresh_failed", session: name)
                return respond(error.underlying ?? error, r.writer)
            default:
                return refuse(error, path.limiter, r.writer)
            }
        }
    }

    /// What to do with the head of the answer to the attempt `machine` is sending
    /// (``ExchangeMachine/headArrived(_:session:)``): deliver it, hold it back for a replay
    /// or a resend, or pass it through (refreshing in the background when the machine says so).
    ///
    /// The closure holds the machine (its rules and the attempt), the session and the name,
    /// not a copy of the request's ``AuthenticatedExchange``: it is made for every
    /// authenticated request.
    ///
    /// With `dpop` (a DPoP-bound token), a `DPoP-Nonce` the upstream sends is kept for the
    /// next proofs to its origin, and an answer asking for one (``DPoPNonceRule``) is held
    /// back for one resend, when the body can go again.
    private func headDecision(
        _ machine: ExchangeMachine, _ session: AuthActor, _ name: String, dpop: (key: DPoPSessionKey, origin: String)? = nil
    ) -> @Sendable (Int, HTTPHeaders) -> HeadDecision {
        let metrics = self.metrics
        let tasks = self.tasks
        return { status, headers in
            var head = ExchangeMachine.Head(status: status, wwwAuthenticate: headers[all: "www-authenticate"])
            if let dpop {
                if DPoPNonceRule.refusesProof(status: status, headers: headers) {
                    metrics.replay("dpop_proof_rejected", session: name)
                    session.countDPoPProofRefused(by: "upstream")
                    session.clockSkew.proofRefused(serverDate: headers[first: "date"])
                    head.proofRefused = true
                } else {
                    if status < 400 { session.clockSkew.proofAccepted() }
                    if let nonce = headers[first: "dpop-nonce"] {
                        dpop.key.nonces.remember(nonce, for: dpop.origin)
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
                    tasks.start(on: nil) { _ = try? await session.refresh(after: generation) }
                }
                return .forward(action.extraHeaders)
            }
        }
    }

    /// The key and origin of the proofs of `route` when `token` is DPoP-bound.
    private static func dpop(_ route: ProxyRoute, _ token: AccessToken) -> (key: DPoPSessionKey, origin: String)? {
        guard token.isDPoP, let key = token.dpopKey else { return nil }
        return (key, route.upstream.url("/"))
    }

    private func respond(_ error: any Error, _ writer: ResponseWriter) -> Int {
        if error is CancellationError {
            // The waiting task was cancelled (the client went away): nobody to answer.
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
