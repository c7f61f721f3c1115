public import HTTPWire

/// The path and query of a request target, whatever its form.
///
/// An absolute-form target (`http://other/x`) contributes only its path and query: the
/// authority in a target or in `Host` never decides where a request goes.
public struct RequestTarget: Sendable, Equatable {
    /// The path, starting with `/`.
    public let path: Substring
    /// The query without `?`, if any.
    public let query: Substring?

    /// Parses a target; throws 400 for forms a proxy does not forward and for dot-segments.
    public init(_ target: String) throws(WireError) {
        var t = target[...]
        if t.hasPrefix("http://") || t.hasPrefix("https://") {
            let afterScheme = t[t.index(after: t.firstIndex(of: ":")!)...].dropFirst(2)
            t = afterScheme.firstIndex(where: { $0 == "/" || $0 == "?" }).map { afterScheme[$0...] } ?? "/"
            if t.hasPrefix("?") { t = "/" + t }
        }
        guard t.hasPrefix("/") else {
            throw WireError(.invalidTarget, status: 400, "the request target must be a path (origin-form) or an absolute URL")
        }
        // Scan bytes, not Characters: a target is ASCII on the wire (the parser checked).
        if let fragment = t.utf8.firstIndex(of: UInt8(ascii: "#")) { t = t[..<fragment] }
        if let q = t.utf8.firstIndex(of: UInt8(ascii: "?")) {
            path = t[..<q]
            query = t[t.utf8.index(after: q)...]
        } else {
            path = t
            query = nil
        }
        if RequestTarget.hasDotSegment(path) {
            throw WireError(.invalidTarget, status: 400, "the request path must not contain . or .. segments")
        }
    }

    /// Whether a path has a `.` or `..` segment, plain or percent-encoded.
    static func hasDotSegment(_ path: Substring) -> Bool {
        path.utf8.withContiguousStorageIfAvailable(hasDotSegment) ?? hasDotSegment(Array(path.utf8))
    }

    private static func hasDotSegment<C: RandomAccessCollection<UInt8>>(_ u: C) -> Bool where C.Index == Int {
        // Walk the bytes once: count the dots of the current segment (`.` or `%2e`) and
        // whether anything else is in it; also refuse an encoded slash.
        var i = 0
        var dots = 0
        var other = false
        while i <= u.count {
            if i == u.count || u[i] == 0x2F {
                if !other && (dots == 1 || dots == 2) { return true }
                dots = 0
                other = false
                i += 1
                continue
            }
            if u[i] == 0x2E {
                dots += 1
                i += 1
            } else if u[i] == 0x25, i + 2 < u.count, u[i + 1] == 0x32, u[i + 2] | 0x20 == 0x65 {
                dots += 1
                i += 3
            } else if u[i] == 0x25, i + 2 < u.count, u[i + 1] == 0x32, u[i + 2] | 0x20 == 0x66 {
                return true
            } else {
                other = true
                i += 1
            }
        }
        return false
    }
}
