import AuthCore
import Testing

/// The device login's polling schedule (RFC 8628 §3.4, §3.5) as a pure value: every outcome
/// of a poll and the action that follows, without a clock or a socket.
@Suite struct DevicePollingTests {
    let t0 = MonotonicInstant(offset: .seconds(100))

    func polling(interval: Duration = .seconds(5), expiresIn: Duration = .seconds(600)) -> DevicePolling {
        DevicePolling(interval: interval, expiresIn: expiresIn, startedAt: t0)
    }

    @Test func theFirstPollComesOneIntervalAfterTheAuthorization() {
        #expect(polling().start(now: t0) == .poll(after: .seconds(5)))
        #expect(polling(interval: .zero).start(now: t0) == .poll(after: .seconds(1)), "interval 0 is no busy loop")
        #expect(polling(expiresIn: .seconds(3)).start(now: t0) == .fail(.expired), "codes that die before the first poll")
    }

    /// (outcome, action) after one poll at t0 + 5 s with a 5 s interval.
    static let table: [(DevicePolling.Outcome, DevicePolling.Action)] = [
        (.issued, .succeed),
        (.refused("authorization_pending"), .poll(after: .seconds(5))),
        (.refused("slow_down"), .poll(after: .seconds(10))),
        (.refused("expired_token"), .fail(.expired)),
        (.refused("access_denied"), .fail(.denied)),
        (.refused("invalid_grant"), .fail(.rejected(code: "invalid_grant"))),
        (.refused("invalid_client"), .fail(.rejected(code: "invalid_client"))),
        (.unusable("malformed_response"), .fail(.rejected(code: "malformed_response"))),
        (.unavailable(retryAfter: nil), .poll(after: .seconds(10))),
        (.unavailable(retryAfter: .seconds(30)), .poll(after: .seconds(30))),
        (.unavailable(retryAfter: .seconds(1)), .poll(after: .seconds(10))),
    ]

    @Test(arguments: table) func eachOutcomeOfAPollLeadsToItsAction(
        outcome: DevicePolling.Outcome, action: DevicePolling.Action
    ) {
        var p = polling()
        #expect(p.next(after: outcome, now: t0 + .seconds(5)) == action)
    }

    @Test func slowDownAddsFiveSecondsToEveryLaterPoll() {
        var p = polling()
        var now = t0 + .seconds(5)
        #expect(p.next(after: .refused("slow_down"), now: now) == .poll(after: .seconds(10)))
        now = now + .seconds(10)
        #expect(p.next(after: .refused("authorization_pending"), now: now) == .poll(after: .seconds(10)))
        #expect(p.next(after: .refused("slow_down"), now: now) == .poll(after: .seconds(15)))
        #expect(p.interval == .seconds(15))
    }

    @Test func failuresInARowBackOffExponentiallyUpToAMinuteAndAnAnswerResetsThem() {
        var p = polling()
        let now = t0 + .seconds(5)
        let waits = (0..<6).map { _ in p.next(after: .unavailable(retryAfter: nil), now: now) }
        #expect(
            waits == [10, 20, 40, 60, 60, 60].map { .poll(after: .seconds($0)) })
        #expect(p.next(after: .refused("authorization_pending"), now: now) == .poll(after: .seconds(5)))
        #expect(p.consecutiveFailures == 0)
        #expect(p.next(after: .unavailable(retryAfter: nil), now: now) == .poll(after: .seconds(10)))
    }

    @Test func noPollIsScheduledAtOrAfterTheCodesExpiry() {
        var p = polling(expiresIn: .seconds(20))
        #expect(p.next(after: .refused("authorization_pending"), now: t0 + .seconds(14)) == .poll(after: .seconds(5)))
        #expect(p.next(after: .refused("authorization_pending"), now: t0 + .seconds(15)) == .fail(.expired))
        #expect(p.next(after: .unavailable(retryAfter: .seconds(60)), now: t0 + .seconds(5)) == .fail(.expired))
    }

    /// (error, outcome): how a failed poll's error is read.
    static let errors: [(AuthError, DevicePolling.Outcome)] = [
        (
            .tokenEndpoint(.oauthError, .transient, status: 400, oauthError: .init(error: "authorization_pending")),
            .refused("authorization_pending")
        ),
        (
            .loginFailed(.tokenEndpoint(.oauthError, .transient, status: 400, oauthError: .init(error: "slow_down"))),
            .refused("slow_down")
        ),
        (
            .tokenEndpoint(.oauthError, .terminal, status: 401, oauthError: .init(error: "invalid_client")),
            .refused("invalid_client")
        ),
        (.tokenEndpoint(.serverError, .transient, status: 503, retryAfter: .seconds(7)), .unavailable(retryAfter: .seconds(7))),
        (.tokenEndpoint(.rateLimited, .transient, status: 429), .unavailable(retryAfter: nil)),
        (.tokenEndpoint(.network, .transient), .unavailable(retryAfter: nil)),
        (.tokenEndpoint(.networkAfterSend, .ambiguous), .unavailable(retryAfter: nil)),
        (.tokenEndpoint(.unexpectedStatus, .transient, status: 403), .unavailable(retryAfter: nil)),
        (.tokenEndpoint(.clientCredentialsUnusable, .transient), .unavailable(retryAfter: nil)),
        (.tokenEndpoint(.unexpectedStatus, .terminal, status: 400), .unusable("unexpected_status")),
        (.tokenEndpoint(.malformedResponse, .ambiguous, status: 200), .unusable("malformed_response")),
        (.tokenEndpoint(.invalidTokenSyntax, .ambiguous, status: 200), .unusable("invalid_token_syntax")),
    ]

    @Test(arguments: errors) func aFailedPollsErrorIsReadAsItsOutcome(error: AuthError, outcome: DevicePolling.Outcome) {
        #expect(DevicePolling.outcome(of: error) == outcome)
    }

    @Test func aTakeoverAdoptsTheLongerIntervalAnotherProcessReachedAndNeverAShorterOne() {
        let start = MonotonicInstant(offset: .zero)
        var polling = DevicePolling(interval: .seconds(5), expiresIn: .seconds(600), startedAt: start)
        polling.adopt(interval: .seconds(15))
        #expect(polling.start(now: start) == .poll(after: .seconds(15)))
        polling.adopt(interval: .seconds(5))
        #expect(polling.interval == .seconds(15))
    }
}
