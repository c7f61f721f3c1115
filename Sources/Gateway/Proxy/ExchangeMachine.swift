import AuthCore
import HTTPWire

/// One proxied exchange as a value: first try → verdict on the answer's head → held for a
/// refresh (or a DPoP nonce) → resent → delivered or passed through. A public request runs
/// the same machine without a token: a slot on a bounded route, the send, the answer
/// delivered whatever it is.
///
/// The machine reads no clock, touches no socket and holds no token: it is told what happened
/// (a slot granted, a token obtained, an answer's head, how an attempt ended, a refresh done
/// or failed) and answers with what to do next. ``ProxiedRequest`` runs its actions for a
/// proxied request, on the request's loop (a task only for a wait); ``AuthenticatedExchange``
/// runs them in a task for the user-info call, whose sends are async. The rules it applies
/// are its pure inputs: ``UpstreamRejectionPolicy`` (is the answer a rejected token) and ``ReplayRule``
/// (replay it, or pass it through and why).
///
/// ```
/// idle ─start─▶ (waitingForSlot ─slotGranted─▶) waitingForToken ─tokenObtained─▶ sending
/// idle ─start─▶ (waitingForSlot ─slotGranted─▶) sending                    (public: no token)
/// sending ─attemptEnded(answered)─▶ finished
///         ─attemptEnded(heldForRefresh)─▶ waitingForRefresh ─refreshed─▶ (slot ▶ token ▶) sending
///         ─attemptEnded(heldForNonce)─▶ (slot ▶) waitingForToken ─tokenObtained─▶ sending
/// a refused slot, a failed token or refresh ─▶ finished, with the failure to answer
/// ```
///
/// An event that does not fit the state (a late one) changes nothing and returns
/// ``Action/none``.
struct ExchangeMachine: Sendable, Equatable {
    /// Which attempt the machine is getting ready.
    enum Next: Sendable, Equatable {
        /// The request's first try.
        case first
        /// A replay of `after`, whose token the upstream rejected: with the token
        /// ``AuthActor/refresh(after:)`` gives (and, on a bounded route, the session's token
        /// again once a slot is granted, since the wait may have outlived it).
        case replay(after: ReplayRule.Attempt)
        /// `of` sent again as it was, because the upstream asked its DPoP proof for a nonce:
        /// the session's token as it is now, no refresh.
        case resend(of: ReplayRule.Attempt)
    }

    /// Where the exchange is.
    enum State: Sendable, Equatable {
        /// Nothing asked for yet.
        case idle
        /// Waiting for a slot of the route's in-flight limit.
        case waitingForSlot(Next)
        /// Waiting for the session's token.
        case waitingForToken(Next)
        /// Waiting for the token newer than the rejected attempt's.
        case waitingForRefresh(after: ReplayRule.Attempt)
        /// The attempt is at the upstream.
        case sending(ReplayRule.Attempt)
        /// An answer went to the caller, or the exchange failed.
        case finished
    }

    /// What to do next.
    enum Action: Sendable, Equatable {
        /// Wait for a slot in `lane` of the route's in-flight limit; then ``slotGranted()`` or
        /// ``slotRefused()``.
        case acquireSlot(AdmissionQueue.Lane)
        /// Take the session's token (``AuthActor/token()``); then ``tokenObtained(generation:)``
        /// or ``tokenFailed()``. `firstTry`: the wait counts as the token phase.
        case takeToken(firstTry: Bool)
        /// Ask for a token newer than `after` (``AuthActor/refresh(after:)``); then
        /// ``refreshed(generation:)`` or ``refreshFailed()``.
        case refresh(after: TokenGeneration)
        /// Send the request with the token obtained last; its answer's head goes to
        /// ``headArrived(_:session:)``, its end to ``attemptEnded(_:)``.
        case send(ReplayRule.Attempt)
        /// The exchange failed before an answer reached the caller: answer with the failure.
        case fail(Failure)
        /// An answer went to the caller: the request's end (its bookkeeping) comes now.
        case finish
        /// The event did not fit the state: nothing to do.
        case none
    }

    /// Why an exchange failed.
    enum Failure: Sendable, Equatable {
        /// No token for the first try.
        case token
        /// No token for a replay or a resend (the refresh failed, or the session ended).
        case refresh
        /// No slot at the upstream.
        case busy
    }

    /// How an attempt ended, as the shell saw it once the answer's body was done.
    enum AttemptEnd: Sendable, Equatable {
        /// An answer (the upstream's, passed through or not, or a problem) went to the caller.
        case answered
        /// The answer was held back for a refresh (``HeadAction/holdForRefresh``).
        case heldForRefresh
        /// The answer was held back for a resend with a nonce (``HeadAction/holdForNonce``).
        case heldForNonce
    }

    /// The facts of an answer's head that the decision needs.
    struct Head: Sendable, Equatable {
        /// The answer's status.
        var status: Int
        /// Its `WWW-Authenticate` field values.
        var wwwAuthenticate: [String]
        /// The upstream refused the DPoP proof (``DPoPNonceRule/refusesProof(status:headers:)``).
        var proofRefused = false
        /// The upstream asked the DPoP proof for a nonce (``DPoPNonceRule/requestedNonce(status:headers:)``).
        var nonceRequested = false

        /// The facts of a head with `status` and `wwwAuthenticate`; the DPoP facts false.
        init(status: Int, wwwAuthenticate: [String] = []) {
            self.status = status
            self.wwwAuthenticate = wwwAuthenticate
        }
    }

    /// The session as it stands when a rejected token is judged.
    struct SessionNow: Sendable, Equatable {
        /// The session's token now; nil when logged out.
        var current: TokenSnapshot?
        /// Now, on the session's clock.
        var now: MonotonicInstant
    }

    /// What becomes of an answer's head.
    enum HeadAction: Sendable, Equatable {
        /// The answer goes to the caller as it is.
        case deliver
        /// The token rejection goes to the caller with `AuthGate-Replay: <reason>`. With
        /// `refreshInBackground`, the session is refreshed anyway (after the attempt's
        /// generation), so the next request carries a new token.
        case passThrough(ReplayRule.PassReason, refreshInBackground: Bool)
        /// Hold the answer back, discard its body, and replay after a refresh.
        case holdForRefresh
        /// Hold the answer back, discard its body, and send again with the nonce asked for.
        case holdForNonce
        /// Hold the answer back: the upstream refused the proof AuthGate made, and the caller
        /// gets ``DPoPNonceRule/proofRejected(skew:)`` instead.
        case refuseProof

        /// The header fields added to the caller's answer (`AuthGate-Replay` on a pass-through).
        var extraHeaders: HTTPHeaders {
            var headers = HTTPHeaders()
            if case .passThrough(let reason, _) = self { headers.add(name: "AuthGate-Replay", value: reason.headerValue) }
            return headers
        }
    }

    /// What counts as a rejected token.
    let policy: UpstreamRejectionPolicy
    /// When a rejected exchange is sent again.
    let rule: ReplayRule
    /// Whether the request's body can be sent again (buffered, or none).
    let bodyReplayable: Bool
    /// Whether the route has an in-flight limit, so each attempt waits for a slot first.
    let bounded: Bool
    /// Whether the exchange carries a session's token (an authenticated route); a public
    /// request takes none, and its answer is delivered whatever it is.
    let withToken: Bool
    /// Where the exchange is.
    private(set) var state = State.idle

    /// The attempt at the upstream, or the one whose answer was held back last; a first try
    /// of generation 0 before any was sent.
    var attempt: ReplayRule.Attempt {
        switch state {
        case .sending(let a), .waitingForRefresh(let a), .waitingForSlot(.replay(let a)), .waitingForSlot(.resend(let a)),
            .waitingForToken(.replay(let a)), .waitingForToken(.resend(let a)):
            a
        case .idle, .waitingForSlot(.first), .waitingForToken(.first), .finished:
            ReplayRule.Attempt(generation: TokenGeneration(0), replaysSoFar: 0, bodyReplayable: bodyReplayable)
        }
    }

    /// A machine for one request; `withToken` false for a public one (no token to take,
    /// refresh or replay: `policy` and `rule` are then never consulted).
    init(policy: UpstreamRejectionPolicy, rule: ReplayRule, bodyReplayable: Bool, bounded: Bool, withToken: Bool) {
        self.policy = policy
        self.rule = rule
        self.bodyReplayable = bodyReplayable
        self.bounded = bounded
        self.withToken = withToken
    }

    /// The exchange starts with nothing in hand: a slot first on a bounded route, then the token.
    mutating func start() -> Action {
        guard case .idle = state else { return .none }
        return prepare(.first)
    }

    /// A slot of the route's in-flight limit came.
    mutating func slotGranted() -> Action {
        guard case .waitingForSlot(let next) = state else { return .none }
        guard withToken else { return send(next, TokenGeneration(0)) }
        state = .waitingForToken(next)
        return .takeToken(firstTry: next == .first)
    }

    /// No slot came in time, or none would have, or the wait was cancelled.
    mutating func slotRefused() -> Action {
        guard case .waitingForSlot = state else { return .none }
        state = .finished
        return .fail(.busy)
    }

    /// The session's token came, of `generation`.
    mutating func tokenObtained(generation: TokenGeneration) -> Action {
        guard case .waitingForToken(let next) = state else { return .none }
        return send(next, generation)
    }

    /// The session's token did not come (no session, a failed refresh, a cancelled wait).
    mutating func tokenFailed() -> Action {
        guard case .waitingForToken(let next) = state else { return .none }
        state = .finished
        return .fail(next == .first ? .token : .refresh)
    }

    /// The token newer than the rejected attempt's came, of `generation`.
    mutating func refreshed(generation: TokenGeneration) -> Action {
        guard case .waitingForRefresh(let rejected) = state else { return .none }
        // A bounded route's replay waits for its own slot, in the replay lane, and then takes
        // the session's token again: the slot may have taken a while.
        if bounded { return prepare(.replay(after: rejected)) }
        return send(.replay(after: rejected), generation)
    }

    /// The refresh a replay needed failed (refused, unreachable, the session ended, the wait
    /// cancelled).
    mutating func refreshFailed() -> Action {
        guard case .waitingForRefresh = state else { return .none }
        state = .finished
        return .fail(.refresh)
    }

    /// What to do with the head of the answer to the attempt at the upstream; `session` is
    /// asked only when the answer rejects the token. Synchronous, so it can be taken in an
    /// upstream client's head callback before any byte of the body reaches the caller. Not
    /// mutating: the attempt's end (``attemptEnded(_:)``) moves the machine on, so a copy
    /// taken into a head callback is enough.
    func headArrived(_ head: Head, session: () -> SessionNow) -> HeadAction {
        guard withToken, case .sending(let attempt) = state else { return .deliver }
        if head.proofRefused { return .refuseProof }
        if head.nonceRequested, !attempt.nonceResent, attempt.bodyReplayable { return .holdForNonce }
        guard policy.classify(status: head.status, wwwAuthenticate: head.wwwAuthenticate) == .tokenRejected else {
            return .deliver
        }
        let facts = session()
        switch rule.verdict(tokenRejected: true, attempt: attempt, current: facts.current, now: facts.now) {
        case .deliver: return .deliver
        case .replay: return .holdForRefresh
        case .passThrough(let reason):
            // A streamed body went upstream as it arrived and cannot be sent again; the token
            // it carried was still rejected, so the next request needs a new one.
            return .passThrough(reason, refreshInBackground: reason == .bodyStreamed)
        }
    }

    /// The attempt at the upstream ended as `end`.
    mutating func attemptEnded(_ end: AttemptEnd) -> Action {
        guard case .sending(let attempt) = state else { return .none }
        switch end {
        case _ where !withToken, .answered:
            // A public request's answer is never held: whatever ended it, it is the last.
            state = .finished
            return .finish
        case .heldForRefresh:
            state = .waitingForRefresh(after: attempt)
            return .refresh(after: attempt.generation)
        case .heldForNonce:
            return prepare(.resend(of: attempt))
        }
    }

    /// Waits for what `next` needs before its token: a slot on a bounded route.
    private mutating func prepare(_ next: Next) -> Action {
        if bounded {
            state = .waitingForSlot(next)
            return .acquireSlot(next == .first ? .first : .replay)
        }
        guard withToken else { return send(next, TokenGeneration(0)) }
        state = .waitingForToken(next)
        return .takeToken(firstTry: next == .first)
    }

    /// Sends `next` with a token of `generation`.
    private mutating func send(_ next: Next, _ generation: TokenGeneration) -> Action {
        var attempt: ReplayRule.Attempt
        switch next {
        case .first:
            attempt = ReplayRule.Attempt(generation: generation, replaysSoFar: 0, bodyReplayable: bodyReplayable)
        case .replay(let rejected):
            attempt = ReplayRule.Attempt(
                generation: generation, replaysSoFar: rejected.replaysSoFar + 1, bodyReplayable: bodyReplayable)
            attempt.nonceResent = rejected.nonceResent
        case .resend(let asked):
            attempt = ReplayRule.Attempt(generation: generation, replaysSoFar: asked.replaysSoFar, bodyReplayable: bodyReplayable)
            attempt.nonceResent = true
        }
        state = .sending(attempt)
        return .send(attempt)
    }
}
