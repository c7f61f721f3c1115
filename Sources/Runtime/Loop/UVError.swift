import CLibUV

/// A libuv call failed.
public struct UVError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The libuv error code (a negative errno).
    public let code: Int32
    /// The libuv function that failed.
    public let operation: String
    /// Why, when the code alone does not say it (never a secret).
    public let detail: String?

    /// Creates an error.
    public init(code: Int32, operation: String, detail: String? = nil) {
        self.code = code
        self.operation = operation
        self.detail = detail
    }

    /// libuv's name for the code (`EADDRINUSE`, …).
    public var name: String { String(cString: uv_err_name(code)) }

    public var description: String {
        let text = "\(operation) failed: \(name) (\(String(cString: uv_strerror(code))))"
        return detail.map { "\(text): \($0)" } ?? text
    }

    /// Throws when `rc` is a libuv error.
    static func check(_ rc: Int32, _ operation: String) throws(UVError) {
        if rc < 0 { throw UVError(code: rc, operation: operation) }
    }
}
