/// When an authenticated exchange whose token the upstream rejected is sent again.
///
/// A pure decision, taken on the facts of one answer: whether the upstream rejected the
/// token (by the ``UpstreamRejectionPolicy``), which attempt this was, whether the request
/// body can be sent again, and the session's token as it stands now.
///
/// - The first rejection of the current token refreshes once (single-flight, through
///   ``AuthActor/refresh(after:)``) and replays.
/// - A rejection of a token that has been superseded meanwhile is replayed with the current
///   token, with no refresh: real servers revoke the previous access token when they
///   rotate, so a replay that reached a slow upstream after the next rotation is rejected
///   for a stale token, exactly as a first try can be.
/// - A replay's token that is due (it expired while the replay waited) is refreshed again.
/// - A rejection of the current, fresh token after a refresh passes through: refreshing
///   again would only loop.
/// - Each replay uses a newer generation than the attempt before it, so a request is never
///   sent twice with the same token, and there are at most ``maxReplays`` replays.
public struct ReplayRule: Sendable, Equatable {
    /// The most replays of one request (default 3).
    public var maxReplays: Int

    /// Creates a rule.
    public init(maxReplays: Int = 3) {
        self.maxReplays = maxReplays
    }

    /// One try of an exchange.
    public struct Attempt: Sendable, Equatable {
        /// The generation of the token the try carried.
        public var generation: TokenGeneration
        /// How many replays came before this try (0 for the first try).
        public var replaysSoFar: Int
        /// Whether the request body can be sent again (buffered, or none).
        public var bodyReplayable: Bool
        /// Whether the request was already sent again because the upstream asked its DPoP
        /// proof for a nonce (at most once per request).
        public var nonceResent = false

        /// Creates an attempt.
        public init(generation: TokenGeneration, replaysSoFar: Int, bodyReplayable: Bool) {
            self.generation = generation
            self.replaysSoFar = replaysSoFar
            self.bodyReplayable = bodyReplayable
        }
    }

    /// Why a rejection reaches the client.
    public enum PassReason: String, Sendable, Equatable, CaseIterable {
        /// The body was streamed upstream as it arrived and cannot be sent again.
        case bodyStreamed = "skipped_body_streamed"
        /// The request was already replayed ``ReplayRule/maxReplays`` times.
        case replayLimit = "replay_limit"
        /// The upstream rejected the current token, which a refresh had just issued and
        /// which is not due: another refresh would not help.
        case currentTokenRejected = "current_token_rejected"
        /// There is no session any more.
        case noSession = "no_session"

        /// The `AuthGate-Replay` header value telling the client why.
        public var headerValue: String {
            switch self {
            case .bodyStreamed: "skipped; the request body was streamed and cannot be replayed"
            case .replayLimit: "exhausted; the request was replayed the most times allowed"
            case .currentTokenRejected: "exhausted; the upstream rejected a freshly refreshed token"
            case .noSession: "skipped; the session has ended"
            }
        }
    }

    /// What to do with an answer.
    public enum Verdict: Sendable, Equatable {
        /// Not a token rejection: the answer goes to the client.
        case deliver
        /// Hold the answer back and send the request again with the token that
        /// ``AuthActor/refresh(after:)`` returns for the attempt's generation: the current
        /// one when it is newer, else the result of the (joined) refresh.
        case replay
        /// A token rejection the client gets, and why.
        case passThrough(PassReason)
    }

    /// The verdict on an answer to `attempt`, with the session's token `current` (`nil`
    /// when logged out) at `now` on the session's clock.
    public func verdict(
        tokenRejected: Bool, attempt: Attempt, current: TokenSnapshot?, now: MonotonicInstant
    ) -> Verdict {
        guard tokenRejected else { return .deliver }
        guard attempt.bodyReplayable else { return .passThrough(.bodyStreamed) }
        guard attempt.replaysSoFar < maxReplays else { return .passThrough(.replayLimit) }
        guard let current else {
            // The first rejection still asks: the client then learns that the session ended.
            return attempt.replaysSoFar == 0 ? .replay : .passThrough(.noSession)
        }
        if current.generation > attempt.generation { return .replay }
        if attempt.replaysSoFar == 0 { return .replay }
        if current.isDue(at: now) { return .replay }
        return .passThrough(.currentTokenRejected)
    }
}
