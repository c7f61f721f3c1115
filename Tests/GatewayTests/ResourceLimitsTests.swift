import AuthGateTesting
import Foundation
import Gateway
import TestSupport
import Testing

/// The gateway's memory is bounded by its configuration: connections on the proxy listener,
/// and request bodies held in memory across both listeners.
@Suite struct ResourceLimitsTests {
    @Test func limitsOutOfRangeAreRefusedWithTheirName() {
        #expect(GatewayConfigurationTests.error { $0["maxConnections"] = 0 } == "maxConnections must be 1…1000000")
        #expect(GatewayConfigurationTests.error { $0["maxConnections"] = 256 } == nil)
        #expect(
            GatewayConfigurationTests.error { $0["maxBufferedRequestBytes"] = 1000 }?.hasPrefix("maxBufferedRequestBytes must be")
                == true)
        #expect(GatewayConfigurationTests.error { $0["maxBufferedRequestBytes"] = 8 << 20 } == nil)
        #expect(
            GatewayConfigurationTests.error {
                $0["maxBufferedRequestBytes"] = 2 << 20
                $0["replayLimitBytes"] = 4 << 20
            } == "replayLimitBytes must not exceed maxBufferedRequestBytes (2097152)")
        #expect(
            GatewayConfigurationTests.error { $0["maxBufferedRequestBytes"] = 1 << 20 } == nil, "the default replay limit fits")
    }

    @Test func bodiesPastTheBudgetGet503WhileOthersAreServed() async throws {
        try await Stack.run { stack in
            try await stack.startGateway { $0.maxBufferedRequestBytes = 1 << 20 }
            #expect(try await stack.loginAlice().status == 200)
            let port = stack.proxyPort
            // A holds 900,000 bytes of an authenticated request's body (kept for a replay).
            let a = try RawClient(port: port)
            try a.send("POST /data HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n")
            try a.send([UInt8](repeating: 0x61, count: 900_000))
            let held = try await eventually {
                try await stack.admin("GET", "/metrics").text.contains("authgate_buffered_request_bytes 900000")
            }
            #expect(held)
            let b = try await onThread { () -> TestResponse in
                let b = try RawClient(port: port)
                try b.send("POST /data HTTP/1.1\r\nHost: x\r\nContent-Length: 500000\r\n\r\n")
                try? b.send([UInt8](repeating: 0x62, count: 500_000))
                return try b.readResponse()
            }
            #expect(b.status == 503)
            #expect(b.text.contains("too many request bodies"))
            // A small request still fits, and A is served in full.
            #expect(try await stack.proxy("POST", "/data", body: "small").status == 200)
            try a.send([UInt8](repeating: 0x61, count: 100_000))
            let answer = try a.readResponse()
            #expect(answer.status == 200)
            #expect(Stack.json(answer)["body_bytes"] as? Int == 1_000_000)
        }
    }

    @Test func connectionsPastTheLimitGet503() async throws {
        try await Stack.run { stack in
            try await stack.startGateway { $0.maxConnections = 2 }
            let port = stack.proxyPort
            let held = try (0..<2).map { _ in try RawClient(port: port) }
            // Both held connections are counted once they have been served a request.
            for c in held {
                try c.send("GET /public/x HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(try c.readResponse().status == 200)
            }
            let third = try await onThread { () -> TestResponse in
                let c = try RawClient(port: port)
                try c.send("GET /public/x HTTP/1.1\r\nHost: x\r\n\r\n")
                return try c.readResponse()
            }
            #expect(third.status == 503)
            #expect(third.text.contains("connection limit"))
        }
    }
}
