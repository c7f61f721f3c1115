import Foundation
import Gateway
import Runtime
import TestSupport
import Testing

/// The metrics listener: `/metrics` without the admin token, the same families as the admin
/// API's `/metrics`, and nothing else, whatever token comes with a request.
@Suite(.serialized) struct MetricsListenerTests {
    func scrape(_ stack: Stack, _ method: String = "GET", _ path: String = "/metrics", headers: [String] = []) async throws
        -> TestResponse
    {
        let port = try #require(stack.gateway.withLock { $0?.metricsServer?.port })
        return try await onThread { try Stack.request(port: port, method, path, headers: headers, body: "") }
    }

    func withMetricsListener(_ body: (Stack) async throws -> Void) async throws {
        try await Stack.run { stack in
            try await stack.startGateway {
                $0.probes = .init(host: "127.0.0.1", port: 0)
                $0.metrics = .init(host: "127.0.0.1", port: 0)
            }
            try await body(stack)
        }
    }

    static func families(_ text: String) -> [String] {
        text.split(separator: "\n").filter { $0.hasPrefix("# TYPE ") }.map { String($0.split(separator: " ")[2]) }.sorted()
    }

    @Test func metricsAreServedWithoutATokenAndMatchTheAdminAPIs() async throws {
        try await withMetricsListener { stack in
            #expect(try await stack.loginAlice().status == 200)
            #expect(try await stack.proxy("GET", "/public/a").status == 200)
            var r = try await scrape(stack)
            let counted = try await eventually {
                r = try await scrape(stack)
                return r.text.contains(#"authgate_requests_total{route_kind="public",status_class="2xx"} 1"#)
            }
            #expect(counted, "\(r.text)")
            #expect(r.status == 200)
            #expect(r.header("content-type") == "text/plain; version=0.0.4; charset=utf-8")
            #expect(r.header("cache-control") == "no-store")
            #expect(r.header("www-authenticate") == nil)
            #expect(r.text.contains(#"authgate_session_logged_in{session="default"} 1.0"#))
            #expect(r.text.contains("# HELP authgate_requests_total "))
            let admin = try await stack.admin("GET", "/metrics")
            #expect(admin.status == 200)
            #expect(Self.families(r.text) == Self.families(admin.text))
            #expect(Self.families(r.text).count >= 16)
            // Without the token, the admin API still refuses it.
            #expect(try await stack.admin("GET", "/metrics", token: nil).status == 401)
            let head = try await scrape(stack, "HEAD")
            #expect(head.status == 200)
            #expect(head.body.isEmpty)
            let post = try await scrape(stack, "POST")
            #expect(post.status == 405)
            #expect(post.header("allow") == "GET, HEAD")
        }
    }

    @Test func nothingButMetricsIsThereEvenWithAValidAdminToken() async throws {
        try await withMetricsListener { stack in
            let bearer = "Authorization: Bearer \(Stack.adminToken)"
            for (method, path) in [
                ("GET", "/auth/session"), ("GET", "/auth/events"), ("POST", "/auth/logout"), ("GET", "/livez"),
                ("GET", "/readyz"), ("GET", "/metrics/x"), ("GET", "/"),
            ] {
                let r = try await scrape(stack, method, path, headers: [bearer])
                #expect(r.status == 404, "\(method) \(path)")
                #expect(r.header("content-type") == "application/problem+json", "\(method) \(path)")
                #expect(r.text.contains("no-route"), "\(method) \(path)")
            }
            #expect(Stack.json(try await stack.admin("GET", "/auth/session"))["state"] as? String == "logged_out")
        }
    }

    @Test func noRequestBodyIsReadOrBuffered() async throws {
        try await withMetricsListener { stack in
            let port = stack.gateway.withLock { $0!.metricsServer!.port }
            let r = try await onThread {
                let c = try RawClient(port: port)
                try c.send("POST /metrics HTTP/1.1\r\nHost: a\r\nContent-Length: 104857600\r\n\r\n")
                let response = try c.readResponse()
                return (response, c.isClosedByPeer())
            }
            #expect(r.0.status == 405)
            #expect(r.0.header("connection") == "close")
            #expect(r.1)
        }
    }

    @Test func withoutMetricsConfiguredThereIsNoMetricsListener() async throws {
        try await Stack.run { stack in
            let service = try await stack.startGateway()
            #expect(service.metricsServer == nil)
        }
    }
}
