import AuthCore
import AuthGateTesting
import Foundation
import Gateway
import Locking
import TestSupport
import Testing

/// `routes[].maxInFlight`: requests wait in AuthGate and take the token as they leave, so a
/// rotation while they wait never reaches the API with a revoked token.
@Suite struct MaxInFlightTests {
    var revoking: FakeAuthorizationServer.Configuration {
        var c = FakeAuthorizationServer.Configuration()
        c.revokesPreviousAccessTokens = true
        return c
    }

    /// The authenticated route bounded at `n`. The queue's timeout is an hour unless given:
    /// under a sanitizer's load a request can wait longer than the default 10 s behind the
    /// others, and only the tests of the timeout itself want it to fire.
    func limited(_ n: Int, timeout: Int? = 3_600) -> (inout GatewayConfiguration) -> Void {
        { c in
            c.routes[1].maxInFlight = n
            c.routes[1].queueTimeoutSeconds = timeout
        }
    }

    @Test func noMoreThanMaxInFlightRequestsReachTheAPIAtOnce() async throws {
        try await Stack.run { stack in
            try await stack.startGateway(configure: limited(2))
            #expect(try await stack.loginAlice().status == 200)
            let at = Locked((now: 0, most: 0))
            stack.api.beforeCheckingTokens { _ in
                at.withLock {
                    $0.now += 1
                    $0.most = max($0.most, $0.now)
                }
                try? await Task.sleep(for: .milliseconds(20))
                at.withLock { $0.now -= 1 }
            }
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for i in 0..<8 { group.addTask { try await stack.proxy("GET", "/api/\(i)").status } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses == Array(repeating: 200, count: 8))
            #expect(at.withLock { $0.most } == 2)
        }
    }

    @Test func aRequestWaitingInAuthGateLeavesWithTheTokenOfTheRotationItWaitedThrough() async throws {
        try await Stack.run(fake: revoking) { stack in
            try await stack.startGateway(configure: limited(1))
            #expect(try await stack.loginAlice().status == 200)
            let second = Locked<Task<Int, any Error>?>(nil)
            stack.api.beforeCheckingTokens { n in
                guard n == 1 else { return }
                // The first request is at the API: the second arrives and waits in AuthGate,
                // then the session rotates (revoking the first request's token).
                second.withLock { $0 = Task { try await stack.proxy("GET", "/api/second").status } }
                _ = await eventually {
                    (try? await stack.admin("GET", "/metrics").text.contains("authgate_upstream_queue_waiting 1")) == true
                }
                await ReplayTests.rotate(stack)
            }
            #expect(try await stack.proxy("GET", "/api/first").status == 200)
            let secondTask = try #require(second.withLock { $0 })
            #expect(try await secondTask.value == 200)
            // Only the request that was at the API during the rotation met the revoked token.
            #expect(stack.api.statistics.rejected == 1)
            let metrics = try await stack.admin("GET", "/metrics").text
            #expect(metrics.contains(#"authgate_replays_total{session="default",outcome="replayed"} 1"#))
            #expect(metrics.contains(#"authgate_exchange_phase_seconds_count{phase="queue"} 3"#), "two first tries, one replay")
            #expect(await stack.authorization.statistics.refreshes == 1)
        }
    }

    @Test func aRequestThatWaitsPastTheQueueTimeoutGets503AndNeverReachesTheAPI() async throws {
        try await Stack.run { stack in
            try await stack.startGateway(configure: limited(1, timeout: 1))
            #expect(try await stack.loginAlice().status == 200)
            let release = Locked(false)
            let arrived = Locked(0)
            stack.api.beforeCheckingTokens { n in
                arrived.withLock { $0 += 1 }
                guard n == 1 else { return }
                while !release.withLock({ $0 }) { try? await Task.sleep(for: .milliseconds(10)) }
            }
            let first = Task { try await stack.proxy("GET", "/api/first") }
            #expect(await eventually { arrived.withLock { $0 } == 1 })
            let waited = try await stack.proxy("GET", "/api/second")
            #expect(waited.status == 503)
            #expect(waited.header("Retry-After") == "1")
            #expect(waited.text.contains("upstream-busy"))
            release.withLock { $0 = true }
            #expect(try await first.value.status == 200)
            #expect(arrived.withLock { $0 } == 1, "the request that timed out never reached the API")
        }
    }

    @Test func maxInFlightIsRefusedOnAPublicRouteAndOutOfRange() {
        func error(_ route: [String: Any]) -> String? {
            GatewayConfigurationTests.error {
                $0["routes"] = [["prefix": "/", "upstream": "https://api.example.com"].merging(route) { $1 }]
            }
        }
        #expect(error(["maxInFlight": 16, "queueTimeoutSeconds": 5]) == nil)
        #expect(error(["maxInFlight": 0]) == "routes[0].maxInFlight must be 1…100000")
        #expect(error(["queueTimeoutSeconds": 0]) == "routes[0].queueTimeoutSeconds must be 1…3600")
        #expect(
            error(["maxInFlight": 4, "requiresAuthentication": false])
                == "routes[0].maxInFlight and queueTimeoutSeconds apply only to routes that require authentication")
    }
}
