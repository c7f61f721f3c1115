import Locking
import Logging
import ServiceLifecycle
import TestSupport
import Testing

@testable import Gateway

/// `BackgroundRunner` runs what the gateway hands it inside the one service group, and stops it
/// only after the services listed after it (the gateway) have stopped.
@Suite struct BackgroundRunnerTests {
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
        let runner = BackgroundRunner()
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

/// A gateway given a runner runs its sessions' followers there, not in tasks of its own.
@Suite struct GatewayBackgroundTests {
    static func registration(_ stack: Stack) async throws -> String? {
        Stack.json(try await stack.admin("GET", "/auth/session"))["registration"] as? String
    }

    @Test func theUserInfoFollowerRunsInTheRunnerAndShutdownWaitsForIt() async throws {
        try await Stack.run { stack in
            let port = stack.apiServer.port
            let background = BackgroundRunner()
            try await stack.startGateway(background: background) {
                $0.userInfo = .init(url: "http://127.0.0.1:\(port)/userinfo")
            }
            #expect(try await stack.loginAlice().status == 200)
            // The runner has not started: the follower handed to it has not seen the login
            // (its events wait in its subscription), so no registration is known.
            try await Task.sleep(for: .milliseconds(500))
            let before = try await Self.registration(stack)
            #expect(before == nil, "\(String(describing: before))")
            // Outside a group the runner runs until cancelled, then waits for its work.
            let running = Task { await background.run() }
            #expect(try await eventually { try await Self.registration(stack) == "signed_up" })
            // Shutdown ends the session's events; the follower returns, and the runner has
            // nothing left to wait for.
            await stack.stopGateway()
            running.cancel()
            await running.value
        }
    }
}
