import Locking
import TestSupport
import Testing

@testable import Gateway

/// The work `/readyz` starts: once at a time however often it is asked for, again once the
/// run under way ended, and waited for at shutdown.
struct SingleFlightTests {
    /// Work that counts its runs and holds each until opened.
    final class Held: Sendable {
        let runs = Locked(0)
        let open = Locked(false)

        func run() async {
            runs.withLock { $0 += 1 }
            while !open.withLock({ $0 }) { try? await Task.sleep(for: .milliseconds(2)) }
        }
    }

    @Test func askedForAgainWhileItRunsItIsNotStartedTwice() async {
        let held = Held()
        let flight = SingleFlight { await held.run() }
        #expect(flight.start())
        #expect(await eventually { held.runs.withLock { $0 } == 1 })
        for _ in 0..<10 { #expect(!flight.start(), "started beside the run under way") }
        held.open.withLock { $0 = true }
        await flight.finish()
        #expect(held.runs.withLock { $0 } == 1)
    }

    @Test func onceTheRunEndedItStartsAgain() async {
        let held = Held()
        held.open.withLock { $0 = true }
        let flight = SingleFlight { await held.run() }
        #expect(flight.start())
        await flight.finish()
        #expect(flight.start(), "the slot is free once finish returned")
        await flight.finish()
        #expect(held.runs.withLock { $0 } == 2)
    }

    @Test func finishWaitsForTheRunUnderWay() async {
        let held = Held()
        let flight = SingleFlight { await held.run() }
        flight.start()
        let finished = Locked(false)
        let waiter = Task {
            await flight.finish()
            finished.withLock { $0 = true }
        }
        #expect(await eventually { held.runs.withLock { $0 } == 1 })
        try? await Task.sleep(for: .milliseconds(50))
        #expect(!finished.withLock { $0 }, "finish returned while the run was held")
        held.open.withLock { $0 = true }
        await waiter.value
        #expect(finished.withLock { $0 })
    }
}
