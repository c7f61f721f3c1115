import AuthGateTesting
import Foundation
import Gateway
import TestSupport
import Testing

/// `X-Forwarded-For` is a claim: kept only from proxies the configuration trusts.
@Suite struct ForwardedForTests {
    func forwardedFor(trusting: [String]?) async throws -> String? {
        let upstream = try await Upstream()
        defer { upstream.stop() }
        var result: String?
        try await Stack.run { stack in
            try await stack.startGateway {
                $0.routes = [.init(prefix: "/", upstream: upstream.url, requiresAuthentication: false)]
                $0.trustForwardedFrom = trusting
            }
            let r = try await stack.proxy("GET", "/inspect", headers: ["X-Forwarded-For: 6.6.6.6"])
            result = r.text.split(separator: "\n").first { $0.hasPrefix("X-Forwarded-For: ") }.map {
                String($0.dropFirst("X-Forwarded-For: ".count))
            }
        }
        return result
    }

    @Test func aClientsOwnForwardedForIsReplacedUnlessItIsATrustedProxy() async throws {
        #expect(try await forwardedFor(trusting: nil) == "127.0.0.1")
        #expect(try await forwardedFor(trusting: ["10.0.0.7"]) == "127.0.0.1")
        #expect(try await forwardedFor(trusting: ["127.0.0.1"]) == "6.6.6.6, 127.0.0.1")
    }

    @Test func trustedProxiesMustBeAddresses() {
        #expect(
            GatewayConfigurationTests.error { $0["trustForwardedFrom"] = ["proxy.example"] }
                == "trustForwardedFrom[0] must be an IPv4 or IPv6 address")
        #expect(GatewayConfigurationTests.error { $0["trustForwardedFrom"] = ["10.0.0.1", "fd00::1"] } == nil)
    }
}
