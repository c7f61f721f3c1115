import AuthCore

/// Where a proxied exchange spends its time, as ``GatewayMetrics`` records it.
public enum ExchangePhase: String, Sendable, CaseIterable {
    /// Waiting for a slot at the upstream (``InFlightLimiter``).
    case queue
    /// Waiting for the session's token (a proactive refresh included).
    case token
    /// Waiting for the refresh (or the newer token) a replay needs.
    case refresh
    /// One try at the upstream, from sending to the end of its answer.
    case upstream
}

/// An exchange made with a session's token by a caller whose sends are async (the user-info
/// call). The caller sends each attempt and says how it ended; in between, this value runs
/// the waits of the exchange's ``ExchangeMachine`` (the session's token, the refresh a replay
/// needs) in the caller's task. A proxied request runs the same machine on its loop instead
/// (``ProxiedRequest``), since its sends answer through the loop's callbacks.
///
/// ```swift
/// var exchange = AuthenticatedExchange(session: session, policy: policy, rule: rule)
/// while let attempt = try await exchange.next() {
///     let answer = await send(carrying: attempt.token)
///     switch exchange.headArrived(head(of: answer)) {
///     case .holdForRefresh: exchange.attemptEnded(.heldForRefresh)  // next() refreshes, then replays
///     case .holdForNonce: exchange.attemptEnded(.heldForNonce)      // next() resends as it was
///     default: exchange.attemptEnded(.answered)                     // next() returns nil
///     }
/// }
/// ```
struct AuthenticatedExchange: Sendable {
    /// One attempt to send.
    struct Attempt: Sendable {
        /// The token it carries.
        let token: AccessToken
        /// What the machine knows of it (its generation, the replays before it).
        let attempt: ReplayRule.Attempt
    }

    /// The session whose token the exchange carries.
    let session: AuthActor
    private var machine: ExchangeMachine
    /// What the machine asked for last and the exchange has not done yet; ``ExchangeMachine/Action/none``
    /// while an attempt is out.
    private var action: ExchangeMachine.Action

    /// An exchange for `session`, judged by `policy` and `rule`; its body, if any, can be sent
    /// again.
    init(session: AuthActor, policy: UpstreamRejectionPolicy, rule: ReplayRule) {
        self.session = session
        machine = ExchangeMachine(policy: policy, rule: rule, bodyReplayable: true, bounded: false, withToken: true)
        action = machine.start()
    }

    /// Waits for what the next attempt needs (the session's token, or the refresh a replay
    /// needs) and returns the attempt; nil once an attempt was answered. Throws a
    /// ``GatewayError`` when the exchange stops without an answer, with the session's error as
    /// ``GatewayError/underlying``: ``GatewayError/Code/noToken`` (no token to start with: no
    /// session, or it could not be refreshed) or ``GatewayError/Code/replayRefreshFailed`` (the
    /// refresh a replay or a resend needed failed: refused, unreachable, or the session ended).
    ///
    /// Called again before the attempt it returned has ended (``attemptEnded(_:)``), it traps.
    mutating func next() async throws(GatewayError) -> Attempt? {
        var failure: any Error = CancellationError()
        while true {
            switch action {
            case .takeToken:
                do {
                    let token = try await session.token()
                    action = machine.tokenObtained(generation: token.generation)
                    if case .send(let attempt) = action { return out(Attempt(token: token, attempt: attempt)) }
                } catch {
                    failure = error
                    action = machine.tokenFailed()
                }
            case .refresh(let generation):
                do {
                    let token = try await session.refresh(after: generation)
                    action = machine.refreshed(generation: token.generation)
                    if case .send(let attempt) = action { return out(Attempt(token: token, attempt: attempt)) }
                } catch {
                    failure = error
                    action = machine.refreshFailed()
                }
            case .finish:
                return nil
            case .fail(.token):
                throw .noToken(failure)
            case .fail(.refresh):
                throw .replayRefreshFailed(failure)
            case .acquireSlot, .fail(.busy), .send:
                preconditionFailure("an exchange without a limit sends only with the token it just obtained")
            case .none:
                preconditionFailure("the attempt out has not ended yet")
            }
        }
    }

    /// What to do with the head of the answer to the attempt out: the session is asked only
    /// when the answer rejects the token.
    func headArrived(_ head: ExchangeMachine.Head) -> ExchangeMachine.HeadAction {
        machine.headArrived(head) { [session] in ExchangeMachine.SessionNow(current: session.tokenSnapshot, now: session.now) }
    }

    /// The attempt out ended as `end`: answered, or held back for a refresh or a nonce.
    mutating func attemptEnded(_ end: ExchangeMachine.AttemptEnd) {
        action = machine.attemptEnded(end)
    }

    /// Marks `attempt` as out: nothing is due until it ends.
    private mutating func out(_ attempt: Attempt) -> Attempt {
        action = .none
        return attempt
    }
}
