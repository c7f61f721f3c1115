import HTTPWire
import Runtime
import Testing

@testable import Gateway

@Suite struct ForwardedHeadersTests {
    @Test func responseStripsHopByHopAndConnectionNamedFields() {
        let upstream = HTTPHeaders([
            ("Connection", "X-Internal, close"), ("X-Internal", "secret"), ("Keep-Alive", "timeout=5"),
            ("Transfer-Encoding", "chunked"), ("Content-Type", "text/plain"), ("Via", "1.0 upstream"),
        ])
        let out = ForwardedHeaders.clientResponse(upstream)
        #expect(out[first: "x-internal"] == nil)
        #expect(out[first: "connection"] == nil)
        #expect(out[first: "keep-alive"] == nil)
        #expect(out[first: "transfer-encoding"] == nil)
        #expect(out[first: "content-type"] == "text/plain")
        #expect(out[first: "via"] == "1.0 upstream, 1.1 authgate")
    }

    @Test func requestRewritesHostAndAppendsForwardingFields() {
        let client = HTTPHeaders([
            ("Host", "front.example"), ("X-Forwarded-For", "10.0.0.1"), ("Content-Length", "5"), ("Expect", "100-continue"),
            ("Authorization", "Bearer client"), ("X-Forwarded-Proto", "https"),
        ])
        let out = ForwardedHeaders.upstreamRequest(
            client, clientAddress: "127.0.0.1:5555", upstreamAuthority: "api:9000", removeAuthorization: true,
            trustedProxies: ["127.0.0.1"])
        #expect(out[all: "host"] == ["api:9000"])
        #expect(out[first: "x-forwarded-for"] == "10.0.0.1, 127.0.0.1", "a trusted proxy's chain is kept")
        let untrusted = ForwardedHeaders.upstreamRequest(
            client, clientAddress: "127.0.0.1:5555", upstreamAuthority: "api:9000", removeAuthorization: true)
        #expect(untrusted[all: "x-forwarded-for"] == ["127.0.0.1"], "anyone else's claim is overwritten")
        #expect(out[all: "x-forwarded-proto"] == ["http"], "a client cannot claim https")
        #expect(out[first: "x-forwarded-host"] == "front.example")
        #expect(out[first: "content-length"] == nil)
        #expect(out[first: "expect"] == nil)
        #expect(out[first: "authorization"] == nil)
    }

    @Test func theUpstreamsHostFieldIsMadeOnceAndGivesTheSameFields() throws {
        let base = ProxyRoute(prefix: "/", upstream: try #require(UpstreamOrigin("http://api:9000")), upstreamPath: "/v1")
        #expect(base.hostField == HTTPHeaders([("Host", "api:9000")]))
        let client = HTTPHeaders([("Host", "front.example"), ("Accept", "*/*"), ("Via", "1.0 edge")])
        for (address, trusted) in [("127.0.0.1:5555", Set<String>()), ("[::1]:443", ["::1"]), ("unix", ["10.0.0.9"])] {
            let once = ForwardedHeaders.upstreamRequest(
                client, clientAddress: address, hostField: base.hostField, removeAuthorization: true, trustedProxies: trusted)
            let each = ForwardedHeaders.upstreamRequest(
                client, clientAddress: address, upstreamAuthority: "api:9000", removeAuthorization: true,
                trustedProxies: trusted)
            #expect(once == each)
            #expect(
                once.fields.map(\.name) == ["Accept", "Host", "X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host", "Via"])
            #expect(once.firstInvalidField == nil)
        }
        let v6 = ForwardedHeaders.upstreamRequest(
            client, clientAddress: "[::1]:443", hostField: base.hostField, removeAuthorization: true)
        #expect(v6[all: "x-forwarded-for"] == ["::1"])
        #expect(v6[all: "via"] == ["1.0 edge, 1.1 authgate"])
        let trustedWithoutChain = ForwardedHeaders.upstreamRequest(
            client, clientAddress: "[::1]:443", hostField: base.hostField, removeAuthorization: true, trustedProxies: ["::1"])
        #expect(trustedWithoutChain[all: "x-forwarded-for"] == ["::1"], "a trusted proxy that sent no chain")
    }

    @Test func aResponseEditedInPlaceLeavesEveryOtherCopyAlone() {
        let upstream = HTTPHeaders([("Connection", "close"), ("Content-Type", "text/plain"), ("Via", "1.0 upstream")])
        let kept = upstream
        let out = ForwardedHeaders.clientResponse(upstream)
        #expect(kept == upstream && kept.count == 3, "the caller's copy is a value")
        #expect(out.fields.map(\.name) == ["Content-Type", "Via"])
        #expect(out[first: "via"] == "1.0 upstream, 1.1 authgate")
    }

    @Test func routesMatchAtSegmentBoundaries() throws {
        let r = ProxyRoute(prefix: "/api", upstream: UpstreamOrigin("http://u:1")!, upstreamPath: "/v1", stripPrefix: true)
        #expect(r.matches("/api"))
        #expect(r.matches("/api/x"))
        #expect(!r.matches("/apix"))
        #expect(r.upstreamURL(path: "/api/x", query: "q=1") == "http://u:1/v1/x?q=1")
        #expect(r.upstreamURL(path: "/api", query: nil) == "http://u:1/v1/")
        #expect(ProxyRoute.parseUpstream("ftp://x") == nil)
        #expect(ProxyRoute.parseUpstream("http://user@x") == nil)
        #expect(ProxyRoute.parseUpstream("http://u:1/v1?q") == nil)
        let parsed = try #require(ProxyRoute.parseUpstream("https://u/v1//"))
        #expect(parsed.origin == UpstreamOrigin("https://u") && parsed.path == "/v1")
    }

    @Test func aRoutesUpstreamCarriesItsHostFieldAndItsPathNoTrailingSlash() throws {
        var r = ProxyRoute(prefix: "/", upstream: try #require(UpstreamOrigin("http://a:1")), upstreamPath: "/v1/")
        #expect(r.upstreamPath == "/v1" && r.hostField == HTTPHeaders([("Host", "a:1")]))
        r.upstream = try #require(UpstreamOrigin("https://b"))
        r.upstreamPath = "/"
        #expect(r.upstreamPath == "" && r.hostField == HTTPHeaders([("Host", "b")]))
        #expect(r.upstreamURL(path: "/x", query: nil) == "https://b/x")
    }

    @Test func targetsOfEveryFormGiveOnlyPathAndQuery() throws {
        #expect(try RequestTarget("/a?b").path == "/a")
        #expect(try RequestTarget("http://evil/x?y").path == "/x")
        #expect(try RequestTarget("http://evil/x?y").query == "y")
        #expect(try RequestTarget("http://evil").path == "/")
        #expect(throws: WireError.self) { try RequestTarget("*") }
        #expect(throws: WireError.self) { try RequestTarget("/a/%2E%2E/b") }
    }
}

@Suite struct ClientIPTests {
    @Test(arguments: [
        ("127.0.0.1:5050", "127.0.0.1"), ("[::1]:80", "::1"), ("[fe80::1%eth0]:1", "fe80::1%eth0"), ("10.0.0.1", "10.0.0.1"),
        ("unix", "unix"), ("", ""),
    ])
    func theAddressLosesItsPort(address: String, ip: String) {
        #expect(ForwardedHeaders.clientIP(address) == ip)
    }
}
