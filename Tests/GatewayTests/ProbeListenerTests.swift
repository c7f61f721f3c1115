import Foundation
import Gateway
import Runtime
import TestSupport
import Testing

/// The probe listener: `/livez` and `/readyz` as on the admin listener, nothing else, and
/// no admin token ever opens anything on it.
@Suite(.serialized) struct ProbeListenerTests {
    func probe(_ stack: Stack, _ method: String, _ path: String, headers: [String] = []) async throws -> TestResponse {
        let port = try #require(stack.gateway.withLock { $0?.probeServer?.port })
        return try await onThread { try Stack.request(port: port, method, path, headers: headers, body: "") }
    }

    func withProbes(_ body: (Stack) async throws -> Void) async throws {
        try await Stack.run { stack in
            try await stack.startGateway { $0.probes = .init(host: "127.0.0.1", port: 0) }
            try await body(stack)
        }
    }

    @Test func theProbeListenerAnswersLivezAndReadyzAsTheAdminAPIDoes() async throws {
        try await withProbes { stack in
            let live = try await probe(stack, "GET", "/livez")
            #expect(live.status == 200)
            #expect(live.text == #"{"status":"ok"}"#)
            let ready = try await probe(stack, "GET", "/readyz")
            #expect(ready.status == 200)
            let adminReady = try await stack.admin("GET", "/readyz", token: nil)
            #expect(ready.text == adminReady.text)
            #expect(ready.header("cache-control") == "no-store")
            let head = try await onThread { [port = stack.gateway.withLock { $0!.probeServer!.port }] in
                try Stack.request(port: port, "HEAD", "/readyz", headers: [], body: "")
            }
            #expect(head.status == 200)
            #expect(head.body.isEmpty)
            let post = try await probe(stack, "POST", "/livez")
            #expect(post.status == 405)
            #expect(post.header("allow") == "GET, HEAD")
        }
    }

    @Test func theAdminEndpointsAreNotThereEvenWithAValidAdminToken() async throws {
        try await withProbes { stack in
            let bearer = "Authorization: Bearer \(Stack.adminToken)"
            let paths = [("GET", "/auth/session"), ("GET", "/metrics"), ("GET", "/auth/sessions"), ("POST", "/auth/logout")]
            for (method, path) in paths {
                let r = try await probe(stack, method, path, headers: [bearer])
                #expect(r.status == 404, "\(method) \(path)")
                #expect(r.header("content-type") == "application/problem+json", "\(method) \(path)")
                #expect(r.text.contains("no-route"), "\(method) \(path)")
                #expect(!r.text.contains("logged"), "\(method) \(path)")
                #expect(r.header("www-authenticate") == nil, "the probe listener asks for no token")
            }
            // A login sent here with the right token does nothing.
            let login = try await onThread { [port = stack.gateway.withLock { $0!.probeServer!.port }] in
                try Stack.request(
                    port: port, "POST", "/auth/login", headers: [bearer, "Content-Type: application/json"],
                    body: #"{"grant_type":"password","username":"alice","password":"wonderland"}"#)
            }
            #expect(login.status == 404)
            #expect(Stack.json(try await stack.admin("GET", "/auth/session"))["state"] as? String == "logged_out")
        }
    }

    @Test func noRequestBodyIsReadOrBuffered() async throws {
        try await withProbes { stack in
            let port = stack.gateway.withLock { $0!.probeServer!.port }
            // 100 MB announced, none sent: the answer comes after the head, and the
            // connection closes instead of reading the body.
            let r = try await onThread {
                let c = try RawClient(port: port)
                try c.send("POST /anything HTTP/1.1\r\nHost: a\r\nContent-Length: 104857600\r\n\r\n")
                let response = try c.readResponse()
                return (response, c.isClosedByPeer())
            }
            #expect(r.0.status == 404)
            #expect(r.0.header("connection") == "close")
            #expect(r.1)
        }
    }

    @Test func withoutProbesConfiguredThereIsNoProbeListener() async throws {
        try await Stack.run { stack in
            let service = try await stack.startGateway()
            #expect(service.probeServer == nil)
        }
    }
}
