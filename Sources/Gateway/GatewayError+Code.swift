extension GatewayError {
    /// A stable, machine-readable code, such as `upstream-busy` or `admin-refused`. Its
    /// ``description`` never changes for a code that exists. The set is closed: the codes
    /// are the static members below; match them with `==` or `case`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable {
            case invalidJSON = "invalid-json"
            case missingField = "missing-field"
            case unknownField = "unknown-field"
            case invalidValue = "invalid-value"
            case conflict = "conflict"
            case unreadableFile = "unreadable-file"
            case unusablePath = "unusable-path"
            case unsafePermissions = "unsafe-permissions"
            case secretExposed = "secret-exposed"
            case unsupported = "unsupported"
            case storeUnavailable = "store-unavailable"
            case configurationFailed = "configuration-failed"
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

        // MARK: A configuration that cannot be used (exit 78; GatewayError/field names it)

        /// The text is not strict JSON (the file, or a variable's or flag's `{…}`/`[…]`
        /// value), or the file is JSON but not an object.
        public static let invalidJSON = Code(.invalidJSON)
        /// A field that must be set is not (`missing field stateDirectory`, `store.url is required …`).
        public static let missingField = Code(.missingField)
        /// A key, `AUTHGATE_*` variable or flag names no configuration field.
        public static let unknownField = Code(.unknownField)
        /// A value has the wrong type, is out of range or malformed; or an argument is not
        /// a configuration flag.
        public static let invalidValue = Code(.invalidValue)
        /// Two settings cannot go together, or two that must differ are the same (two
        /// listeners on one port, a route prefix given twice).
        public static let conflict = Code(.conflict)
        /// A file the configuration names cannot be read, or does not hold what it must
        /// (a secret file that is empty, not UTF-8 or on more than one line; a key file).
        public static let unreadableFile = Code(.unreadableFile)
        /// A path the configuration names cannot be used as it must be: the state directory
        /// is not a directory or cannot be created or examined, a Unix socket's directory
        /// does not exist, the key file cannot be examined.
        public static let unusablePath = Code(.unusablePath)
        /// The state directory or the key file lets its group or others in.
        public static let unsafePermissions = Code(.unsafePermissions)
        /// A secret is given where it would leak (a flag, a URL's password): it belongs in a file.
        public static let secretExposed = Code(.secretExposed)
        /// The setting is well formed but this build or this process cannot honour it (a
        /// Unix socket for the proxy, OTLP over gRPC, a new session on reload).
        public static let unsupported = Code(.unsupported)
        /// The configured token store refused at start (unreachable, a refused password,
        /// missing rights, a newer schema); ``GatewayError/underlying`` is the store's error.
        public static let storeUnavailable = Code(.storeUnavailable)
        /// Reading the configuration failed for a reason none of the codes above names;
        /// ``GatewayError/underlying`` is the error.
        public static let configurationFailed = Code(.configurationFailed)

        /// Whether the code is one of a configuration that cannot be used (the codes above):
        /// `authgate serve` exits 78 for it, and ``GatewayError/field`` names the field.
        public var isConfiguration: Bool { Self.configuration.contains(self) }

        /// The configuration codes, in the order above.
        public static let configuration: [Code] = [
            .invalidJSON, .missingField, .unknownField, .invalidValue, .conflict, .unreadableFile, .unusablePath,
            .unsafePermissions, .secretExposed, .unsupported, .storeUnavailable, .configurationFailed,
        ]

        // MARK: A slot at a bounded upstream (InFlightLimiter)

        /// The request waited its timeout without a slot at the upstream;
        /// ``GatewayError/retryAfter`` is the queue's expected wait as it gave up.
        public static let upstreamBusy = Code(.upstreamBusy)
        /// The queue was already longer than the timeout would let the request wait: it was
        /// refused at once; ``GatewayError/retryAfter`` is the queue's expected wait.
        public static let upstreamShed = Code(.upstreamShed)
        /// The task waiting for a slot was cancelled (the client went away).
        public static let slotCancelled = Code(.slotCancelled)

        // MARK: An exchange whose sends are async (AuthenticatedExchange: the user-info call)

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
        public static let all: [Code] =
            configuration + [
                .upstreamBusy, .upstreamShed, .slotCancelled, .noToken, .replayRefreshFailed, .reloadRefused,
                .reloadUnavailable, .issuerUnusable, .issuerUnreachable, .adminRefused, .adminUnreachable,
            ]
    }
}
