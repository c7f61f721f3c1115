import Glibc
import Locking
import Runtime
import TestSupport
import Testing

/// An actor whose jobs run on a given loop.
actor LoopCounter {
    nonisolated let unownedExecutor: UnownedSerialExecutor
    let loop: EventLoop
    private var seen: [Int: Int] = [:]
    private(set) var count = 0
    private(set) var offLoop = 0
    private(set) var outOfOrder = 0

    init(loop: EventLoop) {
        self.loop = loop
        unownedExecutor = loop.asUnownedSerialExecutor()
    }

    func record(producer: Int, sequence: Int) {
        if !loop.inEventLoop { offLoop += 1 }
        if let last = seen[producer], last + 1 != sequence { outOfOrder += 1 }
        seen[producer] = sequence
        count += 1
    }
}

final class Tally: Sendable {
    let total = Locked(0)
    let wrong = Locked(0)
    let lastSeen = Locked([Int](repeating: -1, count: 4))
}

@Suite struct EventLoopTests {
    @Test func hundredThousandJobsFromManyThreadsRunOnTheLoopInOrder() async throws {
        let loop = try EventLoop(name: "test-loop")
        loop.start()
        defer { loop.shutdown() }
        let counter = LoopCounter(loop: loop)
        let producers = 8
        // Under the sanitizers a tenth: the hops would otherwise hold the two-thread
        // cooperative pool for a minute, stalling every test that runs beside this one.
        let sanitized = runsUnderSanitizer
        let perProducer = sanitized ? 1_250 : 12_500
        await withTaskGroup(of: Void.self) { group in
            for p in 0..<producers {
                group.addTask {
                    // Each producer is one task: its calls are ordered, so the actor must see them in order.
                    for i in 0..<perProducer { await counter.record(producer: p, sequence: i) }
                }
            }
        }
        #expect(await counter.count == producers * perProducer)
        #expect(await counter.offLoop == 0)
        #expect(await counter.outOfOrder == 0)
    }

    @Test func closuresFromManyThreadsAllRunOnTheLoopInSubmissionOrderPerThread() async throws {
        let loop = try EventLoop(name: "test-loop")
        loop.start()
        let box = Tally()
        await withTaskGroup(of: Void.self) { group in
            for t in 0..<4 {
                group.addTask {
                    for i in 0..<25_000 {
                        loop.execute {
                            if !loop.inEventLoop { box.wrong.withLock { $0 += 1 } }
                            box.lastSeen.withLock { s in
                                if s[t] + 1 != i { box.wrong.withLock { $0 += 1 } }
                                s[t] = i
                            }
                            box.total.withLock { $0 += 1 }
                        }
                    }
                }
            }
        }
        loop.shutdown()  // drains what is queued before closing
        #expect(box.total.withLock { $0 } == 100_000)
        #expect(box.wrong.withLock { $0 } == 0)
    }

    @Test func taskExecutorPreferenceRunsOnTheLoop() async throws {
        let loop = try EventLoop(name: "test-loop")
        loop.start()
        defer { loop.shutdown() }
        let onLoop = await Task(executorPreference: loop) { @Sendable [loop] in loop.inEventLoop }.value
        #expect(onLoop)
        #expect(!loop.inEventLoop)
    }

    @Test func groupStartsOneLoopPerRequestedThread() async throws {
        let group = try EventLoopGroup(loopCount: 3, name: "trio")
        #expect(group.loops.map(\.name) == ["trio-0", "trio-1", "trio-2"])
        // Each loop runs its jobs on a thread of its own, already running: three distinct
        // threads, none of them the caller's, each recognised by its own loop only.
        var threads: [UInt] = []
        for (index, loop) in group.loops.enumerated() {
            let seen = await withCheckedContinuation { (continuation: CheckedContinuation<(UInt, [Bool]), Never>) in
                loop.execute { continuation.resume(returning: (UInt(pthread_self()), group.loops.map(\.inEventLoop))) }
            }
            threads.append(seen.0)
            #expect(seen.1 == group.loops.indices.map { $0 == index }, "loop \(index) is on its own thread only")
        }
        #expect(Set(threads).count == 3, "one thread per loop")
        #expect(!threads.contains(UInt(pthread_self())))
        #expect(group.loops.allSatisfy { !$0.inEventLoop })
        group.shutdown()
        // Shut down, the loops run nothing more: a job is counted as dropped instead.
        group.loops[0].execute {}
        #expect(group.loops[0].droppedJobs == 1)
        let minimal = try EventLoopGroup(loopCount: 0)
        #expect(minimal.loops.count == 1, "at least one loop")
        minimal.shutdown()
    }

    @Test func shuttingDownWhileOtherThreadsEnqueueRunsOrCountsEveryJob() async throws {
        // The wakeup of a job enqueued from another thread races the loop closing its
        // async handle; each accepted job runs, each refused one is counted as dropped.
        for _ in 0..<20 {
            let loop = try EventLoop(name: "race-loop")
            loop.start()
            let ran = Locked(0)
            let perThread = 2_000
            async let pushed: [Int] = onThreads(3) { _ in
                for _ in 0..<perThread { loop.execute { ran.withLock { $0 += 1 } } }
                return perThread
            }
            loop.shutdown()
            let total = await pushed.reduce(0, +)
            #expect(ran.withLock { $0 } + loop.droppedJobs == total)
        }
    }
}
