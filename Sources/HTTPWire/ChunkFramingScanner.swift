/// Checks the raw bytes of a chunked request body as http-parser consumes them, for what
/// the non-strict build Debian ships tolerates: it takes any two bytes after chunk data for
/// the CRLF that must follow (so `3\r\nabcXY0\r\n\r\n` would be a complete body, and
/// `3\r\nabcXX` would wait for a next chunk that never comes), and a bare LF for a CRLF.
///
/// A pure state machine over bytes: feed it every body byte in order, however split; the
/// first violation is returned and the request is refused with 400.
struct ChunkFramingScanner {
    private enum State {
        /// Before the first size line: the head's final LF may still be here.
        case start
        /// In the chunk size (`sawDigit` once a hex digit was read).
        case size(sawDigit: Bool)
        /// Whitespace after the size: only a `;` extension may follow (RFC 9112 BWS).
        case sizeWhitespace
        /// After `;`: extensions until CR.
        case extensions
        /// After the size line's CR.
        case sizeLF
        /// Inside chunk data, this many bytes left.
        case data(UInt64)
        /// After chunk data: CR must come, then LF.
        case dataCR
        case dataLF
        /// After the last chunk: trailer fields, each ending in CRLF, then an empty line.
        case trailerLineStart
        case trailerLine
        case trailerLF
        case finalLF
        /// The body ended.
        case done
    }

    private var state = State.start
    private var size: UInt64 = 0

    private static func invalid(_ detail: String) -> WireError {
        WireError(.invalidChunk, status: 400, detail)
    }

    /// Scans the next body bytes; returns the first framing violation, or nil.
    mutating func scan(_ bytes: UnsafeRawBufferPointer) -> WireError? {
        var i = 0
        while i < bytes.count {
            let b = bytes[i]
            switch state {
            case .start:
                state = .size(sawDigit: false)
                if b == 0x0A { i += 1 }
                continue
            case .size(let sawDigit):
                if let digit = Self.hexValue(b) {
                    let (shifted, overflow) = size.multipliedReportingOverflow(by: 16)
                    guard !overflow, shifted <= UInt64.max - UInt64(digit) else {
                        return Self.invalid("a chunk size is too large")
                    }
                    size = shifted + UInt64(digit)
                    state = .size(sawDigit: true)
                } else if sawDigit && b == 0x3B {
                    state = .extensions
                } else if sawDigit && (b == 0x20 || b == 0x09) {
                    state = .sizeWhitespace
                } else if sawDigit && b == 0x0D {
                    state = .sizeLF
                } else {
                    return Self.invalid("a chunk size line is malformed")
                }
            case .sizeWhitespace:
                if b == 0x3B {
                    state = .extensions
                } else if b != 0x20 && b != 0x09 {
                    return Self.invalid("a chunk size line is malformed")
                }
            case .extensions:
                if b == 0x0D {
                    state = .sizeLF
                } else if b == 0x0A || (b < 0x20 && b != 0x09) || b == 0x7F {
                    return Self.invalid("a chunk extension contains a control character")
                }
            case .sizeLF:
                guard b == 0x0A else { return Self.invalid("a chunk size line does not end with CRLF") }
                state = size == 0 ? .trailerLineStart : .data(size)
                size = 0
            case .data(let left):
                let n = UInt64(min(UInt64(bytes.count - i), left))
                i += Int(n)
                state = left == n ? .dataCR : .data(left - n)
                continue
            case .dataCR:
                guard b == 0x0D else { return Self.invalid("chunk data is not followed by CRLF") }
                state = .dataLF
            case .dataLF:
                guard b == 0x0A else { return Self.invalid("chunk data is not followed by CRLF") }
                state = .size(sawDigit: false)
            case .trailerLineStart:
                if b == 0x0D {
                    state = .finalLF
                } else if b == 0x0A {
                    return Self.invalid("the chunked body does not end with CRLF")
                } else {
                    state = .trailerLine
                }
            case .trailerLine:
                if b == 0x0D {
                    state = .trailerLF
                } else if b == 0x0A {
                    return Self.invalid("a trailer field does not end with CRLF")
                }
            case .trailerLF:
                guard b == 0x0A else { return Self.invalid("a trailer field does not end with CRLF") }
                state = .trailerLineStart
            case .finalLF:
                guard b == 0x0A else { return Self.invalid("the chunked body does not end with CRLF") }
                state = .done
            case .done:
                return nil
            }
            i += 1
        }
        return nil
    }

    private static func hexValue(_ b: UInt8) -> UInt8? {
        switch b {
        case 0x30...0x39: return b - 0x30
        case 0x41...0x46: return b - 0x41 + 10
        case 0x61...0x66: return b - 0x61 + 10
        default: return nil
        }
    }
}
