import Foundation
import Gateway
import HTTPWire
import Runtime
import TestSupport
import Testing

/// Which upgrades pass (``UpgradeRule``, pure) and what a client sees when one cannot, or is
/// not switched, over real sockets.
struct UpgradeTests {
    static func head(_ upgrade: String?) -> RequestHead {
        RequestHead(method: "GET", target: "/ws", upgrade: upgrade)
    }

    @Test func anUpgradeToAnHTTPUpstreamOnTheLoopsClientPasses() throws {
        let verdict = UpgradeRule.verdict(
            for: Self.head("websocket"), upstream: try #require(UpstreamOrigin("http://127.0.0.1:9000")),
            client: UpstreamClientConfiguration())
        #expect(verdict == .pass(protocol: "websocket"))
    }

    @Test func aRequestThatIsNoUpgradeIsAnOrdinaryExchangeWhateverTheUpstream() throws {
        for url in ["http://127.0.0.1:9000", "https://api.example.com"] {
            let verdict = UpgradeRule.verdict(
                for: Self.head(nil), upstream: try #require(UpstreamOrigin(url)), client: UpstreamClientConfiguration())
            #expect(verdict == .none)
        }
    }

    @Test(arguments: [
        ("https://api.example.com", UpstreamClientConfiguration()),
        ("http://127.0.0.1:9000", UpstreamClientConfiguration(loopHTTP1: false)),
        ("http://127.0.0.1:9000", UpstreamClientConfiguration(unixSocketPath: "/run/api.sock")),
    ])
    func anUpgradeLibcurlWouldCarryIsRefusedWith501(url: String, client: UpstreamClientConfiguration) throws {
        let verdict = UpgradeRule.verdict(
            for: Self.head("websocket"), upstream: try #require(UpstreamOrigin(url)), client: client)
        guard case .refuse(let problem) = verdict else {
            Issue.record("not refused: \(verdict)")
            return
        }
        #expect(problem.status == 501)
        #expect(problem.type.hasSuffix("/upgrade-needs-http-upstream"))
    }

    @Test func anUpgradeOnARouteToAnHTTPSUpstreamIsAnswered501AndTheProcessServesOn() async throws {
        try await Stack.run { stack in
            try await stack.startGateway { c in
                c.routes.insert(.init(prefix: "/tls", upstream: "https://127.0.0.1:1", requiresAuthentication: false), at: 0)
            }
            let r = try await stack.proxy("GET", "/tls/ws", headers: ["Connection: Upgrade", "Upgrade: websocket"])
            #expect(r.status == 501)
            #expect(r.header("Content-Type") == Problem.contentType)
            #expect(r.text.contains("upgrade-needs-http-upstream"))
            // Public route to a live upstream: served as before.
            #expect(try await stack.proxy("GET", "/public/hello").status != 501)
        }
    }

    @Test func anUpgradeTheUpstreamDoesNotSwitchIsAnOrdinaryResponseAndTheConnectionGoesOn() async throws {
        try await Stack.run { stack in
            try await stack.startGateway()
            #expect(try await stack.loginAlice().status == 200)
            let port = stack.proxyPort
            let (first, second) = try await onThread {
                let c = try RawClient(port: port, timeoutSeconds: 180)
                try c.send("GET /me HTTP/1.1\r\nHost: t\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
                let first = try c.readResponse()
                try c.send("GET /me HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
                return (first, try c.readResponse())
            }
            // The fake API knows no WebSocket: it answers as to any GET, with the token attached.
            #expect(first.status == 200, "\(first.text)")
            #expect(first.header("Connection")?.lowercased() != "close")
            #expect(second.status == 200)
        }
    }
}
