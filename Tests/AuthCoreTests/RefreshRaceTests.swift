import AuthCore
import AuthGateTesting
import Dispatch
import Locking
import Logging
import TestSupport
import Testing

/// A serial executor that is also a task executor and runs every job with both (the shape of
/// the gateway's `EventLoop`). A task that prefers another task executor really suspends at
/// each hop into an isolated function of an actor that runs here: the runtime re-enqueues it,
/// and other jobs run in between, as on the gateway's loops.
///
/// Jobs of one priority can be parked after a given number of them ran, to stop one caller
/// at its n-th hop while everything else goes on.
final class LoopLikeExecutor: SerialExecutor, TaskExecutor, @unchecked Sendable {
    private struct State {
        var parkPriority: UInt8?
        var allowance = 0
        var parked: [UnownedJob] = []
    }

    private let queue: DispatchQueue
    private let state = Locked(State())

    init(label: String = "authcore.tests.loop") {
        queue = DispatchQueue(label: label)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let priority = job.priority.rawValue
        let job = UnownedJob(job)
        let parked: Bool = state.withLock { state in
            guard state.parkPriority == priority else { return false }
            if state.allowance > 0 {
                state.allowance -= 1
                return false
            }
            state.parked.append(job)
            return true
        }
        if !parked { schedule(job) }
    }

    private func schedule(_ job: UnownedJob) {
        queue.async {
            job.runSynchronously(isolatedTo: self.asUnownedSerialExecutor(), taskExecutor: self.asUnownedTaskExecutor())
        }
    }

    /// Lets `allowance` more jobs of `priority` run, then parks the following ones.
    func park(priority: TaskPriority, after allowance: Int) {
        state.withLock {
            $0.parkPriority = priority.rawValue
            $0.allowance = allowance
        }
    }

    /// How many jobs are parked.
    var parkedCount: Int { state.withLock { $0.parked.count } }

    /// Stops parking and runs the parked jobs.
    func unpark() {
        let jobs = state.withLock { state -> [UnownedJob] in
            state.parkPriority = nil
            defer { state.parked.removeAll() }
            return state.parked
        }
        for job in jobs { schedule(job) }
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }
}

/// A task executor on its own queue: the loop a gateway request task prefers.
final class CallerTaskExecutor: TaskExecutor, @unchecked Sendable {
    private let queue: DispatchQueue

    init(label: String = "authcore.tests.caller") {
        queue = DispatchQueue(label: label)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

/// Whether the caller is parked at its hop or already waits for the refresh.
func parkedOrWaiting(_ loop: LoopLikeExecutor, _ actor: AuthActor, waiters: Int) async -> Bool {
    if loop.parkedCount == 1 { return true }
    return await actor.refreshWaiterCount == waiters
}

/// docs/benchmarks/storm.md, gateway bug 1: a caller that read the session just before a
/// refresh committed started a second refresh, or got a `CancellationError`.
@Suite struct RefreshRaceTests {
    enum Entry: String, CaseIterable, CustomTestStringConvertible {
        case token, unauthorized
        var testDescription: String { rawValue }
    }

    /// The caller reads the expired session, is stopped after `hops` jobs on the actor's
    /// executor, a whole refresh commits, then the caller goes on. Whatever hop it was
    /// stopped at, it must get the refreshed token: no second refresh, no error.
    @Test(arguments: Entry.allCases, 1...8)
    func callerStoppedAtAnyHopUsesTheRefreshThatCommittedMeanwhile(entry: Entry, hops: Int) async throws {
        let loop = LoopLikeExecutor()
        let callerLoop = CallerTaskExecutor()
        let h = Harness(executor: loop)
        let first = try await h.login()
        await h.server.holdRefreshes()
        h.clock.advance(by: .seconds(3600))
        let starter = Task(priority: .high) { try await h.actor.token() }
        #expect(await eventually { await h.server.heldRefreshCount == 1 })

        loop.park(priority: .low, after: hops)
        let caller = Task(executorPreference: callerLoop, priority: .low) { () async throws -> AccessToken in
            switch entry {
            case .token: try await h.actor.token()
            case .unauthorized: try await h.actor.refresh(after: first.generation)
            }
        }
        // Stopped at its hop, or (with many hops allowed) already waiting for the refresh.
        #expect(await eventually { await parkedOrWaiting(loop, h.actor, waiters: 2) })
        await h.server.releaseRefreshes()
        let refreshed = try await starter.value
        #expect(refreshed.generation > first.generation)
        loop.unpark()

        let result = await caller.result
        switch result {
        case .success(let token):
            #expect(token == refreshed, "the caller gets the token that committed while it was suspended")
        case .failure(let error):
            Issue.record("the caller failed with \(error) (\(type(of: error)))")
        }
        #expect(await h.server.statistics.refreshAttempts == 1, "no second refresh")
        #expect(await h.actor.refreshCount == 1)
        #expect(try await h.actor.token() == refreshed)
    }

    /// A caller that is really cancelled still gets `CancellationError` (and only then).
    @Test func cancelledCallerStoppedBeforeRegisteringGetsCancellationError() async throws {
        let loop = LoopLikeExecutor()
        let callerLoop = CallerTaskExecutor()
        let h = Harness(executor: loop)
        let first = try await h.login()
        await h.server.holdRefreshes()
        let starter = Task(priority: .high) { try await h.actor.refresh(after: first.generation) }
        #expect(await eventually { await h.server.heldRefreshCount == 1 })
        loop.park(priority: .low, after: 1)
        let caller = Task(executorPreference: callerLoop, priority: .low) {
            try await h.actor.refresh(after: first.generation)
        }
        #expect(await eventually { await parkedOrWaiting(loop, h.actor, waiters: 2) })
        caller.cancel()
        loop.unpark()
        let result = await caller.result
        #expect(throws: CancellationError.self) { try result.get() }
        await h.server.releaseRefreshes()
        let token = try await starter.value
        #expect(token.generation > first.generation)
        #expect(await h.server.statistics.refreshAttempts == 1)
    }

    /// Many callers on other loops across many expiries of 2 s tokens: exactly one refresh per
    /// expiry, every caller gets the new token, nobody gets an error. Stale 401s (for the
    /// previous generation) arrive meanwhile and must not refresh.
    @Test(arguments: [true, false])
    func manyCallersAcrossTwentyExpiriesCostExactlyOneRefreshEach(onLoop: Bool) async throws {
        var server = FakeAuthorizationServer.Configuration()
        server.accessTokenLifetime = .seconds(2)
        let loop = LoopLikeExecutor()
        let callerLoops = [CallerTaskExecutor(label: "a"), CallerTaskExecutor(label: "b")]
        let h = Harness(server: server, actor: .init(skew: .zero, jitter: .zero), executor: onLoop ? loop : nil)
        var previous = try await h.login()
        let expiries = 20
        let callers = 400
        for round in 0..<expiries {
            h.clock.advance(by: .seconds(2))
            let expected = TokenGeneration(previous.generation.rawValue + 1)
            let stale = previous.generation
            let tasks = (0..<callers).map { index in
                Task(executorPreference: callerLoops[index % callerLoops.count]) { () async throws -> AccessToken in
                    if index.isMultiple(of: 5) {
                        // A request sent with the previous token comes back 401.
                        return try await h.actor.refresh(after: stale)
                    }
                    return try await h.actor.token()
                }
            }
            var errors: [String] = []
            var generations: Set<TokenGeneration> = []
            for task in tasks {
                switch await task.result {
                case .success(let token): generations.insert(token.generation)
                case .failure(let error): errors.append("\(error)")
                }
            }
            #expect(errors.count == 0, "round \(round): \(errors.prefix(3))")
            #expect(generations == [expected], "round \(round)")
            previous = try await h.actor.token()
            #expect(previous.generation == expected)
        }
        #expect(await h.server.statistics.refreshes == expiries)
        #expect(await h.server.statistics.refreshAttempts == expiries)
        #expect(await h.actor.refreshCount == expiries)
    }
}
