import Gateway
import HTTPWire
import TestSupport
import Testing

/// A path an upstream could resolve outside the route it matched (Tomcat and Spring drop
/// `;` parameters before resolving dot segments; Windows servers take `\` for `/`) is refused
/// before a token is attached.
@Suite struct RequestTargetTests {
    static let refused = [
        "/api/..;/admin", "/api/.;/admin", "/api/..;jsessionid=x/admin", "/api/.;x=1", "/api/..;", "/api/%2e%2e;/admin",
        "/api/%2E.;/admin", "/api/..%3b/admin", "/api/..%3B/admin", "/api/.%3bx/admin",
        "/api\\..\\admin", "/api/..\\admin", "/api/a\\b", "/api/%5c../admin", "/api/%5C../admin", "/api/a%5cb",
        "/api/../admin", "/api/%2e%2e/admin", "/api/./x", "/api/a%2fb", "/api/a%2Fb",
    ]
    static let allowed = [
        "/api/users;v=1/x", "/api/a;b", "/api/...;/x", "/api/..a;/x", "/api/a..;/x", "/api/;/x", "/api/.well-known/x",
        "/api/%2e%2e%2e/x", "/api/a%3bb", "/api/x?q=..;/\\", "/api/x?q=%5c",
    ]

    @Test(arguments: refused) func pathsThatCanLeaveTheRouteAreRefused(_ target: String) {
        let error = #expect(throws: WireError.self) { try RequestTarget(target) }
        #expect(error?.status == 400)
        #expect(error?.code == .invalidTarget)
    }

    @Test(arguments: allowed) func pathsThatStayInTheRouteAreAccepted(_ target: String) throws {
        _ = try RequestTarget(target)
    }
}

@Suite(.serialized) struct RequestTargetProxyTests {
    @Test func semicolonDotSegmentsAndBackslashesNeverReachTheUpstream() async throws {
        try await withProxy { proxy, upstream in
            for path in ["/api/..;/inspect", "/api/.;/inspect", "/api/..%5cinspect", "/api\\..\\inspect"] {
                let c = try RawClient(port: proxy.port)
                try c.send("GET \(path) HTTP/1.1\r\nHost: a\r\n\r\n")
                let r = try c.readResponse()
                #expect(r.status == 400, "\(path): \(r.status) \(r.text)")
                #expect(r.header("content-type") == "application/problem+json", "\(path)")
            }
            // A control request on the same proxy does arrive: the count below can tell.
            let c = try RawClient(port: proxy.port)
            try c.send("GET /api/inspect HTTP/1.1\r\nHost: a\r\n\r\n")
            #expect(try c.readResponse().status == 200)
            #expect(upstream.responder.totalArrivals == 1, "only the control request reached the upstream")
        }
    }
}

/// How a target splits into the path and the query, whatever its form.
@Suite struct RequestTargetSplitTests {
    @Test(
        arguments: [
            ("/", "/", nil), ("/a?b", "/a", "b"), ("/a?", "/a", ""), ("/a#f", "/a", nil), ("/a?b#f", "/a", "b"),
            ("/a#f?b", "/a", nil), ("/a?b?c", "/a", "b?c"), ("/a?b#", "/a", "b"), ("/%C3%A9?x=%23", "/%C3%A9", "x=%23"),
            ("http://h/x?y#z", "/x", "y"), ("https://h?q", "/", "q"), ("http://h", "/", nil),
        ] as [(String, String, String?)])
    func pathAndQuery(target: String, path: String, query: String?) throws {
        let t = try RequestTarget(target)
        #expect(t.path == path)
        #expect(t.query.map(String.init) == query)
    }
}
