import CLibUV
import Glibc
import Locking
import TestSupport
import Testing

@testable import Runtime

/// ``LoopTimer/arm(at:)``: a deadline that moves later costs no libuv call, and the timer
/// still fires once, never before the deadline in force.
@Suite struct LoopTimerDeadlineTests {
    /// A timer on its own loop that records the loop time of each firing.
    final class Fixture: Sendable {
        let loop: EventLoop
        let firings = Locked<[UInt64]>([])
        nonisolated(unsafe) var timer: LoopTimer!

        init() throws {
            loop = try EventLoop(name: "deadline-test")
            loop.start()
            let made = Locked<Bool>(false)
            loop.execute {
                do {
                    let t = try LoopTimer(loop: self.loop.uv)
                    t.onFire = { self.firings.withLock { $0.append(self.loop.now) } }
                    self.timer = t
                } catch {}
                made.withLock { $0 = true }
            }
            while !made.withLock({ $0 }) { usleep(1000) }
        }

        /// Runs `body` on the loop with the loop's time, and waits for it.
        func onLoop(_ body: @escaping @Sendable (LoopTimer, UInt64) throws -> Void) async {
            await withCheckedContinuation { (cont: CheckedContinuation<Void, Never>) in
                loop.execute {
                    #expect(throws: Never.self) { try body(self.timer, self.loop.now) }
                    cont.resume()
                }
            }
        }

        func count() -> Int { firings.withLock { $0.count } }

        deinit { loop.shutdown() }
    }

    @Test func aDeadlinePushedBackFiresOnceAndNotBeforeIt() async throws {
        let f = try Fixture()
        let start = Locked<UInt64>(0)
        await f.onLoop { t, now in
            start.withLock { $0 = now }
            try t.arm(at: now + 20)
            for later in stride(from: 30, through: 80, by: 10) { try t.arm(at: now + UInt64(later)) }
            #expect(t.libuvStarts == 1, "a later deadline leaves the libuv timer alone")
        }
        #expect(await eventually { f.count() == 1 })
        try await Task.sleep(for: .milliseconds(150))
        let firings = f.firings.withLock { $0 }
        #expect(firings.count == 1, "the first deadline's firing finds the later one and waits for it")
        #expect(firings[0] >= start.withLock { $0 } + 80)
    }

    @Test func aDeadlineBroughtForwardFiresAtTheEarlierOne() async throws {
        let f = try Fixture()
        let start = Locked<UInt64>(0)
        await f.onLoop { t, now in
            start.withLock { $0 = now }
            try t.arm(at: now + 5_000)
            try t.arm(at: now + 20)
            #expect(t.libuvStarts == 2, "an earlier deadline moves it")
        }
        #expect(await eventually { f.count() == 1 })
        let fired = f.firings.withLock { $0[0] }
        #expect(fired >= start.withLock { $0 } + 20 && fired < start.withLock { $0 } + 5_000)
    }

    @Test func aDisarmedDeadlineNeverFiresAndTheTimerArmsAgain() async throws {
        let f = try Fixture()
        await f.onLoop { t, now in
            try t.arm(at: now + 20)
            t.disarm()
        }
        try await Task.sleep(for: .milliseconds(150))
        #expect(f.count() == 0, "the libuv timer fired with nothing due")
        await f.onLoop { t, now in try t.arm(at: now + 10) }
        #expect(await eventually { f.count() == 1 })
        await f.onLoop { t, _ in t.stop() }
    }

    @Test func aPlainStartAfterADeadlineRunsAsAsked() async throws {
        let f = try Fixture()
        await f.onLoop { t, now in
            try t.arm(at: now + 5_000)
            try t.start(after: 10, repeat: 10)
        }
        #expect(await eventually { f.count() >= 3 }, "a repeating start is not taken for a deadline")
        await f.onLoop { t, _ in t.stop() }
    }
}
