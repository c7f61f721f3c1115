public import AuthCore

/// What authenticated routes need: the sessions, the rules for reading upstream 401s, and
/// how much of a request body is kept for a replay.
public struct ProxyAuthentication: Sendable {
    /// The sessions by name; each authenticated route names the one whose token it gets.
    public let sessions: [String: AuthActor]
    /// The `default` session.
    public var session: AuthActor? { sessions["default"] }
    /// Tells a rejected token (refresh and replay) from `insufficient_scope`, 403 or a
    /// downstream service's 401 (passed through).
    public var rejectionPolicy: UpstreamRejectionPolicy
    /// Request bodies up to this size are buffered so they can be replayed after a
    /// refresh (a chunked one when it ends within it); larger bodies are streamed and
    /// never replayed.
    public var replayLimit: Int
    /// When a rejected request is sent again (default: at most 3 replays).
    public var replayRule: ReplayRule

    /// Creates the settings.
    public init(
        session: AuthActor, rejectionPolicy: UpstreamRejectionPolicy = UpstreamRejectionPolicy(), replayLimit: Int = 1 << 20,
        replayRule: ReplayRule = ReplayRule()
    ) {
        self.init(
            sessions: ["default": session], rejectionPolicy: rejectionPolicy, replayLimit: replayLimit, replayRule: replayRule)
    }

    /// Creates the settings for several named sessions.
    public init(
        sessions: [String: AuthActor], rejectionPolicy: UpstreamRejectionPolicy = UpstreamRejectionPolicy(),
        replayLimit: Int = 1 << 20, replayRule: ReplayRule = ReplayRule()
    ) {
        self.replayRule = replayRule
        self.sessions = sessions
        self.rejectionPolicy = rejectionPolicy
        self.replayLimit = replayLimit
    }
}
