import AuthCore
import Testing

@Suite struct RefreshGateTests {
    let t0 = MonotonicInstant(offset: .seconds(1000))
    let serverError = TokenEndpointError(code: .serverError, disposition: .transient, status: 503)

    @Test func transientFailuresBackOffExponentiallyAndSuccessStartsOver() {
        var gate = RefreshGate(policy: BackoffPolicy(), window: RefreshWindow(interval: .seconds(1), maximumAttempts: 100))
        var now = t0
        var delays: [Duration] = []
        for _ in 0..<5 {
            #expect(gate.admit(at: now) == .proceed)
            let delay = gate.recordTransientFailure(serverError, at: now)
            delays.append(delay)
            #expect(gate.admit(at: now + delay - .milliseconds(1)) == .backingOff(retryAfter: .milliseconds(1), lastError: serverError))
            now = now + delay
        }
        #expect(delays == [.seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(16)])
        gate.recordSuccess()
        #expect(gate.admit(at: now) == .proceed)
        #expect(gate.recordTransientFailure(serverError, at: now) == .seconds(1))
    }

    @Test func retryAfterOverridesTheExponentialDelay() {
        var gate = RefreshGate(policy: BackoffPolicy(), window: RefreshWindow())
        var limited = TokenEndpointError(code: .rateLimited, disposition: .transient, status: 429)
        limited.retryAfter = .seconds(90)
        #expect(gate.recordTransientFailure(limited, at: t0) == .seconds(90))
        #expect(gate.admit(at: t0 + .seconds(89)) == .backingOff(retryAfter: .seconds(1), lastError: limited))
        #expect(gate.admit(at: t0 + .seconds(90)) == .proceed)
    }

    @Test func loopGuardCountsOnlyAdmittedRefreshes() {
        var gate = RefreshGate(policy: BackoffPolicy(), window: RefreshWindow(interval: .seconds(30), maximumAttempts: 2))
        #expect(gate.admit(at: t0) == .proceed)
        _ = gate.recordTransientFailure(serverError, at: t0)
        #expect(gate.admit(at: t0 + .milliseconds(500)) != .proceed, "backing off does not use a slot")
        #expect(gate.admit(at: t0 + .seconds(1)) == .proceed)
        #expect(gate.admit(at: t0 + .seconds(2)) == .excessive)
        gate.reset()
        #expect(gate.admit(at: t0 + .seconds(2)) == .proceed)
    }
}
