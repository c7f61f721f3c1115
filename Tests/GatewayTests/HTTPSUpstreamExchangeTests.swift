import AuthGateTesting
import Foundation
import Gateway
import TestSupport
import Testing

/// Held answers over an `https://` upstream, whose exchanges go through libcurl rather than
/// the loop's own HTTP/1.1 client: a rejected token refreshed and replayed, and a DPoP nonce
/// followed with the same token, each with the held answer's body discarded. The upstream is
/// a real nginx terminating TLS (the test CA's certificate) in front of the stack's API.
@Suite(.serialized) struct HTTPSUpstreamExchangeTests {
    /// Runs `body` with the stack's API behind nginx on TLS; the gateway's authenticated route
    /// goes to it over `https://`, trusting the test CA. `configure` adds to the gateway's
    /// configuration.
    static func withTLSFront(
        _ stack: Stack, configure: @escaping (inout GatewayConfiguration) -> Void = { _ in },
        _ body: () async throws -> Void
    ) async throws {
        let pki = try TestCertificates()
        defer { pki.remove() }
        let nginx = try Nginx(
            serverBlock: """
                location / {
                    proxy_pass http://127.0.0.1:\(stack.apiServer.port);
                    proxy_http_version 1.1;
                    proxy_set_header Connection "";
                    proxy_set_header Host $http_host;
                    proxy_set_header X-Forwarded-Proto https;
                }
                """,
            tls: (pki.serverCert, pki.serverKey))
        defer { nginx.stop() }
        try await stack.startGateway { c in
            c.routes = [.init(prefix: "/", upstream: "https://127.0.0.1:\(nginx.port)", requiresAuthentication: true)]
            c.caFile = pki.caCert
            configure(&c)
        }
        try await body()
    }

    @Test func aRejectedTokenIsRefreshedAndReplayedOverTLS() async throws {
        try await Stack.run { stack in
            try await Self.withTLSFront(stack) {
                #expect(try await stack.loginAlice().status == 200)
                #expect(try await stack.proxy("GET", "/orders").status == 200)
                await stack.authorization.revokeAccessTokens()
                let r = try await stack.proxy("POST", "/orders", body: #"{"item":1}"#)
                #expect(r.status == 200, "401 → refresh → replay, over TLS: \(r.status) \(r.text)")
                #expect(r.header("AuthGate-Replay") == nil)
                #expect(await stack.authorization.statistics.refreshes == 1)
                #expect(stack.api.statistics.rejected == 1, "the API saw the revoked token once, then the new one")
            }
        }
    }

    @Test func theAPIsDPoPNonceIsFollowedOverTLSWithTheSameToken() async throws {
        let key = DPoPProxyTests.keyFile()
        defer { try? FileManager.default.removeItem(atPath: key) }
        try await Stack.run { stack in
            stack.api.requireDPoPNonce("rs-nonce-tls")
            try await Self.withTLSFront(stack, configure: { $0.authorization.dpop = .init(keyFile: key) }) {
                #expect(try await stack.loginAlice().status == 200)
                let r = try await stack.proxy("POST", "/orders", body: "{}")
                #expect(r.status == 200, "\(r.status) \(r.text)")
                #expect(stack.api.statistics.dpopRefusals == [DPoPVerifier.Refusal.nonceNeeded.rawValue])
                #expect(stack.api.statistics.dpopAccepted == 1, "the proof's htu is the https URL the API is reached at")
                #expect(await stack.authorization.statistics.refreshes == 0, "a nonce is not a rejected token")
                // Kept for the origin: the next request carries it at once.
                #expect(try await stack.proxy("GET", "/orders").status == 200)
                #expect(stack.api.statistics.dpopRefusals.count == 1)
            }
        }
    }
}
