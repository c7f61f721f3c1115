public import HTTPWire

/// The path and query of a request target, whatever its form.
///
/// An absolute-form target (`http://other/x`) contributes only its path and query: the
/// authority in a target or in `Host` never decides where a request goes.
public struct RequestTarget: Sendable, Equatable {
    /// The target as sent.
    let target: String
    /// Where the path and query are in ``target``.
    let span: Span

    /// The path, starting with `/`.
    public var path: Substring {
        span.pathStart == span.pathEnd ? "/" : target[index(span.pathStart)..<index(span.pathEnd)]
    }

    /// The query without `?`, if any.
    public var query: Substring? {
        span.queryEnd < 0 ? nil : target[index(span.pathEnd + 1)..<index(span.queryEnd)]
    }

    /// Parses a target; throws 400 for forms a proxy does not forward and for paths an
    /// upstream could resolve outside the route (see ``escapeProblem(in:)``).
    public init(_ target: String) throws(WireError) {
        self.init(target, span: try Span(target))
    }

    /// `target`, with its path and query where `span`, found in that same target, says.
    /// Nothing is scanned or copied: the path and query are made only when asked for.
    init(_ target: String, span: Span) {
        self.target = target
        self.span = span
    }

    /// Same path and same query, whatever else the targets hold (a fragment, an authority).
    public static func == (a: RequestTarget, b: RequestTarget) -> Bool {
        a.path == b.path && a.query == b.query
    }

    private func index(_ offset: Int32) -> String.Index {
        target.utf8.index(target.utf8.startIndex, offsetBy: Int(offset))
    }

    /// The path's bytes from `dropping` on (at most all of them), then `?` and the query's,
    /// given to `body` as two buffers (the query's nil without one), from the target itself.
    func withPathAndQuery<R>(
        dropping: Int, _ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>?) -> R
    ) -> R {
        var target = target
        return target.withUTF8 { b in
            let query = span.queryEnd < 0 ? nil : UnsafeBufferPointer(rebasing: b[Int(span.pathEnd)..<Int(span.queryEnd)])
            if span.pathStart == span.pathEnd {
                // The path `/` of an absolute URL with none.
                return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 1) { slash in
                    slash[0] = UInt8(ascii: "/")
                    return body(UnsafeBufferPointer(rebasing: slash[min(dropping, 1)...]), query)
                }
            }
            let start = min(Int(span.pathStart) + dropping, Int(span.pathEnd))
            return body(UnsafeBufferPointer(rebasing: b[start..<Int(span.pathEnd)]), query)
        }
    }

    /// Where a target's path and query lie in it, as UTF-8 offsets: found once, when the
    /// head arrives, and carried in twelve bytes to the answer (``ReverseProxy``), which
    /// makes the ``RequestTarget`` from them without scanning the target again.
    struct Span: Sendable, Equatable {
        /// The path: `pathStart..<pathEnd`; an empty range is the path `/` of an absolute
        /// URL with none (`http://h?q`).
        let pathStart: Int32
        /// The end of the path: the `?` before the query, the `#` or the end.
        let pathEnd: Int32
        /// The end of the query, which starts after the `?` at `pathEnd`; -1: no query.
        let queryEnd: Int32

        /// A span of these offsets.
        init(pathStart: Int32, pathEnd: Int32, queryEnd: Int32) {
            self.pathStart = pathStart
            self.pathEnd = pathEnd
            self.queryEnd = queryEnd
        }

        /// Finds the path and query of `target`; throws 400 as ``RequestTarget/init(_:)`` does.
        init(_ target: String) throws(WireError) {
            var target = target
            let found = target.withUTF8 { bytes in Result { () throws(WireError) in try Span(bytes: bytes) } }
            self = try found.get()
        }

        /// Finds the path and query in a target's UTF-8 bytes, in one pass over them: a
        /// target is ASCII on the wire (the parser checked), and offsets into bytes are O(1).
        init(bytes u: UnsafeBufferPointer<UInt8>) throws(WireError) {
            guard u.count < Int32.max else {
                throw WireError(.invalidTarget, status: 400, "the request target is too long")
            }
            let slash = UInt8(ascii: "/")
            let question = UInt8(ascii: "?")
            var start = 0
            var end = u.count
            var rootOnly = false
            // Origin-form (`/…`), nearly every request, is told by its first byte.
            if u.first != slash, let scheme = Self.schemeLength(u) {
                // Past `scheme://`: the authority ends at the first `/` or `?`.
                start = scheme
                while start < end && u[start] != slash && u[start] != question { start += 1 }
                rootOnly = start == end || u[start] == question
            }
            guard rootOnly || (start < end && u[start] == slash) else {
                throw WireError(.invalidTarget, status: 400, "the request target must be a path (origin-form) or an absolute URL")
            }
            // The first `#` ends the target; the first `?` before it starts the query.
            var query: Int?
            var i = start
            while i < end {
                let b = u[i]
                if b == UInt8(ascii: "#") {
                    end = i
                    break
                }
                if b == question && query == nil { query = i }
                i += 1
            }
            let pathEnd: Int
            if let query {
                pathEnd = query
                queryEnd = Int32(end)
            } else {
                pathEnd = end
                queryEnd = -1
            }
            pathStart = Int32(rootOnly ? pathEnd : start)
            self.pathEnd = Int32(pathEnd)
            if !rootOnly, let problem = RequestTarget.escapeProblem(in: UnsafeBufferPointer(rebasing: u[start..<pathEnd])) {
                throw WireError(.invalidTarget, status: 400, problem)
            }
        }

        /// The length of `http://` or `https://` when `u` starts with one (as written: the
        /// scheme of an absolute-form target is matched case-sensitively), else nil.
        private static func schemeLength(_ u: UnsafeBufferPointer<UInt8>) -> Int? {
            func starts(with prefix: StaticString) -> Bool {
                prefix.withUTF8Buffer { p in u.count >= p.count && u[..<p.count].elementsEqual(p) }
            }
            if starts(with: "http://") { return 7 }
            if starts(with: "https://") { return 8 }
            return nil
        }
    }

    /// Why a path could be resolved, by this upstream or another, outside the route whose
    /// prefix it matched, or nil when it cannot:
    ///
    /// - a `.` or `..` segment, plain or percent-encoded (`%2e`);
    /// - the same with `;` path parameters (`..;`, `.;x=1`, `..%3b`): Tomcat and Spring drop
    ///   the parameters and then resolve the dots, so `/api/..;/admin` reaches `/admin`;
    /// - a backslash, plain or `%5c`: Windows servers (IIS, Kestrel) take it for `/`;
    /// - an encoded slash (`%2f`).
    static func escapeProblem(in path: Substring) -> String? {
        path.utf8.withContiguousStorageIfAvailable(escapeProblem) ?? escapeProblem(in: Array(path.utf8))
    }

    private static func escapeProblem<C: RandomAccessCollection<UInt8>>(in u: C) -> String? where C.Index == Int {
        // Walk the bytes once: count the dots (`.` or `%2e`) at the start of the current
        // segment, up to its end or its first `;` (plain or `%3b`), and whether anything
        // else came before that.
        func encoded(_ i: Int, _ hi: UInt8, _ lo: UInt8) -> Bool {
            u[i] == 0x25 && i + 2 < u.count && u[i + 1] == hi && u[i + 2] | 0x20 == lo
        }
        let dotSegment = "the request path must not contain . or .. segments, with or without ;parameters"
        var i = 0
        var dots = 0
        var other = false
        var inParameters = false
        while i <= u.count {
            if i == u.count || u[i] == 0x2F {
                if !other && (dots == 1 || dots == 2) { return dotSegment }
                dots = 0
                other = false
                inParameters = false
                i += 1
                continue
            }
            if u[i] == 0x5C || encoded(i, 0x35, 0x63) {
                return "the request path must not contain a backslash, plain or encoded"
            }
            if encoded(i, 0x32, 0x66) {
                return "the request path must not contain an encoded slash"
            }
            if inParameters {
                i += 1
                continue
            }
            if u[i] == 0x3B || encoded(i, 0x33, 0x62) {
                if !other && (dots == 1 || dots == 2) { return dotSegment }
                inParameters = true
                i += u[i] == 0x3B ? 1 : 3
            } else if u[i] == 0x2E {
                dots += 1
                i += 1
            } else if encoded(i, 0x32, 0x65) {
                dots += 1
                i += 3
            } else {
                other = true
                i += 1
            }
        }
        return nil
    }
}
