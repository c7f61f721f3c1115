import AuthCore
import AuthGateTesting
import Dispatch
import Logging
import Synchronization
import Testing

/// A serial executor on a dispatch queue that counts the jobs it runs (the shape of the
/// event loop's executor the gateway will pass in).
final class CountingQueueExecutor: SerialExecutor {
    private let queue = DispatchQueue(label: "authcore.tests.executor")
    private let jobs = Atomic<Int>(0)

    var jobsRun: Int { jobs.load(ordering: .relaxed) }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        queue.async {
            self.jobs.add(1, ordering: .relaxed)
            job.runSynchronously(on: executor)
        }
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }
}

@Suite struct CustomExecutorTests {
    @Test func actorRunsOnTheExecutorItIsGiven() async throws {
        let clock = TestClock()
        let server = FakeAuthorizationServer(clock: clock)
        let executor = CountingQueueExecutor()
        let actor = AuthActor(
            client: OAuth2Client(
                configuration: .init(tokenEndpoint: Harness.tokenEndpoint, clientID: "authgate", clientSecret: "s3cret"),
                transport: server, clock: clock),
            tokenStore: InMemoryTokenStore(), stateStore: InMemorySessionStateStore(), clock: clock,
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), executor: executor)
        try await actor.login(.password(username: "alice", password: "wonderland"))
        let before = executor.jobsRun
        #expect(before > 0)
        clock.advance(by: .seconds(3600))
        let token = try await actor.token()
        #expect(token.generation == TokenGeneration(2))
        #expect(executor.jobsRun > before)
    }
}
