import HTTPWire
import TestSupport
import Testing

@testable import Runtime

/// An upstream origin parsed once: what it accepts, and that a request carrying it with a
/// path reaches the same place, on the same pooled connections, as one carrying the URL.
@Suite struct UpstreamOriginTests {
    @Test func originsAreParsedWithTheirSchemesDefaultPort() throws {
        let cases: [(String, Bool, String, Int, String)] = [
            ("http://127.0.0.1:8080", false, "127.0.0.1", 8080, "127.0.0.1:8080"),
            ("http://api", false, "api", 80, "api"),
            ("https://api.example.com", true, "api.example.com", 443, "api.example.com"),
            ("https://[::1]:8443", true, "::1", 8443, "[::1]:8443"),
        ]
        for (text, https, host, port, authority) in cases {
            let origin = try #require(UpstreamOrigin(text), "\(text)")
            #expect(origin.isHTTPS == https && origin.host == host && origin.port == port, "\(text)")
            #expect(origin.authority == authority && origin.urlPrefix == text, "\(text)")
            #expect(origin.url("/a?b") == text + "/a?b")
        }
    }

    @Test(arguments: [
        "ftp://h", "http://", "https://", "http://user@h", "http://h:0", "http://h:65536", "http://h:", "http://h:8a",
        "http://[::1", "http://[::1]x", "http://h h", "http://h/", "http://h/v1", "http://h?q", "http://h#f", "h:80",
    ])
    func anythingButSchemeAndAuthorityIsRefused(_ text: String) {
        #expect(UpstreamOrigin(text) == nil)
    }

    /// A request given as a plain `http://` URL: the origin and target the loop client uses.
    @Test func originsAndTargetsOfHTTPURLs() throws {
        let cases: [(String, String, Int, String, String)] = [
            ("http://127.0.0.1:8080/a/b?x=1", "127.0.0.1", 8080, "127.0.0.1:8080", "/a/b?x=1"),
            ("http://api", "api", 80, "api", "/"),
            ("http://api?q", "api", 80, "api", "/?q"),
            ("http://[::1]:9/p#frag", "::1", 9, "[::1]:9", "/p"),
            ("http://h:65535/", "h", 65535, "h:65535", "/"),
        ]
        for (url, host, port, authority, target) in cases {
            let (origin, t) = try #require(UpstreamOrigin.parse(url), "\(url)")
            #expect(origin == UpstreamOrigin(isHTTPS: false, host: host, port: port, authority: authority), "\(url)")
            #expect(t == target, "\(url)")
        }
    }

    @Test func urlsTheLoopClientLeavesToLibcurlOrRefuses() {
        let urls = [
            "https://h/", "http://", "http://user@h/", "http://h:0/", "http://h:65536/", "http://h:/", "http://h:8a/",
            "http://[::1/", "http://[::1]x/", "ftp://h/", "http://h h/",
        ]
        for url in urls { #expect(UpstreamOrigin.parse(url) == nil, "\(url)") }
    }

    /// The loop client takes an `http` origin as it is, and the same origin and target a URL
    /// would give; an `https` one goes to libcurl, with the URL put together.
    @Test func anOriginAndTargetAreWhatTheURLWouldGive() throws {
        let origin = try #require(UpstreamOrigin("http://127.0.0.1:9"))
        let request = UpstreamRequest(method: "GET", destination: .origin(origin, target: "/v1/x?q=%20"))
        let byURL = UpstreamRequest(method: "GET", url: "http://127.0.0.1:9/v1/x?q=%20")
        let (o1, t1) = try #require(request.http1Destination)
        let (o2, t2) = try #require(byURL.http1Destination)
        #expect(o1 == o2 && o1.hashValue == o2.hashValue && t1 == t2)
        #expect(request.url == byURL.url)
        let secure = UpstreamRequest(method: "GET", destination: .origin(try #require(UpstreamOrigin("https://h")), target: "/"))
        #expect(secure.http1Destination == nil)
        #expect(secure.url == "https://h/")
    }
}

/// Against a real nginx, which names its connection and echoes the target it got.
@Suite(.serialized) struct UpstreamOriginExchangeTests {
    func exchange(_ client: UpstreamClient, _ destination: UpstreamRequest.Destination) async throws -> String {
        let r = try await client.send(UpstreamRequest(method: "GET", destination: destination))
        #expect(r.status == 200)
        return String(decoding: r.body, as: UTF8.self)
    }

    func withNginx(loopHTTP1: Bool, _ body: (UpstreamClient, Int) async throws -> Void) async throws {
        let nginx = try Nginx(serverBlock: #"location / { return 200 "$connection $request_uri"; }"#)
        defer { nginx.stop() }
        let loop = try EventLoop(name: "origin-loop")
        loop.start()
        defer { loop.shutdown() }
        let client = await UpstreamClient.make(on: loop, configuration: UpstreamClientConfiguration(loopHTTP1: loopHTTP1))
        try await body(client, nginx.port)
    }

    /// Requests to one origin, given as an origin or as a URL, share the loop client's pool
    /// and its kept-alive connection, and send the target as given.
    @Test func anOriginAndItsURLShareOnePoolAndConnection() async throws {
        try await withNginx(loopHTTP1: true) { client, port in
            let origin = try #require(UpstreamOrigin("http://127.0.0.1:\(port)"))
            let a = try await exchange(client, .origin(origin, target: "/v1/a%2Fb?x=%20&y"))
            let b = try await exchange(client, .url("http://127.0.0.1:\(port)/c"))
            let c = try await exchange(client, .origin(origin, target: "/"))
            let connections = [a, b, c].map { $0.split(separator: " ")[0] }
            #expect(Set(connections).count == 1, "\([a, b, c])")
            #expect(a.hasSuffix(" /v1/a%2Fb?x=%20&y") && b.hasSuffix(" /c") && c.hasSuffix(" /"), "\([a, b, c])")
            let pools = await withCheckedContinuation { cont in
                client.loop.executeSoonOrNow { cont.resume(returning: client.http1Pools.count) }
            }
            #expect(pools == 1)
        }
    }

    /// Through libcurl the URL is put together from the origin and the target.
    @Test func libcurlGetsTheURLOfTheOriginAndTarget() async throws {
        try await withNginx(loopHTTP1: false) { client, port in
            let origin = try #require(UpstreamOrigin("http://127.0.0.1:\(port)"))
            let a = try await exchange(client, .origin(origin, target: "/v1/a%20b?q=1"))
            #expect(a.hasSuffix(" /v1/a%20b?q=1"), "\(a)")
        }
    }
}
