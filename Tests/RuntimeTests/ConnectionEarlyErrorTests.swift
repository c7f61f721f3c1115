import Foundation
import HTTPWire
import Runtime
import TestSupport
import Testing

/// An error answered while a read still holds more of the request: nothing after the error
/// is parsed, so the refused request never reaches the responder.
@Suite(.serialized) struct ConnectionEarlyErrorTests {
    @Test func aChunkedBodyRefusedWith413MidReadNeverReachesTheResponder() async throws {
        var c = HTTPServerConfiguration()
        c.limits.maxBufferedBodyBytes = 1000
        try await TestServer.with(c) { server in
            let client = try RawClient(port: server.port)
            let chunk = String(repeating: "x", count: 600)
            // One write: the second chunk passes the limit, and the body's end follows.
            try client.send(
                "POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n258\r\n\(chunk)\r\n258\r\n\(chunk)\r\n0\r\n\r\n"
            )
            let raw = client.readToEnd()
            let (r, _) = try #require(TestResponse.parse(raw))
            #expect(r.status == 413)
            #expect(r.header("connection") == "close")
            #expect(server.arrivals.count("/echo") == 0, "the refused body was handed to the responder")
        }
    }

    @Test func aBodyRefusedWith413ByItsLengthNeverReachesTheResponder() async throws {
        var c = HTTPServerConfiguration()
        c.limits.maxBufferedBodyBytes = 10
        try await TestServer.with(c) { server in
            let client = try RawClient(port: server.port)
            try client.send("POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 20\r\n\r\n01234567890123456789")
            let raw = client.readToEnd()
            let (r, _) = try #require(TestResponse.parse(raw))
            #expect(r.status == 413)
            #expect(server.arrivals.count("/echo") == 0, "the refused body was handed to the responder")
        }
    }

    @Test func aBodyRefusedWith503ByTheBudgetNeverReachesTheResponder() async throws {
        let budget = BufferBudget(limit: 100)
        var c = HTTPServerConfiguration()
        c.bufferBudget = budget
        try await TestServer.with(c) { server in
            let client = try RawClient(port: server.port)
            let chunk = String(repeating: "x", count: 80)
            try client.send(
                "POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n50\r\n\(chunk)\r\n50\r\n\(chunk)\r\n0\r\n\r\n"
            )
            let raw = client.readToEnd()
            let (r, _) = try #require(TestResponse.parse(raw))
            #expect(r.status == 503)
            #expect(server.arrivals.count("/echo") == 0, "the refused body was handed to the responder")
            #expect(await eventually { budget.inUse == 0 })
        }
    }
}
