import HTTPWire
import Testing

@testable import Runtime

/// The pure parts of the loop's HTTP/1.1 client: URL → origin and target, request → head.
struct HTTP1RequestTests {
    @Test func originsAndTargetsOfHTTPURLs() throws {
        let cases: [(String, String, Int, String, String)] = [
            ("http://127.0.0.1:8080/a/b?x=1", "127.0.0.1", 8080, "127.0.0.1:8080", "/a/b?x=1"),
            ("http://api", "api", 80, "api", "/"),
            ("http://api?q", "api", 80, "api", "/?q"),
            ("http://[::1]:9/p#frag", "::1", 9, "[::1]:9", "/p"),
            ("http://h:65535/", "h", 65535, "h:65535", "/"),
        ]
        for (url, host, port, authority, target) in cases {
            let (origin, t) = try #require(HTTP1Origin.parse(url), "\(url)")
            #expect(origin == HTTP1Origin(host: host, port: port, authority: authority), "\(url)")
            #expect(t == target, "\(url)")
        }
    }

    @Test func urlsTheLoopClientLeavesToLibcurlOrRefuses() {
        let urls = [
            "https://h/", "http://", "http://user@h/", "http://h:0/", "http://h:65536/", "http://h:/", "http://h:8a/",
            "http://[::1/", "http://[::1]x/", "ftp://h/", "http://h h/",
        ]
        for url in urls { #expect(HTTP1Origin.parse(url) == nil, "\(url)") }
    }

    func head(_ request: UpstreamRequest) throws -> String {
        let (origin, target) = try #require(HTTP1Origin.parse(request.url))
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
