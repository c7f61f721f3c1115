import HTTPWire

/// The access log's values as bytes of its JSON line: strings quoted with a fast path for the
/// common string that needs no escape, the duration in digits, the trace id checked over bytes.
/// Each gives the same bytes as the general code it stands in for (`AccessLogTextTests`).
enum AccessLogText {
    /// Appends the JSON string literal for `bytes` (valid UTF-8), as
    /// `Problem.appendQuoted` writes it: copied in one piece when nothing in it needs an escape
    /// (no control character, `"` or `\`), else through `Problem.appendQuoted`.
    static func appendQuoted(_ bytes: UnsafeBufferPointer<UInt8>, to line: AccessLogBuffer) {
        if needsEscaping(bytes) {
            appendGeneralQuoted(String(decoding: bytes, as: UTF8.self), to: line)
            return
        }
        line.append(0x22)
        line.append(bytes)
        line.append(0x22)
    }

    /// ``appendQuoted(_:to:)`` for a string.
    static func appendQuoted(_ s: String, to line: AccessLogBuffer) {
        var s = s
        s.withUTF8 { appendQuoted($0, to: line) }
    }

    /// `Problem.appendQuoted`, the general quoting, into `line`.
    private static func appendGeneralQuoted(_ s: String, to line: AccessLogBuffer) {
        var quoted: [UInt8] = []
        Problem.appendQuoted(s, to: &quoted)
        quoted.withUnsafeBufferPointer { line.append($0) }
    }

    /// Whether any byte of `bytes` is a control character, `"` or `\`: eight bytes at a time,
    /// then the rest one by one.
    static func needsEscaping(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress else { return false }
        let raw = UnsafeRawPointer(base)
        let n = bytes.count
        var i = 0
        while i + 8 <= n {
            if wordNeedsEscaping(raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)) { return true }
            i += 8
        }
        while i < n {
            let b = base[i]
            if b < 0x20 || b == 0x22 || b == 0x5C { return true }
            i += 1
        }
        return false
    }

    /// Whether one of the eight bytes of `w` is below 0x20, 0x22 or 0x5C (the exact tests
    /// "has a byte less than n" and "has a zero byte" of Bit Twiddling Hacks).
    @inline(__always)
    static func wordNeedsEscaping(_ w: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let high: UInt64 = 0x8080_8080_8080_8080
        let control = (w &- ones &* 0x20) & ~w & high
        let q = w ^ (ones &* 0x22)
        let quote = (q &- ones) & ~q & high
        let b = w ^ (ones &* 0x5C)
        let backslash = (b &- ones) & ~b & high
        return control | quote | backslash != 0
    }

    /// The duration in milliseconds as the record keeps it: rounded to the microsecond, in
    /// a `Double`.
    static func milliseconds(_ duration: Duration) -> Double {
        let ms = Double(duration.components.seconds) * 1_000 + Double(duration.components.attoseconds) / 1e15
        return (ms * 1_000).rounded() / 1_000
    }

    /// Appends a duration of `nanoseconds` in milliseconds as Swift prints the `Double`
    /// ``milliseconds(_:)`` of the same duration (`1234.567`, `0.05`, `1500.0`), in digits,
    /// the same arithmetic over integers rather than `Duration`'s 128 bits: below 10¹² ms every
    /// multiple of 0.001 is the shortest text of its `Double`, which is what Swift prints.
    /// Beyond that (31 years), or for a negative duration, Swift prints it.
    static func appendMilliseconds(nanoseconds: Int64, to line: AccessLogBuffer) {
        guard nanoseconds >= 0 else {
            line.appendUTF8("\(milliseconds(.nanoseconds(nanoseconds)))")
            return
        }
        let (seconds, rest) = nanoseconds.quotientAndRemainder(dividingBy: 1_000_000_000)
        let ms = Double(seconds) * 1_000 + Double(rest * 1_000_000_000) / 1e15
        let micros = (ms * 1_000).rounded()
        guard micros < 1e15 else {
            line.appendUTF8("\(micros / 1_000)")
            return
        }
        let (whole, fraction) = Int(micros).quotientAndRemainder(dividingBy: 1_000)
        line.appendDecimal(whole)
        line.append(UInt8(ascii: "."))
        if fraction == 0 {
            line.append(UInt8(ascii: "0"))
            return
        }
        line.append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: fraction / 100))
        guard fraction % 100 != 0 else { return }
        line.append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: fraction / 10 % 10))
        guard fraction % 10 != 0 else { return }
        line.append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: fraction % 10))
    }

    /// Appends `,"traceID":"<32 hex>"` for the trace id of `traceparent`, or nothing when it
    /// has none, as ``AccessLogRecord/traceID(_:)`` decides: the usual 55-byte form is checked
    /// over its bytes and copied; anything else goes through that function.
    static func appendTraceID(_ traceparent: String, to line: AccessLogBuffer) {
        var header = traceparent
        let done = header.withUTF8 { b -> Bool in
            guard isPlainTraceparent(b) else { return false }
            line.append(#","traceID":""#)
            line.append(UnsafeBufferPointer(rebasing: b[3..<35]))
            line.append(0x22)
            return true
        }
        if done { return }
        guard let id = AccessLogRecord.traceID(traceparent) else { return }
        line.append(#","traceID":"#)
        appendGeneralQuoted(id, to: line)
    }

    /// Whether `b` is `vv-<32 hex>-<16 hex>-<2 hex>`, all lower case, version not `ff`,
    /// neither id all zeros: a traceparent whose trace id ``AccessLogRecord/traceID(_:)`` takes.
    static func isPlainTraceparent(_ b: UnsafeBufferPointer<UInt8>) -> Bool {
        guard b.count == 55, b[2] == 0x2D, b[35] == 0x2D, b[52] == 0x2D else { return false }
        var traceZero = true
        var parentZero = true
        for i in 0..<55 where i != 2 && i != 35 && i != 52 {
            let c = b[i]
            guard (0x30...0x39).contains(c) || (0x61...0x66).contains(c) else { return false }
            if c != 0x30 {
                if (3..<35).contains(i) { traceZero = false } else if (36..<52).contains(i) { parentZero = false }
            }
        }
        return !traceZero && !parentZero && !(b[0] == 0x66 && b[1] == 0x66)
    }

}
