import Locking
import Logging
import ServiceLifecycle
import TestSupport
import Testing

@testable import Gateway

/// `StoreRunner` runs what the gateway hands it inside the one service group, and stops it
/// only after the services listed after it (the gateway) have stopped.
@Suite struct StoreRunnerTests {
    /// A service that records when it starts and when its graceful shutdown reaches it.
    struct Recorder: Service {
        let name: String
        let log: Locked<[String]>

        func run() async throws {
            log.withLock { $0.append("\(name) started") }
            try? await gracefulShutdown()
            log.withLock { $0.append("\(name) stopped") }
        }
    }

    @Test func aHandedOverServiceRunsUntilTheGroupStopsAfterTheLaterServices() async throws {
        let log = Locked<[String]>([])
        let runner = StoreRunner()
        // Handed over before the runner starts: it waits for it.
        runner.run(Recorder(name: "store", log: log))
        let group = ServiceGroup(
            configuration: .init(
                services: [.init(service: runner), .init(service: Recorder(name: "gateway", log: log))],
                logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })))
        let running = Task { try await group.run() }
        #expect(await eventually(timeout: .seconds(60)) { log.withLock { $0.count } == 2 }, "both started")
        // Handed over while the group runs.
        runner.run(Recorder(name: "later", log: log))
        #expect(await eventually(timeout: .seconds(60)) { log.withLock { $0.contains("later started") } })
        await group.triggerGracefulShutdown()
        let ended = await eventually(timeout: .seconds(60)) { log.withLock { $0.count } == 6 }
        #expect(ended, "every service stopped")
        if !ended { running.cancel() }
        try await running.value
        let stops = log.withLock { $0.filter { $0.hasSuffix("stopped") } }
        #expect(stops.first == "gateway stopped", "the gateway stops first: \(stops)")
        #expect(Set(stops.dropFirst()) == ["store stopped", "later stopped"])
    }
}
