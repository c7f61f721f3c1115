/// A token store failure. Descriptions name the account and the operation, never a token.
public struct TokenStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Stable codes.
    public enum Code: String, Sendable {
        /// A record that must exist does not.
        case notFound = "not_found"
        /// The record could not be encoded.
        case encodingError = "encoding_error"
        /// The stored bytes are not a record: truncated, tampered with, or not ours.
        case corrupt
        /// The record was sealed with another key.
        case wrongKey = "wrong_key"
        /// The key is missing, unreadable or the wrong size.
        case keyUnavailable = "key_unavailable"
        /// A system call failed; see ``TokenStoreError/errno``.
        case io
        /// The backing store refused for another reason.
        case unavailable
    }

    /// The stable code.
    public var code: Code
    /// The account concerned, when there is one.
    public var account: AccountID?
    /// The `errno` of a failed system call.
    public var errno: Int32?
    /// The operation that failed, e.g. `fsync`.
    public var operation: String?
    /// A human message.
    public var message: String

    /// Creates an error.
    public init(
        _ code: Code, account: AccountID? = nil, errno: Int32? = nil, operation: String? = nil,
        message: String = ""
    ) {
        self.code = code
        self.account = account
        self.errno = errno
        self.operation = operation
        self.message = message
    }

    /// An I/O failure.
    public static func io(_ errno: Int32, operation: String, account: AccountID? = nil)
        -> TokenStoreError
    {
        TokenStoreError(.io, account: account, errno: errno, operation: operation)
    }

    public var description: String {
        var text = "token_store.\(code.rawValue)"
        if let account { text += " account=\(account)" }
        if let operation { text += " op=\(operation)" }
        if let errno { text += " errno=\(errno)" }
        if !message.isEmpty { text += ": \(message)" }
        return text
    }
}
