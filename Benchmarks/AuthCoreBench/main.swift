// authcore-bench: the cost of AuthActor.token() on the fast path, the wall time of a
// refresh storm, and the cost of a DPoP proof (what a DPoP route adds to each request).
// Not a test: it prints figures, it asserts nothing about time.
//
//   swift run -c release --scratch-path .build-bench authcore-bench [fast-path-iterations] [storm sizes...]

import AuthCore
import AuthGateTesting
import Crypto
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

/// A DPoP proof per proxied request: the whole proof as the proxy makes it (the session's
/// key kept parsed, its header encoded once), beside the ES256 signature alone.
func dpopProofs(iterations: Int) throws {
    let key = P256.Signing.PrivateKey()
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("bench-dpop-\(UUID().uuidString).pem").path
    FileManager.default.createFile(
        atPath: path, contents: Data(key.pemRepresentation.utf8), attributes: [.posixPermissions: 0o600])
    defer { try? FileManager.default.removeItem(atPath: path) }
    let signer = try DPoPSessionKey(file: DPoPKey(path: path))
    let token = String(repeating: "a", count: 600)
    var bytes = 0
    for _ in 0..<1_000 {
        bytes &+= signer.proof(method: "GET", url: "http://127.0.0.1:8080/orders", accessToken: token)?.utf8.count ?? 0
    }
    let clock = ContinuousClock()
    var start = clock.now
    for _ in 0..<iterations {
        bytes &+= signer.proof(method: "GET", url: "http://127.0.0.1:8080/orders", accessToken: token)?.utf8.count ?? 0
    }
    let proofs = clock.now - start
    let input = Array(repeating: UInt8(ascii: "x"), count: 400)
    start = clock.now
    for _ in 0..<iterations { bytes &+= try key.signature(for: input).rawRepresentation.count }
    let signatures = clock.now - start
    print(
        "DPoP proof (ES256): \(iterations) proofs, "
            + String(
                format: "%.1f µs/proof; the signature alone %.1f µs", nanoseconds(proofs) / Double(iterations) / 1000,
                nanoseconds(signatures) / Double(iterations) / 1000) + " (checksum \(bytes))")
}

if CommandLine.arguments.dropFirst().first == "dpop" {
    try dpopProofs(iterations: Int(CommandLine.arguments.dropFirst(2).first ?? "") ?? 20_000)
    exit(0)
}

let arguments = CommandLine.arguments.dropFirst().compactMap { Int($0) }
let iterations = arguments.first ?? 1_000_000
let storms = arguments.count > 1 ? Array(arguments.dropFirst()) : [10_000, 100_000]
try await fastPath(iterations: iterations)
for size in storms where size > 0 {
    try await storm(waiters: size)
}
