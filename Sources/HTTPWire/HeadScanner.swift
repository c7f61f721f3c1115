/// Checks raw head bytes for what http-parser tolerates: NUL, bare CR, bare LF and
/// obs-fold (a line starting with whitespace).
struct HeadScanner {
    private var previous: UInt8 = 0x0A
    private var sawLineStart = true
    private var inFirstLine = true
    private var firstLineTail: [UInt8] = []
    private var firstLineDropped = false
    /// How many bytes of the request line have been seen (without its CR and LF).
    private(set) var firstLineLength = 0

    /// The bytes of the request line seen so far; empty once more than 32 have been seen.
    var firstLineSoFar: [UInt8] { firstLineDropped ? [] : firstLineTail }

    /// Starts over for the next message, keeping the request line's buffer (so that a
    /// message does not allocate one) unless a long line made it large.
    mutating func reset() {
        previous = 0x0A
        sawLineStart = true
        inFirstLine = true
        firstLineDropped = false
        firstLineLength = 0
        if firstLineTail.capacity > 256 { firstLineTail = [] } else { firstLineTail.removeAll(keepingCapacity: true) }
    }

    mutating func scan(_ bytes: UnsafeRawBufferPointer) -> WireError? {
        // Where the request line's bytes begin in this input, while it is being read: they
        // are kept in one append when the line or the input ends, not one byte at a time.
        var lineStart: Int? = inFirstLine && !sawLineStart ? 0 : nil
        var i = 0
        while i < bytes.count {
            // Inside a line (after its first byte, no CR or LF just before), a byte that is
            // none of NUL, CR and LF changes nothing but `previous`: such runs are passed
            // over eight bytes at a time, and each byte that matters is read one at a time.
            if !sawLineStart && previous != 0x0D && previous != 0x0A, let base = bytes.baseAddress {
                let start = i
                while i + 8 <= bytes.count {
                    let special = Self.nulCROrLF(UInt64(littleEndian: base.loadUnaligned(fromByteOffset: i, as: UInt64.self)))
                    // To the first such byte: the ones before it are ordinary.
                    i += special == 0 ? 8 : special.trailingZeroBitCount / 8
                    if special != 0 { break }
                }
                if i > start { previous = bytes[i - 1] }
                if i == bytes.count { break }
            }
            let b = bytes[i]
            defer { i += 1 }
            if previous == 0x0D && b != 0x0A {
                return WireError(.bareCarriageReturn, status: 400, "a CR is not followed by LF")
            }
            switch b {
            case 0x00:
                return WireError(.nulByte, status: 400, "the request head contains a NUL byte")
            case 0x0A:
                if previous != 0x0D && !sawLineStart {
                    return WireError(.malformedRequest, status: 400, "a line ends in LF without CR")
                }
                if inFirstLine && !sawLineStart {
                    inFirstLine = false
                    if let start = lineStart { keepFirstLine(bytes, from: start, to: i) }
                    lineStart = nil
                    if !HeadScanner.endsWithVersion(firstLineTail) {
                        return WireError(.malformedRequest, status: 400, "the request line must end with HTTP/<digit>.<digit>")
                    }
                }
            case 0x20, 0x09:
                if previous == 0x0A && !sawLineStart {
                    return WireError(.obsoleteLineFolding, status: 400, "a header line starts with whitespace (obs-fold)")
                }
            default:
                break
            }
            if sawLineStart && b != 0x0D && b != 0x0A {
                sawLineStart = false
                if inFirstLine { lineStart = i }
            }
            previous = b
        }
        if inFirstLine, let start = lineStart { keepFirstLine(bytes, from: start, to: bytes.count) }
        return nil
    }

    /// The high bit of each byte of `word` (read little-endian) that may be NUL, LF or CR
    /// (a zero byte in `word`, `word ^ 0x0A0A…` or `word ^ 0x0D0D…`); 0 when none is. The
    /// lowest bit set is exact: the formula errs only on bytes after a true one.
    @inline(__always)
    static func nulCROrLF(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        func zeroBytes(_ v: UInt64) -> UInt64 { (v &- ones) & ~v & highs }
        return zeroBytes(word) | zeroBytes(word ^ (ones &* 0x0A)) | zeroBytes(word ^ (ones &* 0x0D))
    }

    /// Keeps `bytes[from..<to]` of the request line (without the CR that may end it), and
    /// only its last 32 bytes once it is longer.
    private mutating func keepFirstLine(_ bytes: UnsafeRawBufferPointer, from: Int, to: Int) {
        var end = to
        // A CR can only stand last: one followed by anything but LF was refused.
        if end > from && bytes[end - 1] == 0x0D { end -= 1 }
        firstLineLength += end - from
        firstLineTail.append(contentsOf: bytes[from..<end])
        if firstLineTail.count > 32 {
            firstLineTail.removeFirst(firstLineTail.count - 32)
            firstLineDropped = true
        }
    }

    /// Whether a request line ends in ` HTTP/d.d` (http-parser checks only the digits).
    static func endsWithVersion(_ line: [UInt8]) -> Bool {
        let p = line.count - 9
        guard p >= 0 else { return false }
        func digit(_ b: UInt8) -> Bool { b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") }
        return line[p] == 0x20 && line[p + 1] == UInt8(ascii: "H") && line[p + 2] == UInt8(ascii: "T")
            && line[p + 3] == UInt8(ascii: "T") && line[p + 4] == UInt8(ascii: "P") && line[p + 5] == UInt8(ascii: "/")
            && digit(line[p + 6]) && line[p + 7] == UInt8(ascii: ".") && digit(line[p + 8])
    }
}
