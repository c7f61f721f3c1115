import AuthCore
import Foundation
import Gateway
import Locking
import Logging
import ServiceLifecycle
import TestSupport
import Testing

/// `authgate serve` under swift-service-lifecycle: graceful shutdown drains the exchange in
/// flight, then the listeners close and `run()` returns.
@Suite(.serialized) struct GatewayRunnerTests {
    @Test func gracefulShutdownDrainsTheExchangeInFlightThenCloses() async throws {
        let upstream = try await Upstream()
        defer { upstream.stop() }
        let stack = try await Stack()
        var configuration = stack.configuration
        configuration.routes = [.init(prefix: "/", upstream: upstream.url, requiresAuthentication: false)]
        let key = try TokenStoreKey(rawBytes: [UInt8](repeating: 1, count: 32))
        let gateway = Locked<GatewayService?>(nil)
        let runner = GatewayRunner(
            configuration: configuration,
            secrets: .init(clientSecret: "s3cret", adminToken: Stack.adminToken, storeKey: key),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), grace: .seconds(120),
            started: { service in gateway.withLock { $0 = service } })
        let group = ServiceGroup(
            configuration: .init(
                services: [.init(service: runner)],
                logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })))
        let running = Task { try await group.run() }
        #expect(await eventually { gateway.withLock { $0?.proxyServer.port ?? 0 } != 0 }, "the gateway started")
        let proxyPort = gateway.withLock { $0?.proxyServer.port ?? 0 }
        // An exchange the upstream holds until the test lets it go; the shutdown starts once
        // the upstream has it.
        let held = Task { try await onThread { try Stack.request(port: proxyPort, "GET", "/held", headers: [], body: "") } }
        #expect(await eventually { upstream.responder.arrivals("/held") == 1 }, "the exchange reached the upstream")
        await group.triggerGracefulShutdown()
        // The listener closes first, while the exchange is still in flight...
        let closed = await eventually {
            (try? await onThread { _ = try RawClient(port: proxyPort, timeoutSeconds: 1) }) == nil
        }
        #expect(closed, "the listener closed")
        // ...which then finishes, and only then does `run()` return.
        upstream.responder.releaseHeld()
        try await running.value
        let answer = try await held.value
        #expect(answer.status == 200, "the exchange in flight finished")
        #expect(answer.text == "held")
        // No connect to `proxyPort` here: once the listener has closed (checked above), the
        // kernel may give the port to another test's listener running in parallel.
        await stack.stop()
    }

    struct Refused: Error {}

    /// `withGateway` stops the gateway when its body returns, and at once when it throws,
    /// rethrowing: no listener is left open either way.
    @Test func withGatewayStopsTheGatewayWhenItsBodyReturnsOrThrows() async throws {
        let upstream = try await Upstream()
        defer { upstream.stop() }
        let stack = try await Stack()
        var configuration = stack.configuration
        configuration.routes = [.init(prefix: "/", upstream: upstream.url, requiresAuthentication: false)]
        let secrets = GatewayService.Secrets(
            clientSecret: "s3cret", adminToken: Stack.adminToken,
            storeKey: try TokenStoreKey(rawBytes: [UInt8](repeating: 1, count: 32)))
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let ports = try await GatewayService.withGateway(configuration: configuration, secrets: secrets, logger: logger) {
            gateway in
            let port = gateway.proxyServer.port
            let answer = try await onThread { try Stack.request(port: port, "GET", "/x", headers: [], body: "") }
            #expect(answer.status == 200)
            return [port, gateway.adminServer.port]
        }
        for port in ports {
            #expect(throws: (any Error).self, "port \(port) still open") { try RawClient(port: port) }
        }
        let admin = Locked(0)
        await #expect(throws: Refused.self) {
            try await GatewayService.withGateway(configuration: configuration, secrets: secrets, logger: logger) { gateway in
                admin.withLock { $0 = gateway.adminServer.port }
                throw Refused()
            }
        }
        #expect(throws: (any Error).self) { try RawClient(port: admin.withLock { $0 }) }
        await stack.stop()
    }
}
