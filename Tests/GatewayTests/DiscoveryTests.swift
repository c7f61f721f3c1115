import AuthCore
import AuthGateTesting
import Foundation
import Gateway
import Locking
import Logging
import TestSupport
import Testing

/// `authorization.issuer`: the endpoints come from the provider's discovery document.
@Suite struct DiscoveryTests {
    @Test func anIssuerAloneIsEnoughToLogInRefreshAndRevoke() async throws {
        try await Stack.run { stack in
            let issuer = "http://127.0.0.1:\(stack.authServer.port)"
            try await stack.startGateway { $0.authorization = .init(tokenEndpoint: nil, clientID: "authgate", issuer: issuer) }
            #expect(try await stack.loginAlice().status == 200)
            #expect(try await stack.proxy("GET", "/api/orders").status == 200)
            #expect(try await stack.admin("POST", "/auth/refresh").status == 200)
            #expect(await stack.authorization.statistics.refreshes == 1)
            #expect(try await stack.admin("POST", "/auth/logout").status == 200)
            // The revocation endpoint was discovered too: the logout revokes in the background.
            #expect(await eventually { await stack.authorization.statistics.revocations == 1 })
        }
    }

    @Test func aDocumentNamingAnotherIssuerStopsTheStartNamingTheField() async throws {
        try await Stack.run { stack in
            // The fake names itself by the Host it was asked with, "127.0.0.1:port"; this
            // issuer differs from it only by a trailing path.
            let issuer = "http://127.0.0.1:\(stack.authServer.port)/tenant"
            await #expect {
                try await stack.startGateway { $0.authorization = .init(tokenEndpoint: nil, issuer: issuer) }
            } throws: { error in
                let failure = error as? GatewayError
                return failure?.code == .issuerUnusable && failure?.description.hasPrefix("authorization.issuer:") == true
            }
        }
    }

    /// A `tls_client_auth` client of `issuer` that shows a certificate (the files are never read here).
    static func certified(issuer: String) -> GatewayConfiguration.Authorization {
        var certified = GatewayConfiguration.Authorization(
            tokenEndpoint: nil, clientID: "gate", clientAuthentication: "tls_client_auth", issuer: issuer)
        certified.clientCertificateFile = "/c.pem"
        certified.clientCertificateKeyFile = "/c.key"
        return certified
    }

    @Test func aClientThatShowsACertificateUsesTheMutualTLSAliases() async throws {
        let issuer = "https://id.example.test"
        let document = DocumentTransport(
            #"{"issuer":"\#(issuer)","token_endpoint":"\#(issuer)/token","revocation_endpoint":"\#(issuer)/revoke","mtls_endpoint_aliases":{"token_endpoint":"https://mtls.example.test/token"}}"#
        )
        let discovery = IssuerDiscovery(
            transport: document, logger: .init(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        let certified = Self.certified(issuer: issuer)
        let withCertificate = try await discovery.resolve(certified, field: "authorization")
        #expect(withCertificate.tokenEndpoint == "https://mtls.example.test/token")
        #expect(withCertificate.revocationEndpoint == issuer + "/revoke", "no alias: the plain endpoint")
        let plain = try await discovery.resolve(
            .init(tokenEndpoint: nil, clientID: "gate", issuer: issuer), field: "authorization")
        #expect(plain.tokenEndpoint == issuer + "/token")
        var explicit = certified
        explicit.tokenEndpoint = "https://id.example.test/own"
        #expect(try await discovery.resolve(explicit, field: "authorization").tokenEndpoint == "https://id.example.test/own")
    }

    /// A device endpoint the document names but the client cannot use (plain HTTP where a
    /// certificate must be shown) is left out with a notice, not a reason to refuse the
    /// start: the operator asked for no device login. Asked for (autoLogin), it refuses.
    @Test func aDiscoveredDeviceEndpointTheClientCannotUseIsLeftOut() async throws {
        let issuer = "http://127.0.0.1:1"
        let document = DocumentTransport(
            #"{"issuer":"\#(issuer)","token_endpoint":"\#(issuer)/token","device_authorization_endpoint":"\#(issuer)/device","mtls_endpoint_aliases":{"token_endpoint":"https://127.0.0.1:2/token"}}"#
        )
        let discovery = IssuerDiscovery(
            transport: document, logger: .init(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        let certified = Self.certified(issuer: issuer)
        let resolved = try await discovery.resolve(certified, field: "authorization")
        #expect(resolved.tokenEndpoint == "https://127.0.0.1:2/token")
        #expect(resolved.deviceAuthorizationEndpoint == nil)
        #expect(
            try await discovery.resolve(.init(tokenEndpoint: nil, clientID: "gate", issuer: issuer), field: "authorization")
                .deviceAuthorizationEndpoint == issuer + "/device", "usable without a certificate")
        var device = certified
        device.autoLogin = .init(grant: "device")
        await #expect {
            try await discovery.resolve(device, field: "authorization")
        } throws: { error in
            (error as? GatewayError)?.code == .issuerUnusable
        }
    }

    @Test func anUnreachableProviderIsRetriedThenReportedAsUnavailable() async throws {
        let transport = CountingRefusals()
        let discovery = IssuerDiscovery(
            transport: transport, logger: .init(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }),
            // Room for a second attempt even when the first comes back late on a loaded run.
            patience: .seconds(3))
        await #expect {
            _ = try await discovery.resolve(.init(tokenEndpoint: nil, issuer: "http://127.0.0.1:9"), field: "authorization")
        } throws: { error in
            let failure = error as? GatewayError
            return failure?.code == .issuerUnreachable && failure?.description.contains("could not be fetched") == true
        }
        #expect(transport.count >= 2, "asked again before giving up")
    }
}

/// A transport whose every request fails to connect, counting them.
final class CountingRefusals: HTTPTransport {
    private let calls = Locked(0)
    var count: Int { calls.withLock { $0 } }
    func send(_ request: HTTPRequestValue) async throws -> HTTPResponseValue {
        calls.withLock { $0 += 1 }
        throw AuthError.transport(.connectFailed, "refused")
    }
}

/// A transport that answers every request with one discovery document.
struct DocumentTransport: HTTPTransport {
    let body: String
    init(_ body: String) { self.body = body }
    func send(_ request: HTTPRequestValue) async throws -> HTTPResponseValue {
        HTTPResponseValue(status: 200, headers: [("Content-Type", "application/json")], body: Array(body.utf8))
    }
}
