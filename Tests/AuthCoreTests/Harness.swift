import AuthCore
import AuthGateTesting
import Foundation
import Logging

/// Everything an AuthActor test needs, wired to a manual clock and the fake server.
struct Harness {
    static let tokenEndpoint = "https://auth.example.test/oauth/token"

    let clock: TestClock
    let server: FakeAuthorizationServer
    let tokenStore: InMemoryTokenStore
    let stateStore: InMemorySessionStateStore
    let client: OAuth2Client
    let configuration: AuthActor.Configuration
    let actor: AuthActor

    init(
        server serverConfiguration: FakeAuthorizationServer.Configuration = .init(),
        actor configuration: AuthActor.Configuration = AuthActor.Configuration(skew: .seconds(30), jitter: .zero),
        client clientConfiguration: OAuth2Client.Configuration? = nil,
        tokenStore: InMemoryTokenStore = InMemoryTokenStore(),
        stateStore: InMemorySessionStateStore = InMemorySessionStateStore(),
        clock: TestClock = TestClock(),
        executor: (any SerialExecutor)? = nil,
        logger: Logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
    ) {
        self.clock = clock
        self.server = FakeAuthorizationServer(configuration: serverConfiguration, clock: clock)
        self.tokenStore = tokenStore
        self.stateStore = stateStore
        self.configuration = configuration
        self.client = OAuth2Client(
            configuration: clientConfiguration
                ?? .init(tokenEndpoint: Self.tokenEndpoint, clientID: "authgate", clientSecret: "s3cret"),
            transport: server, clock: clock)
        self.actor = AuthActor(
            client: client, tokenStore: tokenStore, stateStore: stateStore, clock: clock,
            configuration: configuration, logger: logger, executor: executor, randomFraction: { 0 })
    }

    /// A new actor over the same stores and server: the process restarted.
    func restarted() -> AuthActor {
        AuthActor(
            client: client, tokenStore: tokenStore, stateStore: stateStore, clock: clock,
            configuration: configuration, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }),
            randomFraction: { 0 })
    }

    @discardableResult
    func login() async throws -> AccessToken {
        try await actor.login(.password(username: "alice", password: "wonderland"))
    }
}

/// Collects events from a subscription in the background.
final class EventLog: Sendable {
    private let storage = Storage()
    private let task: Task<Void, Never>

    actor Storage {
        var records: [AuthEventRecord] = []
        func append(_ record: AuthEventRecord) { records.append(record) }
    }

    init(_ broadcaster: EventBroadcaster) {
        let stream = broadcaster.subscribe()
        let storage = self.storage
        self.task = Task {
            for await record in stream { await storage.append(record) }
        }
    }

    var events: [AuthEvent] {
        get async { await storage.records.map(\.event) }
    }

    var loggedOutCount: Int {
        get async {
            await events.filter { if case .loggedOut = $0 { true } else { false } }.count
        }
    }

    /// Ends `broadcaster` (the one this log follows) and waits until the log has collected
    /// every event published before: a barrier after which the log is complete, so that
    /// "nothing else was published" can be asserted without sleeping. Call at the end of a test.
    func drain(_ broadcaster: EventBroadcaster) async -> [AuthEventRecord] {
        broadcaster.finish()
        await task.value
        return await storage.records
    }

    func stop() { task.cancel() }
}
