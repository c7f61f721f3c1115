/// A request that produced no HTTP response.
public struct HTTPTransportError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Stable reasons.
    public enum Code: String, Sendable {
        /// The connection could not be made (nothing was sent).
        case connectFailed = "connect_failed"
        /// The connection broke after the request was sent: the server may have acted on it.
        case connectionLost = "connection_lost"
        /// No answer in time.
        case timeout
        /// Anything else.
        case other
    }

    /// The reason.
    public var code: Code
    /// A human message (never a token).
    public var message: String

    /// Creates a transport error.
    public init(_ code: Code, _ message: String = "") {
        self.code = code
        self.message = message
    }

    /// Whether the server may have processed the request (for refresh with rotation, the
    /// old refresh token may already be spent).
    public var requestMayHaveBeenProcessed: Bool {
        code == .connectionLost || code == .timeout
    }

    public var description: String { "transport.\(code.rawValue): \(message)" }
}
