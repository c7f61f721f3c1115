extension AuthActor {
    /// Timing of refreshes, and the session's DPoP key.
    public struct Configuration: Sendable {
        /// Refresh when the token expires within this much time.
        public var skew: Duration
        /// A random extra lead in `0..<jitter`, drawn per token, so replicas do not refresh
        /// in lockstep. The total lead never exceeds half the token's lifetime.
        public var jitter: Duration
        /// The refresh-loop guard. It counts only premature refreshes (a rejected fresh token),
        /// never expiry-driven ones; see ``RefreshGate/admit(at:replacing:)``.
        public var refreshWindow: RefreshWindow
        /// Backoff after transient failures.
        public var backoff: BackoffPolicy
        /// When set (in `0 < f < 1`), refresh when this fraction of a token's lifetime is
        /// left, instead of ``skew`` before expiry (`0.5`: at half-life). Jitter then only
        /// delays the refresh, by at most a tenth of the lifetime.
        public var leadFraction: Double?
        /// Where the key every token request proves comes from (RFC 9449), when the session
        /// uses DPoP: its tokens are bound to the key of the session that obtained them.
        public var dpop: DPoPKeySource?
        /// The client certificate the token endpoint is shown now (RFC 8705), read where the
        /// transport reads it for each new connection; nil when none is configured or it
        /// cannot be read. Its binding is kept with the tokens a login or refresh obtains,
        /// and a process whose certificate is older than the tokens' does not refresh them
        /// (``CertificateBindingRule``).
        public var shownCertificate: (@Sendable () -> CertificateBinding?)?
        /// How long the upstream took, lately, to answer the requests the session's tokens
        /// were sent with (a high percentile), when it is known; read as each token arrives.
        ///
        /// Used only where ``skew`` is capped at half the lifetime (a token living less than
        /// twice the lead): such a token is then refreshed that long before it expires, not
        /// at half-life. Refreshing earlier than that protects no request, since one sent
        /// with the token reaches the upstream within it; and with an authorization server
        /// that revokes the previous access token at rotation, every refresh rejects the
        /// requests still at the upstream, so half as many refreshes reject half as many.
        /// The lead is never under a tenth of the lifetime nor over half of it.
        public var upstreamLatency: (@Sendable () -> Duration?)?

        /// Creates a configuration.
        public init(
            skew: Duration = .seconds(30), jitter: Duration = .seconds(5),
            refreshWindow: RefreshWindow = RefreshWindow(), backoff: BackoffPolicy = BackoffPolicy(),
            leadFraction: Double? = nil, dpop: DPoPKeySource? = nil,
            shownCertificate: (@Sendable () -> CertificateBinding?)? = nil
        ) {
            self.shownCertificate = shownCertificate
            self.dpop = dpop
            self.leadFraction = leadFraction
            self.skew = skew
            self.jitter = jitter
            self.refreshWindow = refreshWindow
            self.backoff = backoff
        }
    }
}
