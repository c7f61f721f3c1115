/// The parts of a request target the access log shows: the path and the query, never an
/// absolute-form target's scheme and authority (which can hold user-info, `user:password@`)
/// nor a fragment. Pure, over the target's bytes.
enum AccessLogTarget {
    /// The ranges of the path and of the query (without its `?`) in `target`.
    static func parts(_ target: UnsafeBufferPointer<UInt8>) -> (path: Range<Int>, query: Range<Int>?) {
        var start = 0
        if let scheme = schemeEnd(target) {
            // Past `scheme://` and the authority, to the path (empty when there is none).
            start = scheme
            while start < target.count, target[start] != UInt8(ascii: "/"), target[start] != UInt8(ascii: "?"),
                target[start] != UInt8(ascii: "#")
            {
                start += 1
            }
        }
        var end = start
        while end < target.count, target[end] != UInt8(ascii: "#") { end += 1 }
        var question = start
        while question < end, target[question] != UInt8(ascii: "?") { question += 1 }
        return (start..<question, question < end ? (question + 1)..<end : nil)
    }

    /// The path and the query of `target` as strings (the query nil when there is none).
    static func parts(_ target: String) -> (path: String, query: String?) {
        var copy = target
        return copy.withUTF8 { t in
            let (path, query) = parts(t)
            let p = path.isEmpty ? "/" : String(decoding: UnsafeBufferPointer(rebasing: t[path]), as: UTF8.self)
            return (p, query.map { String(decoding: UnsafeBufferPointer(rebasing: t[$0]), as: UTF8.self) })
        }
    }

    /// Where the authority of an absolute-form target begins (after `scheme://`), or nil for
    /// any other form. A scheme is a letter then letters, digits, `+`, `-` or `.`.
    private static func schemeEnd(_ t: UnsafeBufferPointer<UInt8>) -> Int? {
        guard let first = t.first, isLetter(first) else { return nil }
        var i = 1
        while i < t.count, isLetter(t[i]) || (t[i] >= 0x30 && t[i] <= 0x39) || t[i] == 0x2B || t[i] == 0x2D || t[i] == 0x2E {
            i += 1
        }
        guard i + 2 < t.count, t[i] == UInt8(ascii: ":"), t[i + 1] == UInt8(ascii: "/"), t[i + 2] == UInt8(ascii: "/") else {
            return nil
        }
        return i + 3
    }

    private static func isLetter(_ b: UInt8) -> Bool { (b | 0x20) >= 0x61 && (b | 0x20) <= 0x7A }
}
