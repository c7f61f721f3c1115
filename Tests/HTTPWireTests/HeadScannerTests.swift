import Testing

@testable import HTTPWire

/// The scanner checks head bytes in whole reads; this oracle is the byte-at-a-time
/// definition it must agree with, whatever the input and however it is split.
private struct ByteAtATimeScanner {
    private var previous: UInt8 = 0x0A
    private var sawLineStart = true
    private var inFirstLine = true
    private var firstLineTail: [UInt8] = []
    private var firstLineDropped = false

    var firstLineSoFar: [UInt8] { firstLineDropped ? [] : firstLineTail }

    static func endsWithVersion(_ line: [UInt8]) -> Bool {
        let suffix = Array(" HTTP/".utf8)
        guard line.count >= suffix.count + 3 else { return false }
        let tail = line.suffix(suffix.count + 3)
        let digits = Array(tail.suffix(3))
        return tail.prefix(suffix.count).elementsEqual(suffix) && (48...57).contains(digits[0]) && digits[1] == 0x2E
            && (48...57).contains(digits[2])
    }

    mutating func scan(_ bytes: UnsafeRawBufferPointer) -> WireError? {
        for b in bytes {
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
                    if !ByteAtATimeScanner.endsWithVersion(firstLineTail) {
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
            if b != 0x0D && b != 0x0A { sawLineStart = false }
            if inFirstLine && !sawLineStart && b != 0x0D {
                firstLineTail.append(b)
                if firstLineTail.count > 32 {
                    firstLineTail.removeFirst(16)
                    firstLineDropped = true
                }
            }
            previous = b
        }
        return nil
    }
}

@Suite struct HeadScannerTests {
    private static let alphabet = Array("GET /x HTTP/1.1\r\nHost: a\r\n \t\u{0}PROPFIND:09.".utf8)

    @Test func theVersionCheckAgreesWithItsDefinition() {
        var rng = SystemRandomNumberGenerator()
        let tails = [
            "HTTP/1.1", " HTTP/1.1", "x HTTP/1.0", "x HTTP/a.1", "x HTTP/1,1", "x HTTP/11", "x HTTQ/1.1", "x http/1.1", "",
        ]
        var lines = tails.map { Array($0.utf8) }
        for _ in 0..<3000 {
            lines.append(
                (0..<Int.random(in: 0...14, using: &rng)).map { _ in Array(" HTTP/1.90x".utf8).randomElement(using: &rng)! })
        }
        for line in lines {
            #expect(HeadScanner.endsWithVersion(line) == ByteAtATimeScanner.endsWithVersion(line), "\(line)")
        }
    }

    /// A scanner reset after a message checks the next one as a new scanner would, whatever
    /// the first message left (a long request line, a refusal, a line half read).
    @Test func aResetScannerIsANewOne() {
        let firsts = [
            "GET / HTTP/1.1\r\nHost: h\r\n\r\n", "GET /\(String(repeating: "a", count: 400)) HTTP/1.1\r\n", "GET / HTTP/1.1\n",
            "GET /half", "BREW /pot HTTP/1.1\r",
        ]
        let nexts = [
            "GET /x HTTP/1.1\r\nHost: h\r\n\r\n", " folded", "\r\n\r\nGET / HTTP/1.0\r\n\r\n", "GET / HTTX/1.1\r\n", "\n",
        ]
        for first in firsts {
            for next in nexts {
                var reused = HeadScanner()
                _ = Array(first.utf8).withUnsafeBytes { reused.scan($0) }
                reused.reset()
                var fresh = HeadScanner()
                let a = Array(next.utf8).withUnsafeBytes { reused.scan($0) }
                let b = Array(next.utf8).withUnsafeBytes { fresh.scan($0) }
                #expect(a?.code == b?.code, "\(first.debugDescription) then \(next.debugDescription)")
                #expect(reused.firstLineSoFar == fresh.firstLineSoFar)
            }
        }
    }

    /// The first NUL, LF or CR of eight bytes is found exactly, whatever follows it (the
    /// word formula may also flag bytes after a true one, never before).
    @Test func theFirstSpecialByteOfAWordIsFoundExactly() {
        var rng = SystemRandomNumberGenerator()
        let bytes: [UInt8] = [0x00, 0x01, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x09, 0x20, 0x41, 0x7F, 0x80, 0xFF, 0x8A, 0x8D]
        for _ in 0..<20_000 {
            let word = (0..<8).map { _ in bytes.randomElement(using: &rng)! }
            let first = word.firstIndex { $0 == 0x00 || $0 == 0x0A || $0 == 0x0D } ?? 8
            let value = word.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) }
            let special = HeadScanner.nulCROrLF(value)
            #expect((special == 0 ? 8 : special.trailingZeroBitCount / 8) == first, "\(word)")
        }
    }

    /// Long lines, read in pieces of up to 64 bytes, with a NUL, CR, LF, SP or HTAB put at
    /// every offset of a word: the runs the scanner passes over eight bytes at a time, and
    /// every place the byte that ends such a run can fall.
    @Test func agreesWithTheByteAtATimeDefinitionOverLongLines() {
        var rng = SystemRandomNumberGenerator()
        let letters = Array("abcdefghijXYZ0123456789-._~:/=;,".utf8)
        var inputs: [[UInt8]] = []
        for special in [0x00, 0x0D, 0x0A, 0x20, 0x09] as [UInt8] {
            for offset in 0..<24 {
                var line = Array("GET /\(String(repeating: "p", count: offset)) HTTP/1.1\r\nX-Long: ".utf8)
                line += (0..<40).map { _ in letters.randomElement(using: &rng)! }
                line.insert(special, at: line.count - 1 - offset % 17)
                line += Array("\r\nHost: h\r\n\r\n".utf8)
                inputs.append(line)
            }
        }
        for _ in 0..<1500 {
            let head =
                Array("GET /".utf8) + (0..<Int.random(in: 0...50, using: &rng)).map { _ in letters.randomElement(using: &rng)! }
            var input = head + Array(" HTTP/1.1\r\n".utf8)
            for _ in 0..<Int.random(in: 0...4, using: &rng) {
                input += (0..<Int.random(in: 1...70, using: &rng)).map { _ in
                    Int.random(in: 0..<40, using: &rng) == 0
                        ? Self.alphabet.randomElement(using: &rng)! : letters.randomElement(using: &rng)!
                }
                input += Array("\r\n".utf8)
            }
            inputs.append(input + Array("\r\n".utf8))
        }
        for input in inputs { Self.check(input, maxPiece: 64, using: &rng) }
    }

    /// Scans `input` in random pieces of 1…`maxPiece` bytes and compares with the oracle.
    private static func check(_ input: [UInt8], maxPiece: Int, using rng: inout SystemRandomNumberGenerator) {
        var oracle = ByteAtATimeScanner()
        var expected: WireError?
        for b in input where expected == nil { expected = [b].withUnsafeBytes { oracle.scan($0) } }
        var scanner = HeadScanner()
        var got: WireError?
        var pos = 0
        while pos < input.count && got == nil {
            let end = min(input.count, pos + Int.random(in: 1...maxPiece, using: &rng))
            // Each read is its own buffer, as the parser's reads are.
            got = Array(input[pos..<end]).withUnsafeBytes { scanner.scan($0) }
            pos = end
        }
        #expect(got?.code == expected?.code, "\(String(decoding: input, as: UTF8.self).debugDescription)")
        if got == nil && expected == nil {
            #expect(
                scanner.firstLineSoFar == oracle.firstLineSoFar
                    || (scanner.firstLineSoFar.isEmpty && oracle.firstLineSoFar.isEmpty))
        }
    }

    @Test func agreesWithTheByteAtATimeDefinitionOnRandomSplitInputs() {
        var rng = SystemRandomNumberGenerator()
        var seeds: [[UInt8]] = [
            Array("GET / HTTP/1.1\r\nHost: h\r\n\r\n".utf8), Array("\r\n\r\nGET / HTTP/1.1\r\n\r\n".utf8),
            Array("BREW /pot HTTP/1.1\r\n".utf8), Array("GET /\(String(repeating: "a", count: 40)) HTTP/1.1\r\n".utf8),
            Array("GET / HTTP/1.1\n".utf8), Array("GET / HTTP/1.1\r\n folded\r\n".utf8), Array("GET / HTTX/1.1\r\n".utf8),
        ]
        for _ in 0..<2000 {
            seeds.append((0..<Int.random(in: 0...60, using: &rng)).map { _ in Self.alphabet.randomElement(using: &rng)! })
        }
        for input in seeds { Self.check(input, maxPiece: 12, using: &rng) }
    }
}
