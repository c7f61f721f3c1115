import AuthCore
import Foundation
import Gateway
import Locking
import Logging
import ServiceLifecycle
import Testing
import TestSupport

/// `authgate serve` under swift-service-lifecycle: graceful shutdown drains the exchange in
/// flight, then the listeners close and `run()` returns.
@Suite(.serialized) struct GatewayRunnerTests {
    @Test func gracefulShutdownDrainsTheExchangeInFlightThenCloses() async throws {
        let upstream = try Upstream()
        defer { upstream.stop() }
        let stack = try Stack()
        var configuration = stack.configuration
        configuration.routes = [.init(prefix: "/", upstream: upstream.url, requiresAuthentication: false)]
        let key = try TokenStoreKey(rawBytes: [UInt8](repeating: 1, count: 32))
        let gateway = Locked<GatewayService?>(nil)
        let runner = GatewayRunner(
            configuration: configuration,
            secrets: .init(clientSecret: "s3cret", adminToken: Stack.adminToken, storeKey: key),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), grace: .seconds(5),
            started: { service in gateway.withLock { $0 = service } })
        let group = ServiceGroup(
            configuration: .init(
                services: [.init(service: runner)],
                logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })))
        let running = Task { try await group.run() }
        var port = 0
        for _ in 0..<500 where port == 0 {
            port = gateway.withLock { $0?.proxyServer.port } ?? 0
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(port != 0, "the gateway started")
        let proxyPort = port
        // An exchange that takes a while (the upstream's /slow), then the shutdown.
        let slow = Task { try await onThread { try Stack.request(port: proxyPort, "GET", "/slow", headers: [], body: "") } }
        try await Task.sleep(for: .milliseconds(100))
        await group.triggerGracefulShutdown()
        try await running.value
        let answer = try await slow.value
        #expect(answer.status == 200, "the exchange in flight finished")
        #expect(answer.text == "slow")
        #expect(throws: (any Error).self) { try RawClient(port: proxyPort) }
        await stack.stop()
    }
}
