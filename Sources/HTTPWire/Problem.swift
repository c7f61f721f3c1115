/// An RFC 9457 problem details document.
public struct Problem: Sendable, Equatable {
    /// A URI naming the kind of problem.
    public var type: String
    /// A short summary of the kind of problem.
    public var title: String
    /// The HTTP status.
    public var status: Int
    /// What went wrong with this request.
    public var detail: String
    /// Extra members, already valid JSON values keyed by member name.
    public var extensions: [(String, String)]

    /// Creates a problem document.
    public init(type: String, title: String, status: Int, detail: String, extensions: [(String, String)] = []) {
        self.type = type
        self.title = title
        self.status = status
        self.detail = detail
        self.extensions = extensions
    }

    public static func == (lhs: Problem, rhs: Problem) -> Bool {
        lhs.type == rhs.type && lhs.title == rhs.title && lhs.status == rhs.status && lhs.detail == rhs.detail
            && lhs.extensions.elementsEqual(rhs.extensions) { $0 == $1 }
    }

    /// The media type of the encoded document.
    public static let contentType = "application/problem+json"

    /// The document as compact JSON bytes.
    public var json: [UInt8] {
        var s =
            "{\"type\":\(Problem.quote(type)),\"title\":\(Problem.quote(title)),\"status\":\(status),\"detail\":\(Problem.quote(detail))"
        for (k, v) in extensions { s += ",\(Problem.quote(k)):\(v)" }
        s += "}"
        return Array(s.utf8)
    }

    /// A JSON string literal for `s`.
    public static func quote(_ s: String) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(s.utf8.count + 2)
        appendQuoted(s, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the JSON string literal for `s` to `out`, as UTF-8: `"` and `\` escaped, the
    /// control characters as `\n`, `\r`, `\t` or `\u00XX`, everything else as it is.
    public static func appendQuoted(_ s: String, to out: inout [UInt8]) {
        out.append(0x22)
        var s = s
        s.withUTF8 { bytes in
            var start = 0
            for i in 0..<bytes.count {
                let b = bytes[i]
                guard b < 0x20 || b == 0x22 || b == 0x5C else { continue }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<i]))
                start = i + 1
                switch b {
                case 0x22: out.append(contentsOf: [0x5C, 0x22])
                case 0x5C: out.append(contentsOf: [0x5C, 0x5C])
                case 0x0A: out.append(contentsOf: [0x5C, 0x6E])
                case 0x0D: out.append(contentsOf: [0x5C, 0x72])
                case 0x09: out.append(contentsOf: [0x5C, 0x74])
                default:
                    let hex: [UInt8] = Array("0123456789abcdef".utf8)
                    out.append(contentsOf: [0x5C, 0x75, 0x30, 0x30, hex[Int(b >> 4)], hex[Int(b & 0x0F)]])
                }
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<bytes.count]))
        }
        out.append(0x22)
    }

    /// The reason phrase used as a title.
    public static func title(forStatus status: Int) -> String {
        ResponseHead.reason(for: status)
    }
}
