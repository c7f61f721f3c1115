import AuthGateTesting
import Foundation
import Gateway
import Locking
import TestSupport
import Testing

/// A graceful shutdown is bounded: whatever is stuck, it ends within `grace` + 3 s, inside
/// the systemd unit's `TimeoutStopSec=15` with the default grace of 10 s.
@Suite struct ShutdownDrainTests {
    /// Not under the sanitizers: the loops stop with the held refresh still waiting on one of
    /// them, by design (a stuck refresh must not hold the process), and LeakSanitizer reports
    /// that task and what it holds as leaked.
    @Test(.disabled(if: runsUnderSanitizer))
    func aRequestStuckAtTheAPIAndARefreshStuckAtTheTokenEndpointDoNotHoldShutdownPastItsCap() async throws {
        try await Stack.run { stack in
            let service = try await stack.startGateway()
            #expect(try await stack.loginAlice().status == 200)
            let release = Locked(false)
            let arrived = Locked(false)
            stack.api.beforeCheckingTokens { _ in
                arrived.withLock { $0 = true }
                while !release.withLock({ $0 }) { try? await Task.sleep(for: .milliseconds(20)) }
            }
            let stuck = Task { try? await stack.proxy("GET", "/api/stuck") }
            #expect(await eventually { arrived.withLock { $0 } })
            // A refresh that the token endpoint never answers.
            await stack.authorization.holdRefreshes()
            let refresh = Task { try? await stack.admin("POST", "/auth/refresh") }
            #expect(await eventually { await stack.authorization.heldRefreshCount == 1 })

            let started = ContinuousClock.now
            await service.shutdown(grace: .seconds(1))
            let took = ContinuousClock.now - started
            // The cap is grace + 3 s; the stuck work never ends by itself, so any bound proves
            // the cap, and 30 s leaves a loaded machine its slack.
            #expect(took < .seconds(30), "shutdown took \(took)")
            #expect(took >= .seconds(1), "the stuck exchange had its grace")

            release.withLock { $0 = true }
            await stack.authorization.releaseRefreshes()
            _ = await stuck.value
            _ = await refresh.value
            stack.gateway.withLock { $0 = nil }
        }
    }
}
