// authcore-bench: the cost of AuthActor.token() on the fast path and the wall time of a
// refresh storm. Not a test: it prints figures, it asserts nothing about time.
//
//   swift run -c release --scratch-path .build-bench authcore-bench [fast-path-iterations] [storm sizes...]

import AuthCore
import AuthGateTesting
import Foundation
import Logging

struct Bench {
    let clock = TestClock()
    let server: FakeAuthorizationServer
    let actor: AuthActor

    init() {
        server = FakeAuthorizationServer(clock: clock)
        let client = OAuth2Client(
            configuration: .init(
                tokenEndpoint: "https://auth.example.test/oauth/token", clientID: "authgate", clientSecret: "s3cret"),
            transport: server, clock: clock)
        actor = AuthActor(
            client: client, tokenStore: InMemoryTokenStore(), stateStore: InMemorySessionStateStore(),
            clock: clock, configuration: .init(skew: .seconds(30), jitter: .zero),
            logger: Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() }))
    }
}

func nanoseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1e9 + Double(duration.components.attoseconds) / 1e9
}

func fastPath(iterations: Int) async throws {
    let bench = Bench()
    try await bench.actor.login(.password(username: "alice", password: "wonderland"))
    for _ in 0..<10_000 { _ = try await bench.actor.token() }  // warm up
    let clock = ContinuousClock()
    let start = clock.now
    var checksum = 0
    for _ in 0..<iterations {
        checksum &+= Int(try await bench.actor.token().generation.rawValue)
    }
    let elapsed = clock.now - start
    print(
        "token() fast path, 1 caller: \(iterations) calls in \(elapsed), "
            + String(format: "%.1f ns/op", nanoseconds(elapsed) / Double(iterations))
            + " (checksum \(checksum))")

    let tasks = 4
    let perTask = iterations / tasks
    let concurrentStart = clock.now
    try await withThrowingTaskGroup(of: Void.self) { group in
        for _ in 0..<tasks {
            group.addTask {
                for _ in 0..<perTask { _ = try await bench.actor.token() }
            }
        }
        try await group.waitForAll()
    }
    let concurrent = clock.now - concurrentStart
    print(
        "token() fast path, \(tasks) concurrent callers: \(perTask * tasks) calls in \(concurrent), "
            + String(format: "%.1f ns/op", nanoseconds(concurrent) / Double(perTask * tasks)))
}

func storm(waiters: Int) async throws {
    let bench = Bench()
    let first = try await bench.actor.login(.password(username: "alice", password: "wonderland"))
    await bench.server.holdRefreshes()
    bench.clock.advance(by: .seconds(3600))
    let clock = ContinuousClock()
    let start = clock.now
    let joined: ContinuousClock.Instant
    let released: ContinuousClock.Instant
    // Unstructured tasks, not a task group: collecting 100,000 children from a TaskGroup is
    // quadratic in the Swift 6.3 runtime and would dominate the figure (see
    // docs/benchmarks/authcore.md).
    var callers: [Task<TokenGeneration, any Error>] = []
    callers.reserveCapacity(waiters)
    for _ in 0..<waiters {
        callers.append(Task { try await bench.actor.token().generation })
    }
    while await bench.actor.refreshWaiterCount < waiters {
        try await Task.sleep(for: .milliseconds(1))
    }
    joined = clock.now
    await bench.server.releaseRefreshes()
    released = clock.now
    var tokens = Set<TokenGeneration>()
    for caller in callers { tokens.insert(try await caller.value) }
    let end = clock.now
    let refreshes = await bench.server.statistics.refreshes
    precondition(tokens.count == 1 && !tokens.contains(first.generation) && refreshes == 1)
    print(
        "refresh storm, \(waiters) waiters: all joined in \(joined - start), "
            + "release → all resumed in \(end - released), total \(end - start); "
            + "refreshes at the server: \(refreshes), distinct tokens handed out: \(tokens.count)")
}

let arguments = CommandLine.arguments.dropFirst().compactMap { Int($0) }
let iterations = arguments.first ?? 1_000_000
let storms = arguments.count > 1 ? Array(arguments.dropFirst()) : [10_000, 100_000]
try await fastPath(iterations: iterations)
for size in storms where size > 0 {
    try await storm(waiters: size)
}
