/// Writing head lines and log lines into a byte buffer, one copy per string and no string
/// per number.
extension [UInt8] {
    /// Appends one header line, `name: value` and CRLF, as given (callers check fields
    /// they did not make themselves).
    @inlinable
    public mutating func appendField(name: String, value: String) {
        appendUTF8(name)
        append(0x3A)
        append(0x20)
        appendUTF8(value)
        append(0x0D)
        append(0x0A)
    }

    /// Appends the UTF-8 of `s` in one copy (a native string's bytes are contiguous).
    @inlinable
    public mutating func appendUTF8(_ s: String) {
        var s = s
        s.withUTF8 { append(contentsOf: $0) }
    }

    /// Appends `value` in decimal, as `String(value)` spells it, without making the string.
    @inlinable
    public mutating func appendDecimal(_ value: some BinaryInteger) {
        guard let v = Int64(exactly: value) else {
            appendUTF8(String(value))
            return
        }
        if v < 0 { append(UInt8(ascii: "-")) }
        var magnitude = v.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)
        let count = Swift.withUnsafeMutableBytes(of: &digits) { scratch in
            var n = 0
            repeat {
                scratch[n] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                n += 1
            } while magnitude > 0
            return n
        }
        Swift.withUnsafeBytes(of: &digits) { scratch in
            for i in stride(from: count - 1, through: 0, by: -1) { append(scratch[i]) }
        }
    }
}
