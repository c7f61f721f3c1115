import Foundation
import Gateway
import Runtime
import TestSupport
import Testing

/// Only a WebSocket upgrade is spliced: any other protocol would open a tunnel past the
/// route's prefix and path checks. Over real sockets, against an upstream that switches to
/// whatever it likes.
@Suite(.serialized) struct UpgradeProtocolTests {
    private static func withSwitchingUpstream(to proto: String, _ body: (Proxy) async throws -> Void) async throws {
        let canned = try CannedServer(
            response: "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: \(proto)\r\n\r\nTUNNEL-BYTES")
        defer { canned.stop() }
        let proxy = try await Proxy(routes: [
            ProxyRoute(prefix: "/", upstream: UpstreamOrigin("http://127.0.0.1:\(canned.port)")!)
        ])
        defer { proxy.stop() }
        try await body(proxy)
    }

    @Test func anH2CUpgradeIsNotPassedAndNoTunnelOpens() async throws {
        try await Self.withSwitchingUpstream(to: "h2c") { proxy in
            let c = try RawClient(port: proxy.port, timeoutSeconds: 3)
            try c.send(
                "GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n"
            )
            let raw = String(decoding: c.readToEnd(), as: UTF8.self)
            #expect(!raw.hasPrefix("HTTP/1.1 101"), "\(raw)")
            #expect(raw.hasPrefix("HTTP/1.1 502"), "the upstream's unasked-for 101 is refused: \(raw)")
            #expect(!raw.contains("TUNNEL-BYTES"))
        }
    }

    @Test func aWebSocketUpgradeTheUpstreamSwitchesToAnotherProtocolIsRefused() async throws {
        try await Self.withSwitchingUpstream(to: "h2c") { proxy in
            let c = try RawClient(port: proxy.port)
            try c.send(
                "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
                    + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
            // The connection stays open after the 502, so the test reads the one response
            // (with the read timeout a loaded run needs) rather than to the end.
            let response = try c.readResponse()
            #expect(response.status == 502, "\(response.status) \(response.text)")
            #expect(!response.text.contains("TUNNEL-BYTES"))
        }
    }

    @Test func aWebSocketUpgradeSwitchedToWebSocketIsSpliced() async throws {
        try await Self.withSwitchingUpstream(to: "WebSocket") { proxy in
            let c = try RawClient(port: proxy.port, timeoutSeconds: 3)
            try c.send(
                "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
                    + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
            let raw = String(decoding: c.readToEnd(), as: UTF8.self)
            #expect(raw.hasPrefix("HTTP/1.1 101"), "\(raw)")
            #expect(raw.hasSuffix("TUNNEL-BYTES"), "\(raw)")
        }
    }
}
