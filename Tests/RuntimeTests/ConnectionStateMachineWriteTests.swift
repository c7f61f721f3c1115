import HTTPWire
import Testing

@testable import Runtime

/// How streamed body bytes and response heads become writes without extra copies.
@Suite struct ConnectionStateMachineWriteTests {
    func streaming(_ headers: HTTPHeaders, _ head: RequestHead = request()) -> Machine {
        var m = makeMachine()
        _ = m.receivedHead(head, body: .buffer(maxBytes: 10), now: 0)
        _ = m.receivedEnd(now: 0)
        _ = m.writeHead(1, status: 200, headers: headers)
        return m
    }

    static var lengthHeaders: HTTPHeaders {
        var h = HTTPHeaders()
        h.add(name: "Content-Length", value: "6")
        return h
    }

    @Test func bodyBytesAfterTheHeadAreSentAsGivenAndCountedInFlight() {
        var m = streaming(Self.lengthHeaders)
        let first = Array("abc".utf8).withUnsafeBytes { m.writeBody(1, $0) }
        #expect(writes(first) == ["HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nabc"], "the head leaves with the first bytes")
        #expect(m.writesInFlight == 1)
        let second = Array("def".utf8).withUnsafeBytes { m.writeBody(1, $0) }
        #expect(second == [.writeInput], "no copy of the caller's bytes")
        #expect(m.writesInFlight == 2)
        #expect(m.writeCompleted(failed: false, queuedBytes: 0, now: 1) == [.resumeWriters])
        #expect(m.writeCompleted(failed: false, queuedBytes: 0, now: 1) == [.resumeWriters])
        #expect(m.writesInFlight == 0)
        #expect(m.end(1, now: 2).contains(.drainPending))
    }

    @Test func bodyBytesAfterTheCloseAreNotWritten() {
        var m = streaming(Self.lengthHeaders)
        _ = m.flushHeldHead()
        _ = m.abort()
        #expect(Array("abc".utf8).withUnsafeBytes { m.writeBody(1, $0) } == [])
    }

    @Test func aChunkCarriesTheHeldHeadItsSizeAndItsBytesInOneWrite() {
        var m = streaming(HTTPHeaders())
        let big = [UInt8](repeating: 0x61, count: 300)
        let first = big.withUnsafeBytes { m.writeBody(1, $0) }
        #expect(
            writes(first) == [
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n12c\r\n" + String(repeating: "a", count: 300) + "\r\n"
            ])
        let second = Array("z".utf8).withUnsafeBytes { m.writeBody(1, $0) }
        #expect(writes(second) == ["1\r\nz\r\n"])
    }

    @Test(arguments: [0, 1, 9, 10, 15, 16, 255, 256, 4095, 65_536, 1 << 40, Int.max])
    func aChunkSizeLineIsTheSameAsChunkedEncodings(_ count: Int) {
        var out: [UInt8] = [0x2A]
        Machine.appendChunkHeader(count, to: &out)
        #expect(out == [0x2A] + ChunkedEncoding.chunkHeader(count))
    }

    static let framingCases: [(contentLength: Int?, chunked: Bool, close: Bool)] = [
        (nil, false, false), (0, false, false), (1234, false, true), (nil, true, false), (nil, true, true),
        (nil, false, true),
    ]

    @Test(arguments: framingCases)
    func aHeadWithFramingFieldsIsTheSameAsAddingThemToTheHeaders(_ c: (contentLength: Int?, chunked: Bool, close: Bool)) {
        var h = HTTPHeaders()
        h.add(name: "X-A", value: "1")
        h.add(name: "Set-Cookie", value: "a=b")
        var expected = h
        if let n = c.contentLength { expected.add(name: "Content-Length", value: String(n)) }
        if c.chunked { expected.add(name: "Transfer-Encoding", value: "chunked") }
        if c.close { expected.add(name: "Connection", value: "close") }
        var want: [UInt8] = []
        ResponseHead(status: 404, headers: expected).serialize(into: &want)
        var got: [UInt8] = []
        Machine.serialize(
            status: 404, headers: h, into: &got, contentLength: c.contentLength, chunked: c.chunked, close: c.close)
        #expect(String(decoding: got, as: UTF8.self) == String(decoding: want, as: UTF8.self))
        var bare: [UInt8] = []
        Machine.serialize(status: 200, headers: HTTPHeaders(), into: &bare, contentLength: nil, chunked: false, close: false)
        #expect(String(decoding: bare, as: UTF8.self) == "HTTP/1.1 200 OK\r\n\r\n")
    }
}
