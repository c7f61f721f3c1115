extension RuntimeError {
    /// A stable, machine-readable code, such as `listen-failed` or `upstream-timeout`. Its
    /// ``description`` is what problem documents (`https://authgate.dev/problems/<code>`)
    /// and metrics carry, so it never changes for a code that exists. The set is closed:
    /// the codes are the static members below; match them with `==` or `case`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable {
            case libuvFailed = "libuv-failed"
            case systemCallFailed = "system-call-failed"
            case listenFailed = "listen-failed"
            case curlFailed = "libcurl-failed"
            case connectFailed = "upstream-connect-failed"
            case connectionReset = "upstream-connection-reset"
            case tls = "upstream-tls-failed"
            case timeout = "upstream-timeout"
            case invalidResponse = "upstream-invalid-response"
            case responseTooLarge = "upstream-response-too-large"
            case cancelled = "upstream-cancelled"
            case invalidRequest = "upstream-invalid-request"
            case upstreamFailed = "upstream-failed"
            case requestBodyTooLarge = "request-body-too-large"
            case clientDisconnected = "client-disconnected"
        }

        private let base: Base

        private init(_ base: Base) {
            self.base = base
        }

        /// The code as text, e.g. `upstream-timeout`.
        public var description: String { base.rawValue }

        /// Whether this is one of the codes an upstream exchange ends with (`upstream-…`).
        public var isUpstream: Bool { base.rawValue.hasPrefix("upstream-") }

        // MARK: The loop and the system

        /// A libuv call failed; ``RuntimeError/systemCode`` says why.
        public static let libuvFailed = Code(.libuvFailed)
        /// A system call made next to libuv failed (`setsockopt`, `prctl`, …);
        /// ``RuntimeError/systemCode`` is the negated `errno`.
        public static let systemCallFailed = Code(.systemCallFailed)
        /// A server could not listen on its address: the port or socket is in use, a file
        /// that is not a socket is in the way, the address or path is not usable.
        /// ``RuntimeError/systemCode`` says which (`-EADDRINUSE`, `-EEXIST`, …).
        public static let listenFailed = Code(.listenFailed)
        /// A libcurl call failed; ``RuntimeError/curlCode`` says why.
        public static let curlFailed = Code(.curlFailed)

        // MARK: Upstream exchanges

        /// The upstream could not be reached (refused, unresolvable).
        public static let connectFailed = Code(.connectFailed)
        /// The connection to the upstream broke during the exchange.
        public static let connectionReset = Code(.connectionReset)
        /// TLS with the upstream failed (handshake, certificate).
        public static let tls = Code(.tls)
        /// The upstream did not answer in time.
        public static let timeout = Code(.timeout)
        /// The upstream's answer was not valid HTTP, or there was none.
        public static let invalidResponse = Code(.invalidResponse)
        /// The upstream's answer was larger than the caller accepts.
        public static let responseTooLarge = Code(.responseTooLarge)
        /// The exchange was cancelled (by the caller, or at shutdown).
        public static let cancelled = Code(.cancelled)
        /// The request cannot be sent as it is (scheme, header syntax); nothing was sent.
        public static let invalidRequest = Code(.invalidRequest)
        /// The exchange failed for another reason.
        public static let upstreamFailed = Code(.upstreamFailed)

        // MARK: The client's side of a request

        /// A request body streamed in is larger than its consumer accepts
        /// (``BodyStream/collect(maxBytes:)``); the message names the limit.
        public static let requestBodyTooLarge = Code(.requestBodyTooLarge)
        /// The client closed the connection before its request was done: reading the body or
        /// writing the response cannot go on.
        public static let clientDisconnected = Code(.clientDisconnected)

        /// Every code, in the order above.
        public static let all: [Code] = [
            .libuvFailed, .systemCallFailed, .listenFailed, .curlFailed,
            .connectFailed, .connectionReset, .tls, .timeout, .invalidResponse, .responseTooLarge, .cancelled,
            .invalidRequest, .upstreamFailed, .requestBodyTooLarge, .clientDisconnected,
        ]
    }
}
