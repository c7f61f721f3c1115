import HTTPWire
import Testing

/// The byte-at-a-time definition of where CR, LF and NUL may stand in a stream of bodiless
/// requests: empty lines (CRLF or a lone LF) may precede a request line; inside a head every
/// CR is followed by LF and every LF follows a CR; no NUL; a head ends at its empty line.
/// Returns how many heads end before the first byte that breaks the rule, and whether one
/// does.
private func headsBeforeFirstBadByte(_ input: [UInt8]) -> (heads: Int, bad: Bool) {
    var heads = 0
    var i = 0
    while i < input.count {
        // Empty lines before the request line.
        var previous: UInt8 = 0x0A
        while i < input.count && (input[i] == 0x0D || input[i] == 0x0A) {
            if previous == 0x0D && input[i] != 0x0A { return (heads, true) }
            previous = input[i]
            i += 1
        }
        if previous == 0x0D {
            // A CR before the request line with no LF after it (the next byte, if any, is not LF).
            return (heads, i < input.count)
        }
        guard i < input.count else { return (heads, false) }
        // The head: lines up to the empty one.
        var lineLength = 0
        previous = 0
        var ended = false
        while i < input.count {
            let b = input[i]
            if previous == 0x0D && b != 0x0A { return (heads, true) }
            if b == 0x00 { return (heads, true) }
            if b == 0x0A {
                if previous != 0x0D { return (heads, true) }
                if lineLength == 0 {
                    i += 1
                    ended = true
                    break
                }
                lineLength = 0
            } else if b != 0x0D {
                lineLength += 1
            }
            previous = b
            i += 1
        }
        if !ended { return (heads, false) }
        heads += 1
    }
    return (heads, false)
}

@Suite struct HeadBytesPropertyTests {
    /// Two requests on one connection: a public one, then one a session's token would be
    /// attached to. A stray byte must never let the second through.
    private static let stream = Array(
        ("GET /pub/a HTTP/1.1\r\nHost: x\r\nFoo: bar\r\n\r\n" + "GET /api/b HTTP/1.1\r\nHost: x\r\n\r\n").utf8)

    /// What the parser gives for `input` read in pieces of the given sizes (cycled).
    private static func heads(of input: [UInt8], pieces: [Int]) -> (heads: Int, failed: Bool) {
        let parser = RequestParser()
        var heads = 0
        var pos = 0
        var piece = 0
        while pos < input.count {
            let end = min(input.count, pos + pieces[piece % pieces.count])
            piece += 1
            let read = Array(input[pos..<end])
            var offset = 0
            while offset < read.count {
                let (event, used) = read.withUnsafeBytes { parser.parse(UnsafeRawBufferPointer(rebasing: $0[offset...])) }
                offset += used
                switch event {
                case .head: heads += 1
                case .error: return (heads, true)
                case .needMoreData, .body, .end: break
                }
                if used == 0, case .needMoreData = event { break }
            }
            pos = end
        }
        return (heads, false)
    }

    /// The parser never gives out a head that the definition refuses, nor any after it, and
    /// refuses the stream at that head, however the input is split.
    private static func check(_ input: [UInt8], pieces: [Int]) {
        let expected = headsBeforeFirstBadByte(input)
        let got = heads(of: input, pieces: pieces)
        let shown = String(decoding: input, as: UTF8.self).debugDescription
        #expect(got.heads <= expected.heads, "\(shown) in pieces of \(pieces)")
        if expected.bad { #expect(got.failed, "\(shown) in pieces of \(pieces)") }
    }

    @Test func aBareCREndingTheHeadHidesNoRequest() {
        let input = Array("GET /pub/a HTTP/1.1\r\nHost: x\r\nFoo: bar\r\n\rXGET /api/b HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
        for size in [1, 2, 7, 40, 41, 42, 43, input.count] {
            let got = Self.heads(of: input, pieces: [size])
            #expect(got.heads == 0 && got.failed, "pieces of \(size)")
        }
    }

    /// Inputs the random test below once found, kept so that they run every time.
    @Test(arguments: [
        ("GET /pub/a HTTP/1.1\r\nHost: x\r\nFoo: bar\r\n\r\nGET /api/b HTTP/1.1\r\nHost: x\r\n\r\n\rx", [3, 14, 9])
    ])
    func foundByTheRandomTest(input: String, pieces: [Int]) {
        Self.check(Array(input.utf8), pieces: pieces)
    }

    /// CR, LF and NUL put in place of, and before, every byte of the stream, read whole,
    /// byte by byte, and in pieces that end at every offset.
    @Test func crLFAndNULAtEveryPositionAgreeWithTheDefinition() {
        var inputs: [[UInt8]] = []
        for position in 0...Self.stream.count {
            for special in [0x0D, 0x0A, 0x00] as [UInt8] {
                var inserted = Self.stream
                inserted.insert(special, at: position)
                inputs.append(inserted)
                if position < Self.stream.count {
                    var replaced = Self.stream
                    replaced[position] = special
                    inputs.append(replaced)
                }
            }
        }
        for input in inputs {
            Self.check(input, pieces: [input.count])
            Self.check(input, pieces: [1])
            Self.check(input, pieces: [3, 5, 7])
        }
    }

    /// Random heads with CR, LF and NUL sprinkled among ordinary bytes, in random pieces.
    @Test func randomHeadsAgreeWithTheDefinition() {
        var rng = SystemRandomNumberGenerator()
        let ordinary = Array("GET /aZ HTTP/1.1 Host: x-:".utf8)
        for _ in 0..<4000 {
            var input = Self.stream
            for _ in 0..<Int.random(in: 1...3, using: &rng) {
                let b: UInt8 =
                    Int.random(in: 0..<4, using: &rng) == 0
                    ? ordinary.randomElement(using: &rng)! : [0x0D, 0x0A, 0x00].randomElement(using: &rng)!
                let at = Int.random(in: 0...input.count, using: &rng)
                if Bool.random(using: &rng) || at == input.count { input.insert(b, at: at) } else { input[at] = b }
            }
            let pieces = (0..<3).map { _ in Int.random(in: 1...16, using: &rng) }
            Self.check(input, pieces: pieces)
        }
    }
}
