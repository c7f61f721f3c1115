import HTTPWire
import Testing

/// http-parser, built non-strict, takes any two bytes after chunk data for its CRLF. The
/// parser refuses them, however the input is split, and accepts every well-framed body.
@Suite struct ChunkFramingTests {
    static let head = "POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"

    static let malformed = [
        "3\r\nabcXY0\r\n\r\n", "3\r\nabcXX", "3\r\nabcX", "3\r\nabc\n0\r\n\r\n", "3\r\nabc\r0\r\n\r\n", "3\r\nabcd\r\n0\r\n\r\n",
        "3\r\nabc\r\nX", "3\n abc\r\n0\r\n\r\n", "3;ext\nabc\r\n0\r\n\r\n", "0\r\n\n", "0\r\nX-T: 1\n\r\n",
        "G\r\n", "\r\n", "3 \r\nabc\r\n0\r\n\r\n",
    ]

    static let wellFramed = [
        ("3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n", "abcde"), ("3;name=value\r\nabc\r\n0\r\n\r\n", "abc"),
        ("A\r\n0123456789\r\n0\r\n\r\n", "0123456789"), ("a\r\n0123456789\r\n0\r\n\r\n", "0123456789"),
        ("3\r\nabc\r\n0\r\nX-Trailer: 1\r\n\r\n", "abc"), ("003\r\nabc\r\n0\r\n\r\n", "abc"), ("0\r\n\r\n", ""),
        ("3 ;ext\r\nabc\r\n0\r\n\r\n", "abc"),
    ]

    @Test(arguments: malformed)
    func chunkFramingThatIsNotCRLFIsRefusedHoweverSplit(_ body: String) {
        let input = Array((Self.head + body).utf8)
        for step in [1, 2, 3, 7, input.count] {
            let p = parseAll(input, splitEvery: step)
            #expect(p.error?.status == 400, "split every \(step): \(String(describing: p.error))")
            #expect(p.error?.code == .invalidChunk, "split every \(step)")
        }
    }

    @Test(arguments: wellFramed)
    func wellFramedChunkedBodiesAreAcceptedHoweverSplit(_ body: String, _ expected: String) {
        let input = Array((Self.head + body + "GET /next HTTP/1.1\r\nHost: h\r\n\r\n").utf8)
        for step in [1, 2, 3, 7, input.count] {
            let p = parseAll(input, splitEvery: step)
            #expect(p.error == nil, "split every \(step): \(String(describing: p.error))")
            #expect(p.heads.map(\.target) == ["/c", "/next"], "split every \(step)")
            #expect(p.bodies.first.map { String(decoding: $0, as: UTF8.self) } == expected, "split every \(step)")
        }
    }
}
