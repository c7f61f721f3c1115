import Foundation
import TestSupport
import Testing

/// A chunked body whose chunk data is not followed by CRLF is answered 400, not left hanging.
@Suite(.serialized) struct MalformedChunkProxyTests {
    @Test func malformedChunkFramingMidStreamedBodyIsAnswered400OnTheProxy() async throws {
        try await withProxy { proxy, upstream in
            for (path, upstreamPath, rest) in [
                ("/sink", "/sink", "XX"), ("/api/sink", "/v1/sink", "XY0\r\n\r\n"), ("/sink", "/sink", "X"),
            ] {
                let responder = upstream.responder
                let before = responder.arrivals(upstreamPath)
                let port = proxy.port
                // The conversation runs on its own thread: the rest of the body must follow
                // its head well within the proxy's body timeout, whatever holds the pool.
                let (arrived, raw) = try await onThread { () -> (Bool, [UInt8]) in
                    let c = try RawClient(port: port)
                    try c.send("POST \(path) HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc")
                    // Mid-stream: the upstream has the head before the rest is sent.
                    let arrived = eventuallyOnThisThread { responder.arrivals(upstreamPath) == before + 1 }
                    try c.send(rest)
                    return (arrived, c.readToEnd())
                }
                #expect(arrived, "\(path) reached the upstream")
                guard let (r, _) = TestResponse.parse(raw) else {
                    Issue.record("\(path): no response: \(String(decoding: raw.prefix(200), as: UTF8.self))")
                    continue
                }
                #expect(r.status == 400, "\(path)")
                #expect(r.header("content-type") == "application/problem+json", "\(path)")
            }
        }
    }

    @Test func malformedChunkFramingIsAnswered400OnAuthenticatedAndPublicRoutes() async throws {
        try await Stack.run { stack in
            try await stack.startGateway()
            #expect(try await stack.loginAlice().status == 200)
            for path in ["/api/x", "/public/x"] {
                let port = stack.proxyPort
                let raw = try await onThread { () -> [UInt8] in
                    let c = try RawClient(port: port)
                    try c.send("POST \(path) HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcXX")
                    return c.readToEnd()
                }
                guard let (r, _) = TestResponse.parse(raw) else {
                    Issue.record("\(path): no response")
                    continue
                }
                #expect(r.status == 400, "\(path)")
                #expect(r.header("content-type") == "application/problem+json", "\(path)")
                #expect(r.header("connection") == "close", "\(path)")
            }
        }
    }
}
