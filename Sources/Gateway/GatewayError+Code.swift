extension GatewayError {
    /// A stable, machine-readable code, such as `upstream-busy` or `admin-refused`. Its
    /// ``description`` never changes for a code that exists. The set is closed: the codes
    /// are the static members below; match them with `==` or `case`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable {
            case upstreamBusy = "upstream-busy"
            case upstreamShed = "upstream-shed"
            case slotCancelled = "slot-cancelled"
            case noToken = "no-token"
            case replayRefreshFailed = "replay-refresh-failed"
            case reloadRefused = "reload-refused"
            case reloadUnavailable = "reload-unavailable"
            case issuerUnusable = "issuer-unusable"
            case issuerUnreachable = "issuer-unreachable"
            case adminRefused = "admin-refused"
            case adminUnreachable = "admin-unreachable"
        }

        private let base: Base

        private init(_ base: Base) {
            self.base = base
        }

        /// The code as text, e.g. `upstream-busy`.
        public var description: String { base.rawValue }

        // MARK: A slot at a bounded upstream (InFlightLimiter)

        /// The request waited its timeout without a slot at the upstream;
        /// ``GatewayError/retryAfter`` is the queue's expected wait as it gave up.
        public static let upstreamBusy = Code(.upstreamBusy)
        /// The queue was already longer than the timeout would let the request wait: it was
        /// refused at once; ``GatewayError/retryAfter`` is the queue's expected wait.
        public static let upstreamShed = Code(.upstreamShed)
        /// The task waiting for a slot was cancelled (the client went away).
        public static let slotCancelled = Code(.slotCancelled)

        // MARK: An authenticated exchange (AuthenticatedExchange)

        /// The session gave no token to start with (no session, or it could not be
        /// refreshed); ``GatewayError/underlying`` is the session's error.
        public static let noToken = Code(.noToken)
        /// The refresh a replay needed failed (refused, unreachable, or the session ended);
        /// ``GatewayError/underlying`` is the session's error.
        public static let replayRefreshFailed = Code(.replayRefreshFailed)

        // MARK: A reload (GatewayReloader)

        /// The new configuration is invalid, or cannot be served by this process; the
        /// running one keeps serving. ``GatewayError/configurationError`` names the field.
        public static let reloadRefused = Code(.reloadRefused)
        /// The gateway was not started from a configuration source (`authgate dev`, tests):
        /// there is nothing to reload from.
        public static let reloadUnavailable = Code(.reloadUnavailable)

        // MARK: Issuer discovery (IssuerDiscovery)

        /// The provider answered with something that cannot be used (another issuer, no
        /// token endpoint, not JSON, a 4xx): a configuration error, which the message names.
        public static let issuerUnusable = Code(.issuerUnusable)
        /// The provider did not answer in time (no answer, 5xx, 429, until the patience ran out).
        public static let issuerUnreachable = Code(.issuerUnreachable)

        // MARK: The admin API's client (AdminClient)

        /// The admin API refused the request for good (a wrong admin token, an unknown
        /// session); ``GatewayError/status`` and ``GatewayError/body`` are its answer.
        public static let adminRefused = Code(.adminRefused)
        /// The admin API could not be reached at the first attempt; the message says why.
        public static let adminUnreachable = Code(.adminUnreachable)

        /// Every code, in the order above.
        public static let all: [Code] = [
            .upstreamBusy, .upstreamShed, .slotCancelled, .noToken, .replayRefreshFailed, .reloadRefused,
            .reloadUnavailable, .issuerUnusable, .issuerUnreachable, .adminRefused, .adminUnreachable,
        ]
    }
}
