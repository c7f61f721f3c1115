import Foundation
import HTTPWire
import Runtime
import TestSupport
import Testing

@Suite(.serialized) struct ConnectionBehaviourTests {
    @Test func keepAliveServesManyRequestsOnOneConnection() async throws {
        try await TestServer.with { server in
            let client = try RawClient(port: server.port)
            for i in 0..<50 {
                try client.send("POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: \(String(i).count)\r\n\r\n\(i)")
                let r = try client.readResponse()
                #expect(r.status == 200)
                #expect(r.text == String(i))
                #expect(r.header("connection") == nil)
            }
        }
    }

    @Test func pipelinedRequestsAreAnsweredInOrder() async throws {
        try await TestServer.with { server in
            let client = try RawClient(port: server.port)
            // /later answers asynchronously after 50 ms; the fast ones behind it must wait.
            var batch = "GET /later HTTP/1.1\r\nHost: a\r\n\r\n"
            for i in 0..<20 { batch += "POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: \(String(i).count)\r\n\r\n\(i)" }
            batch += "GET /later HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
            try client.send(batch)
            #expect(try client.readResponse().text == "later")
            for i in 0..<20 { #expect(try client.readResponse().text == String(i)) }
            let last = try client.readResponse()
            #expect(last.text == "later")
            #expect(last.header("connection") == "close")
            #expect(client.isClosedByPeer())
        }
    }

    @Test func http10ClosesUnlessKeepAliveIsAsked() async throws {
        try await TestServer.with { server in
            let a = try RawClient(port: server.port)
            try a.send("GET / HTTP/1.0\r\n\r\n")
            #expect(try a.readResponse().header("connection") == "close")
            #expect(a.isClosedByPeer())
            // A kept connection is announced (RFC 9112 Appendix C.2.2): an HTTP/1.0 client
            // otherwise waits for the close to know the response ended. Whole and streamed
            // responses alike; a streamed one without a length is delimited by the close.
            let b = try RawClient(port: server.port)
            try b.send(
                "GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\nGET /big HTTP/1.0\r\nConnection: keep-alive\r\nX-Size: 10\r\n\r\n"
                    + "GET /no-content HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            for expected in [200, 200, 204] {
                let r = try b.readResponse()
                #expect(r.status == expected)
                #expect(r.header("connection") == "keep-alive", "\(expected)")
            }
            try b.send("POST /stream-echo HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nhi")
            let raw = String(decoding: b.readToEnd(), as: UTF8.self)
            #expect(raw.contains("Connection: close\r\n") && raw.hasSuffix("\r\n\r\nhi"), "\(raw)")
        }
    }

    @Test func chunkedRequestBodyIsDecoded() async throws {
        try await TestServer.with { server in
            let client = try RawClient(port: server.port)
            try client.send(
                "POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nTrailer: x\r\n\r\n"
            )
            let r = try client.readResponse()
            #expect(r.text == "hello world")
        }
    }

    @Test func streamedBodyIsEchoedChunked() async throws {
        try await TestServer.with { server in
            let client = try RawClient(port: server.port)
            let payload = String(repeating: "0123456789", count: 50_000)
            try client.send("POST /stream-echo HTTP/1.1\r\nHost: a\r\nContent-Length: \(payload.utf8.count)\r\n\r\n")
            try client.send(payload)
            let r = try client.readResponse()
            #expect(r.header("transfer-encoding") == "chunked")
            #expect(r.body.count == payload.utf8.count)
            #expect(r.text == payload)
        }
    }

    @Test func expectContinueGets100BeforeTheBody() async throws {
        try await TestServer.with { server in
            let client = try RawClient(port: server.port)
            try client.send("POST /echo HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n")
            let interim = try client.readResponse()
            #expect(interim.status == 100)
            try client.send("abc")
            let r = try client.readResponse()
            #expect(r.status == 200)
            #expect(r.text == "abc")
        }
    }

    @Test func expectContinueOverTheLimitGets413WithoutReadingTheBody() async throws {
        try await TestServer.with { server in
            let client = try RawClient(port: server.port)
            try client.send("POST /echo HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 99999999\r\n\r\n")
            let r = try client.readResponse()
            #expect(r.status == 413)
        }
    }

    @Test func headGetsHeadersWithoutBody() async throws {
        try await TestServer.with { server in
            let client = try RawClient(port: server.port)
            try client.send("HEAD / HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n")
            let h = try client.readResponse(headRequest: true)
            #expect(h.status == 200)
            #expect(h.header("content-length") == "2")
            let g = try client.readResponse()
            #expect(g.text == "ok", "the HEAD response carried no body bytes")
        }
    }

    @Test func chunkedBodyOverTheLimitGets413() async throws {
        var c = HTTPServerConfiguration()
        c.limits.maxBufferedBodyBytes = 1000
        try await TestServer.with(c) { server in
            let client = try RawClient(port: server.port)
            try client.send("POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n")
            let chunk = String(repeating: "x", count: 600)
            try client.send("258\r\n\(chunk)\r\n258\r\n\(chunk)\r\n0\r\n\r\n")
            let r = try client.readResponse()
            #expect(r.status == 413)
            #expect(r.header("connection") == "close")
        }
    }

    @Test func slowHeadGets408() async throws {
        var c = HTTPServerConfiguration()
        c.headTimeout = .milliseconds(300)
        try await TestServer.with(c) { server in
            let client = try RawClient(port: server.port)
            try client.send("GET / HTTP/1.1\r\nHo")
            let r = try client.readResponse()
            #expect(r.status == 408)
            #expect(r.header("content-type") == "application/problem+json")
            #expect(client.isClosedByPeer())
        }
    }

    @Test func stalledBodyGets408() async throws {
        var c = HTTPServerConfiguration()
        c.bodyIdleTimeout = .milliseconds(300)
        try await TestServer.with(c) { server in
            let client = try RawClient(port: server.port)
            try client.send("POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nabc")
            let r = try client.readResponse()
            #expect(r.status == 408)
        }
    }

    @Test func idleKeepAliveConnectionIsClosed() async throws {
        var c = HTTPServerConfiguration()
        c.keepAliveTimeout = .milliseconds(200)
        try await TestServer.with(c) { server in
            // The read waits far longer than the idle timeout: an end of stream within it is
            // the server's doing, however slowly a loaded machine runs the timer.
            let client = try RawClient(port: server.port, timeoutSeconds: 60)
            try client.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
            #expect(try client.readResponse().status == 200)
            #expect(client.isClosedByPeer())
        }
    }

    @Test func connectionsPastTheLimitGet503() async throws {
        var c = HTTPServerConfiguration()
        c.maxConnections = 3
        try await TestServer.with(c) { server in
            var held: [RawClient] = []
            for _ in 0..<3 {
                let k = try RawClient(port: server.port)
                try k.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
                #expect(try k.readResponse().status == 200)
                held.append(k)
            }
            let extra = try RawClient(port: server.port)
            let r = try extra.readResponse()
            #expect(r.status == 503)
            #expect(extra.isClosedByPeer())
            held.removeAll()
            // Once the others close, new connections are served again (polled: the server
            // learns of the closes asynchronously).
            var statuses: [Int] = []
            let deadline = ContinuousClock.now + .seconds(20)
            while statuses.last != 200 && ContinuousClock.now < deadline {
                if !statuses.isEmpty { try await Task.sleep(for: .milliseconds(20)) }
                let k = try RawClient(port: server.port)
                try k.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
                statuses.append((try? k.readResponse().status) ?? 0)
            }
            #expect(statuses.last == 200, "\(statuses)")
            #expect(statuses.allSatisfy { $0 == 200 || $0 == 503 }, "refused with 503 until then: \(statuses)")
        }
    }

    @Test func slowConsumerPausesReadingAndStillGetsEveryByte() async throws {
        var c = HTTPServerConfiguration()
        c.bodyHighWater = 16 * 1024
        try await TestServer.with(c) { server in
            let client = try RawClient(port: server.port, timeoutSeconds: 20)
            let size = 2 * 1024 * 1024
            try client.send("POST /stream-stall HTTP/1.1\r\nHost: a\r\nContent-Length: \(size)\r\n\r\n")
            try client.send([UInt8](repeating: 0x62, count: size))
            let r = try client.readResponse()
            #expect(r.text == String(size))
        }
    }

    @Test func largeStreamedResponseArrivesWhole() async throws {
        try await TestServer.with { server in
            let client = try RawClient(port: server.port, timeoutSeconds: 20)
            try client.send("GET /big HTTP/1.1\r\nHost: a\r\nX-Size: 8388608\r\n\r\n")
            let r = try client.readResponse()
            #expect(r.body.count == 8_388_608)
        }
    }

    @Test func oneThousandConcurrentConnectionsAreServed() async throws {
        try await TestServer.with { server in
            let port = server.port
            let ok = try await withThrowingTaskGroup(of: Int.self) { group in
                for i in 0..<1000 {
                    group.addTask {
                        let client = try RawClient(port: port, timeoutSeconds: 20)
                        try client.send("POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: \(String(i).count)\r\n\r\n\(i)")
                        return try client.readResponse().text == String(i) ? 1 : 0
                    }
                }
                return try await group.reduce(0, +)
            }
            #expect(ok == 1000)
        }
    }
}

@Suite(.serialized) struct BackpressureTimeoutTests {
    @Test func aConsumerSlowerThanTheBodyIdleTimeoutDoesNotGet408() async throws {
        var c = HTTPServerConfiguration()
        c.bodyHighWater = 8 * 1024
        // A second, so that a stall of this test's own sending thread does not give a 408.
        c.bodyIdleTimeout = .seconds(1)
        try await TestServer.with(c) { server in
            // /stream-stall stops consuming for 2 s, longer than the body idle timeout,
            // and the server stops reading meanwhile. That pause is ours, not the client's.
            let client = try RawClient(port: server.port, timeoutSeconds: 20)
            let size = 4 * 1024 * 1024
            try client.send("POST /stream-stall HTTP/1.1\r\nHost: a\r\nContent-Length: \(size)\r\n\r\n")
            try client.send([UInt8](repeating: 0x62, count: size))
            let r = try client.readResponse()
            #expect(r.status == 200)
            #expect(r.text == String(size))
        }
    }
}
