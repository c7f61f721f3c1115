import CLibUV
import Glibc

extension RuntimeError {
    /// A libuv call returned `rc` (a negative error code).
    public static func libuv(_ rc: Int32, _ operation: String) -> RuntimeError {
        RuntimeError(.libuvFailed, operation: operation, systemCode: rc)
    }

    /// A system call failed with `errno` (positive, as `errno` holds it).
    public static func system(errno: Int32, _ operation: String) -> RuntimeError {
        RuntimeError(.systemCallFailed, operation: operation, systemCode: -errno)
    }

    /// A request body over `limit` bytes (``Code/requestBodyTooLarge``).
    public static func requestBodyTooLarge(limit: Int) -> RuntimeError {
        RuntimeError(.requestBodyTooLarge, "the request body is over \(limit) bytes")
    }

    /// The client left before its request was done (``Code/clientDisconnected``).
    public static let clientDisconnected = RuntimeError(.clientDisconnected)

    /// A server could not listen: `rc` is the libuv code or negated `errno`, `operation`
    /// names the address (`bind 127.0.0.1:8080`, `listen unix:/run/a.sock`), `reason`
    /// says why when the code alone does not.
    public static func listen(_ rc: Int32, _ operation: String, reason: String? = nil) -> RuntimeError {
        RuntimeError(.listenFailed, reason ?? "", operation: operation, systemCode: rc)
    }

    /// Throws ``libuv(_:_:)`` when `rc` is a libuv error (negative); returns `rc` otherwise.
    @discardableResult
    static func check(_ rc: Int32, _ operation: String) throws(RuntimeError) -> Int32 {
        if rc < 0 { throw .libuv(rc, operation) }
        return rc
    }

    /// Throws ``listen(_:_:reason:)`` when `rc` is a libuv error (negative).
    static func checkListen(_ rc: Int32, _ operation: String) throws(RuntimeError) {
        if rc < 0 { throw .listen(rc, operation) }
    }
}

/// The name libuv call sites used before ``RuntimeError`` took over: `UVError.check(rc, "uv_…")`
/// and `UVError(code: rc, operation: "uv_…")` build a ``RuntimeError/Code/libuvFailed``.
typealias UVError = RuntimeError

extension RuntimeError {
    /// A ``Code/libuvFailed`` error for the libuv code `code`; `detail` becomes the message.
    init(code: Int32, operation: String, detail: String? = nil) {
        self.init(.libuvFailed, detail ?? "", operation: operation, systemCode: code)
    }
}
