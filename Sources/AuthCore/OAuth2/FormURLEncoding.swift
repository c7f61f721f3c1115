/// `application/x-www-form-urlencoded`, as RFC 6749 token requests and HTTP Basic client
/// credentials (§2.3.1) use it.
public enum FormURLEncoding {
    /// Encodes one name or value: unreserved bytes stay, space becomes `+`, the rest `%XX`.
    public static func encode(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                UInt8(ascii: "_"), UInt8(ascii: "*"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: " "):
                out += "+"
            default:
                out += "%"
                out += String(byte >> 4, radix: 16, uppercase: true)
                out += String(byte & 0xF, radix: 16, uppercase: true)
            }
        }
        return out
    }

    /// Encodes ordered pairs as `a=b&c=d`.
    public static func encode(_ pairs: [(String, String)]) -> String {
        pairs.map { "\(encode($0.0))=\(encode($0.1))" }.joined(separator: "&")
    }

    /// Decodes one name or value; `nil` on a bad escape or invalid UTF-8.
    public static func decode(_ text: some StringProtocol) -> String? {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "+"):
                bytes.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard let h = iterator.next(), let l = iterator.next(),
                    let hv = hexValue(h), let lv = hexValue(l)
                else { return nil }
                bytes.append(hv << 4 | lv)
            default:
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    /// Decodes `a=b&c=d` into ordered pairs; `nil` on a bad escape.
    public static func decodePairs(_ text: some StringProtocol) -> [(String, String)]? {
        var result: [(String, String)] = []
        for part in text.split(separator: "&") where !part.isEmpty {
            let pieces = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = decode(pieces[0]) else { return nil }
            let value = pieces.count > 1 ? decode(pieces[1]) : ""
            guard let value else { return nil }
            result.append((name, value))
        }
        return result
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
