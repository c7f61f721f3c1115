/// A session state store failure.
public struct SessionStateStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Stable codes.
    public enum Code: String, Sendable {
        /// The file is not a session state.
        case corrupt
        /// The state could not be encoded.
        case encodingError = "encoding_error"
        /// A system call failed.
        case io
        /// The backing store refused for another reason.
        case unavailable
    }

    /// The stable code.
    public var code: Code
    /// The account concerned.
    public var account: AccountID?
    /// The `errno` of a failed system call.
    public var errno: Int32?
    /// The failed operation.
    public var operation: String?

    /// Creates an error.
    public init(_ code: Code, account: AccountID? = nil, errno: Int32? = nil, operation: String? = nil) {
        self.code = code
        self.account = account
        self.errno = errno
        self.operation = operation
    }

    public var description: String {
        var text = "session_state.\(code.rawValue)"
        if let account { text += " account=\(account)" }
        if let operation { text += " op=\(operation)" }
        if let errno { text += " errno=\(errno)" }
        return text
    }
}
