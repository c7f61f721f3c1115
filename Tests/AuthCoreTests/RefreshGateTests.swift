import AuthCore
import Testing

@Suite struct RefreshGateTests {
    let t0 = MonotonicInstant(offset: .seconds(1000))
    let serverError = AuthError.tokenEndpoint(.serverError, .transient, status: 503)

    @Test func transientFailuresBackOffExponentiallyAndSuccessStartsOver() {
        var gate = RefreshGate(policy: BackoffPolicy(), window: RefreshWindow(interval: .seconds(1), maximumAttempts: 100))
        var now = t0
        var delays: [Duration] = []
        for _ in 0..<5 {
            #expect(gate.admit(at: now) == .proceed)
            let delay = gate.recordTransientFailure(serverError, at: now)
            delays.append(delay)
            #expect(
                gate.admit(at: now + delay - .milliseconds(1))
                    == .backingOff(retryAfter: .milliseconds(1), lastError: serverError))
            now = now + delay
        }
        #expect(delays == [.seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(16)])
        gate.recordSuccess()
        #expect(gate.admit(at: now) == .proceed)
        #expect(gate.recordTransientFailure(serverError, at: now) == .seconds(1))
    }

    @Test func anUnusableCredentialFileIsLookedAtAgainWithinTheFirstStep() {
        var gate = RefreshGate(policy: BackoffPolicy(), window: RefreshWindow(interval: .seconds(1), maximumAttempts: 100))
        let unusable = AuthError.tokenEndpoint(.clientCredentialsUnusable, .transient)
        var now = t0
        for _ in 0..<6 {
            #expect(gate.admit(at: now) == .proceed)
            #expect(gate.recordTransientFailure(unusable, at: now) == .seconds(1), "nothing reached the server")
            now = now + .seconds(1)
        }
        #expect(gate.recordTransientFailure(serverError, at: now) == .seconds(2), "a server failure backs off as before")
    }

    @Test func retryAfterOverridesTheExponentialDelay() {
        var gate = RefreshGate(policy: BackoffPolicy(), window: RefreshWindow())
        var limited = AuthError.tokenEndpoint(.rateLimited, .transient, status: 429)
        limited.retryAfter = .seconds(90)
        #expect(gate.recordTransientFailure(limited, at: t0) == .seconds(90))
        #expect(gate.admit(at: t0 + .seconds(89)) == .backingOff(retryAfter: .seconds(1), lastError: limited))
        #expect(gate.admit(at: t0 + .seconds(90)) == .proceed)
    }

    @Test func retryAfterIsClampedBetweenTheBackoffStepAndTheMaximum() {
        var gate = RefreshGate(policy: BackoffPolicy(), window: RefreshWindow(interval: .seconds(1), maximumAttempts: 100))
        var limited = AuthError.tokenEndpoint(.rateLimited, .transient, status: 429)
        limited.retryAfter = .seconds(99_999_999)
        #expect(gate.recordTransientFailure(limited, at: t0) == .seconds(300), "never longer than the maximum backoff")
        #expect(gate.admit(at: t0 + .seconds(300)) == .proceed)
        gate.recordSuccess()
        limited.retryAfter = .zero
        #expect(gate.recordTransientFailure(limited, at: t0) == .seconds(1), "never shorter than the backoff step")
        #expect(gate.recordTransientFailure(limited, at: t0) == .seconds(2))
        #expect(gate.recordTransientFailure(limited, at: t0) == .seconds(4))
        #expect(gate.admit(at: t0 + .seconds(3)) != .proceed, "Retry-After: 0 does not disable the backoff")
    }

    @Test func backoffJitterIsInjectedAndStaysWithinTheStepAndTheMaximum() {
        let policy = BackoffPolicy(jitter: 0.5)
        #expect(policy.delay(afterConsecutiveFailures: 3, retryAfter: nil, randomFraction: 0) == .seconds(4))
        #expect(policy.delay(afterConsecutiveFailures: 3, retryAfter: nil, randomFraction: 0.5) == .seconds(5))
        #expect(
            policy.delay(afterConsecutiveFailures: 3, retryAfter: nil, randomFraction: 7) == .seconds(6),
            "fraction clamped to 0...1")
        #expect(
            policy.delay(afterConsecutiveFailures: 20, retryAfter: nil, randomFraction: 0.9) == .seconds(300),
            "never past the maximum")
        #expect(policy.delay(afterConsecutiveFailures: 1, retryAfter: .seconds(10), randomFraction: 0.5) == .milliseconds(12_500))
        var gate = RefreshGate(policy: policy, window: RefreshWindow(interval: .seconds(1), maximumAttempts: 100))
        #expect(gate.recordTransientFailure(serverError, at: t0, randomFraction: 0.5) == .milliseconds(1250))
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

    func token(_ generation: UInt64, obtainedAt: MonotonicInstant, lifetime: Duration?) -> RefreshGate.CurrentToken {
        RefreshGate.CurrentToken(generation: TokenGeneration(generation), obtainedAt: obtainedAt, lifetime: lifetime)
    }

    @Test func onlyRefreshesOfTokensYoungerThanHalfTheirLifetimeOrTheIntervalCount() {
        let gate = RefreshGate(policy: BackoffPolicy(), window: RefreshWindow(interval: .seconds(30), maximumAttempts: 5))
        let short = token(1, obtainedAt: t0, lifetime: .seconds(2))
        #expect(gate.prematurityThreshold(for: short) == .seconds(1))
        #expect(gate.isPremature(short, at: t0 + .milliseconds(999)))
        #expect(!gate.isPremature(short, at: t0 + .seconds(1)), "a proactive refresh at half-life is not premature")
        let long = token(1, obtainedAt: t0, lifetime: .seconds(3600))
        #expect(gate.prematurityThreshold(for: long) == .seconds(30), "capped by the interval")
        #expect(gate.prematurityThreshold(for: token(1, obtainedAt: t0, lifetime: nil)) == .seconds(30))
        #expect(gate.prematurityThreshold(for: token(1, obtainedAt: t0, lifetime: .zero)) == .seconds(30), "issued expired")
    }

    @Test func expiryDrivenRefreshesNeverTripTheGuard() {
        var gate = RefreshGate(policy: BackoffPolicy(), window: RefreshWindow(interval: .seconds(30), maximumAttempts: 5))
        var now = t0
        for generation in 1...100 {
            // A 2 s token refreshed at its half-life, 100 times in 100 s.
            let current = token(UInt64(generation), obtainedAt: now, lifetime: .seconds(2))
            now = now + .seconds(1)
            #expect(gate.admit(at: now, replacing: current) == .proceed, "refresh \(generation)")
        }
        #expect(!gate.isLoopGuardTripped)
    }

    @Test func rejectedFreshTokensTripTheGuardOnceAndEachGenerationCountsOnce() {
        var gate = RefreshGate(policy: BackoffPolicy(), window: RefreshWindow(interval: .seconds(30), maximumAttempts: 2))
        let g1 = token(1, obtainedAt: t0, lifetime: .seconds(3600))
        #expect(gate.admit(at: t0, replacing: g1) == .proceed)
        _ = gate.recordTransientFailure(serverError, at: t0)
        #expect(
            gate.admit(at: t0 + .seconds(1), replacing: g1) == .proceed, "a retry of the same generation is not counted again")
        gate.recordSuccess()
        let g2 = token(2, obtainedAt: t0 + .seconds(2), lifetime: .seconds(3600))
        #expect(gate.admit(at: t0 + .seconds(2), replacing: g2) == .proceed)
        let g3 = token(3, obtainedAt: t0 + .seconds(3), lifetime: .seconds(3600))
        #expect(!gate.isLoopGuardTripped)
        #expect(gate.admit(at: t0 + .seconds(3), replacing: g3) == .excessive)
        #expect(gate.isLoopGuardTripped)
        // The window frees a slot 30 s after the first counted start; g3 ages out of
        // prematurity 30 s after it was obtained: the earlier of the two.
        #expect(gate.loopGuardRetryAfter(at: t0 + .seconds(3), replacing: g3) == .seconds(27))
        #expect(gate.admit(at: t0 + .seconds(29), replacing: g3) == .excessive)
        #expect(gate.admit(at: t0 + .seconds(30), replacing: g3) == .proceed)
        #expect(!gate.isLoopGuardTripped, "a counted refresh ends the trip")
    }
}
