public import Foundation

/// Base64url (RFC 4648 §5) without padding, as JWTs and PKCE use it.
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Encodes bytes as unpadded base64url, in one pass into one allocation (a DPoP proof
    /// per proxied request encodes five parts).
    public static func encode<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        let input = Array(bytes)
        return String(unsafeUninitializedCapacity: encodedCount(input.count)) { out in
            input.withUnsafeBufferPointer { write($0, into: out) }
        }
    }

    /// Appends the unpadded base64url of `input` to `out`.
    static func append(_ input: [UInt8], to out: inout [UInt8]) {
        let start = out.count
        let count = encodedCount(input.count)
        out.append(contentsOf: repeatElement(0, count: count))
        input.withUnsafeBufferPointer { inp in
            out.withUnsafeMutableBufferPointer { all in
                _ = write(inp, into: UnsafeMutableBufferPointer(rebasing: all[start..<(start + count)]))
            }
        }
    }

    private static func encodedCount(_ count: Int) -> Int { count / 3 * 4 + [0, 2, 3][count % 3] }

    /// Writes the base64url of `inp` into `out` (at least ``encodedCount(_:)`` long); the
    /// number of bytes written.
    private static func write(_ inp: UnsafeBufferPointer<UInt8>, into out: UnsafeMutableBufferPointer<UInt8>) -> Int {
        alphabet.withUnsafeBufferPointer { table in
            var i = 0
            var o = 0
            while i + 3 <= inp.count {
                let n = UInt32(inp[i]) << 16 | UInt32(inp[i + 1]) << 8 | UInt32(inp[i + 2])
                out[o] = table[Int(n >> 18 & 63)]
                out[o + 1] = table[Int(n >> 12 & 63)]
                out[o + 2] = table[Int(n >> 6 & 63)]
                out[o + 3] = table[Int(n & 63)]
                i += 3
                o += 4
            }
            switch inp.count - i {
            case 1:
                let n = UInt32(inp[i]) << 16
                out[o] = table[Int(n >> 18 & 63)]
                out[o + 1] = table[Int(n >> 12 & 63)]
                o += 2
            case 2:
                let n = UInt32(inp[i]) << 16 | UInt32(inp[i + 1]) << 8
                out[o] = table[Int(n >> 18 & 63)]
                out[o + 1] = table[Int(n >> 12 & 63)]
                out[o + 2] = table[Int(n >> 6 & 63)]
                o += 3
            default:
                break
            }
            return o
        }
    }

    /// Decodes base64url, padded or not; `nil` when the text is not base64url.
    public static func decode(_ text: some StringProtocol) -> Data? {
        var base64 = String(text)
            .replacingOccurrences(of: "-", with: "+")
            .replacingOccurrences(of: "_", with: "/")
        let remainder = base64.utf8.count % 4
        if remainder == 1 { return nil }
        if remainder > 0 {
            base64 += String(repeating: "=", count: 4 - remainder)
        }
        return Data(base64Encoded: base64)
    }
}
