import CLibUV
import Glibc

/// Every failure the Runtime module reports, in one shape: a stable ``code``, a human
/// ``message``, the ``underlying`` error that caused it, and the context of the C call
/// behind it (``operation``, ``systemCode``, ``curlCode``).
///
/// Build one with a static factory (``libuv(_:_:)``, ``listen(_:_:reason:)``,
/// ``upstream(_:_:curlCode:underlying:)``, …) and match on ``code``:
///
/// ```swift
/// do { try server.start() } catch let error as RuntimeError where error.code == .listenFailed {
///     print(error)  // listen-failed: bind 127.0.0.1:8080 failed: EADDRINUSE (address already in use)
/// }
/// ```
///
/// The ``description`` names the code, the operation and the C library's reason. It never
/// holds a header value, a body or a credential: messages are written here, not copied
/// from a request, and any URL in them loses its user information and query
/// (``redactingURLs(_:)``).
public struct RuntimeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The stable code.
    public let code: Code
    /// A human sentence (never a secret). Empty when the code and operation say it all.
    public let message: String
    /// The error that caused this one, when there was one.
    public let underlying: (any Error & Sendable)?
    /// The C call or system operation that failed, such as `uv_tcp_bind` or
    /// `bind 127.0.0.1:8080`.
    public let operation: String?
    /// The libuv error code or negated `errno` (libuv style, e.g. `-EADDRINUSE`).
    public let systemCode: Int32?
    /// libcurl's result code (`CURLcode`, or `CURLMcode` for ``Code/curlFailed`` raised
    /// by a multi call; ``operation`` names which).
    public let curlCode: Int32?

    /// Creates an error; prefer the static factories, which fill in the context.
    public init(
        _ code: Code, _ message: String = "", operation: String? = nil, systemCode: Int32? = nil, curlCode: Int32? = nil,
        underlying: (any Error & Sendable)? = nil
    ) {
        self.code = code
        self.message = message
        self.operation = operation
        self.systemCode = systemCode
        self.curlCode = curlCode
        self.underlying = underlying
    }

    /// Equal when everything but ``underlying`` is equal (an error is not `Equatable`).
    public static func == (lhs: RuntimeError, rhs: RuntimeError) -> Bool {
        lhs.code == rhs.code && lhs.message == rhs.message && lhs.operation == rhs.operation
            && lhs.systemCode == rhs.systemCode && lhs.curlCode == rhs.curlCode
    }

    /// libuv's name for ``systemCode`` (`EADDRINUSE`, …), when there is one.
    public var systemCodeName: String? { systemCode.map { String(cString: uv_err_name($0)) } }

    /// `code: operation failed: NAME (reason): message`, with the parts that are present.
    public var description: String {
        var text = code.description + ":"
        if let operation { text += " \(operation) failed" }
        if let systemCode {
            text += ": \(String(cString: uv_err_name(systemCode))) (\(String(cString: uv_strerror(systemCode))))"
        }
        if let curlCode { text += " (libcurl code \(curlCode))" }
        if !message.isEmpty { text += (operation == nil && systemCode == nil ? " " : ": ") + message }
        if let inner = underlying as? RuntimeError { text += " [\(inner.description)]" }
        return Self.redactingURLs(text)
    }

    /// `text` with every URL reduced to its scheme, host, port and path: user information
    /// (`user:password@`), query and fragment are dropped, as they may hold credentials.
    public static func redactingURLs(_ text: String) -> String {
        guard text.contains("://") else { return text }
        return text.split(separator: " ", omittingEmptySubsequences: false).map { word -> Substring in
            guard let scheme = word.firstRange(of: "://") else { return word }
            var rest = word[scheme.upperBound...]
            let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
            if let at = rest[..<authorityEnd].lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }
            let end = rest.firstIndex { $0 == "?" || $0 == "#" } ?? rest.endIndex
            return word[..<scheme.upperBound] + rest[..<end]
        }.joined(separator: " ")
    }
}
