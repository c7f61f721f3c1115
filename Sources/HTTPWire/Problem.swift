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
        var s = "{\"type\":\(Problem.quote(type)),\"title\":\(Problem.quote(title)),\"status\":\(status),\"detail\":\(Problem.quote(detail))"
        for (k, v) in extensions { s += ",\(Problem.quote(k)):\(v)" }
        s += "}"
        return Array(s.utf8)
    }

    /// A JSON string literal for `s`.
    public static func quote(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if u.value < 0x20 {
                    let hex = String(u.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(u)
                }
            }
        }
        return out + "\""
    }

    /// The reason phrase used as a title.
    public static func title(forStatus status: Int) -> String {
        ResponseHead.reason(for: status)
    }
}
