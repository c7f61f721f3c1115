import HTTPWire
import Testing

@testable import Runtime

/// The pure parts of the loop's HTTP/1.1 client: request → head.
struct HTTP1RequestTests {
    func head(_ request: UpstreamRequest) throws -> String {
        let (origin, target) = try #require(UpstreamOrigin.parse(request.url))
        return String(decoding: try HTTP1RequestHead.make(request, target: target, origin: origin).bytes, as: UTF8.self)
    }

    @Test func headsCarryHostAndTheirOwnFraming() async throws {
        var h = HTTPHeaders()
        h.add(name: "X-A", value: "1")
        h.add(name: "content-length", value: "999")
        #expect(
            try head(UpstreamRequest(method: "GET", url: "http://h:1/p?q", headers: h))
                == "GET /p?q HTTP/1.1\r\nX-A: 1\r\nHost: h:1\r\n\r\n")
        h.add(name: "Host", value: "given")
        #expect(
            try head(UpstreamRequest(method: "POST", url: "http://h/", headers: h, body: .bytes([1, 2, 3])))
                == "POST / HTTP/1.1\r\nX-A: 1\r\nHost: given\r\nContent-Length: 3\r\n\r\n")
        #expect(
            try head(UpstreamRequest(method: "PUT", url: "http://h/")) == "PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"
        )
        #expect(try head(UpstreamRequest(method: "DELETE", url: "http://h/")) == "DELETE / HTTP/1.1\r\nHost: h\r\n\r\n")
        let loop = try EventLoop(name: "head-test")
        loop.start()
        defer { loop.shutdown() }
        let stream = await withCheckedContinuation { c in
            loop.execute { c.resume(returning: BodyStream(loop: loop, highWater: 1)) }
        }
        #expect(
            try head(UpstreamRequest(method: "POST", url: "http://h/", body: .stream(stream, length: nil)))
                == "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n")
        #expect(
            try head(UpstreamRequest(method: "POST", url: "http://h/", body: .stream(stream, length: 7)))
                == "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 7\r\n\r\n")
    }

    @Test func aHeaderThatCouldSplitTheRequestIsRefusedBeforeAnythingIsSent() {
        for (name, value) in [("X-A", "a\r\nX-B: b"), ("X A", "v"), ("X-A", "a\u{0}")] {
            var h = HTTPHeaders()
            h.add(name: name, value: value)
            #expect(throws: RuntimeError.self) { try head(UpstreamRequest(method: "GET", url: "http://h/", headers: h)) }
        }
        #expect(throws: RuntimeError.self) { try head(UpstreamRequest(method: "G T", url: "http://h/")) }
    }
}
