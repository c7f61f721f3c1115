import AuthCore
import Testing

@Suite struct ReplayRuleTests {
    let now = MonotonicInstant(offset: .seconds(100))
    func snapshot(_ g: UInt64, due: Bool = false) -> TokenSnapshot {
        TokenSnapshot(generation: TokenGeneration(g), refreshAt: now + (due ? .seconds(-1) : .seconds(60)))
    }
    func attempt(_ g: UInt64, replays: Int = 0, replayable: Bool = true) -> ReplayRule.Attempt {
        .init(generation: TokenGeneration(g), replaysSoFar: replays, bodyReplayable: replayable)
    }

    @Test(
        arguments: [
            // (attempt generation, replays so far, current generation, current due, verdict)
            (5, 0, 5, false, ReplayRule.Verdict.replay),  // first rejection of the current token: refresh
            (5, 0, 6, false, .replay),  // a stale 401 on the first try: the newer token
            (6, 1, 6, false, .passThrough(.currentTokenRejected)),  // a fresh token rejected after a refresh
            (6, 1, 7, false, .replay),  // the replay's token was superseded meanwhile (rotation revoked it)
            (6, 1, 6, true, .replay),  // the replay's token expired while it waited
            (7, 2, 9, false, .replay),
            (8, 3, 9, false, .passThrough(.replayLimit)),  // three replays already
            (8, 3, 8, true, .passThrough(.replayLimit)),
        ] as [(UInt64, Int, UInt64, Bool, ReplayRule.Verdict)])
    func rejectionsFollowTheGenerationTable(
        generation: UInt64, replays: Int, current: UInt64, due: Bool, expected: ReplayRule.Verdict
    ) {
        let rule = ReplayRule()
        let verdict = rule.verdict(
            tokenRejected: true, attempt: attempt(generation, replays: replays), current: snapshot(current, due: due), now: now)
        #expect(verdict == expected)
    }

    @Test func answersThatRejectNoTokenAreDeliveredWhateverElseHolds() {
        for replays in 0...5 {
            for replayable in [true, false] {
                for current in [nil, snapshot(1), snapshot(9, due: true)] {
                    let v = ReplayRule().verdict(
                        tokenRejected: false, attempt: attempt(1, replays: replays, replayable: replayable), current: current,
                        now: now)
                    #expect(v == .deliver)
                }
            }
        }
    }

    @Test func aStreamedBodyIsNeverReplayed() {
        for replays in 0...3 {
            for current in [nil, snapshot(1), snapshot(2), snapshot(1, due: true)] {
                let v = ReplayRule().verdict(
                    tokenRejected: true, attempt: attempt(1, replays: replays, replayable: false), current: current, now: now)
                #expect(v == .passThrough(.bodyStreamed))
            }
        }
    }

    @Test func noReplayBeyondTheLimitAndNoneAtAllWithZero() {
        for limit in 0...4 {
            let rule = ReplayRule(maxReplays: limit)
            for replays in 0...6 {
                let v = rule.verdict(tokenRejected: true, attempt: attempt(1, replays: replays), current: snapshot(2), now: now)
                #expect((v == .replay) == (replays < limit), "limit \(limit), replays \(replays)")
            }
        }
    }

    @Test func aLoggedOutSessionIsAskedOnceThenPassedThrough() {
        #expect(ReplayRule().verdict(tokenRejected: true, attempt: attempt(3), current: nil, now: now) == .replay)
        #expect(
            ReplayRule().verdict(tokenRejected: true, attempt: attempt(3, replays: 1), current: nil, now: now)
                == .passThrough(.noSession))
    }

    /// A model of a request meeting a server that rotates (and revokes the previous access
    /// token) k times while the request is in flight: the request is replayed while the
    /// generation advances, each replay with a newer generation, and is answered as soon as
    /// a try carries the current token.
    @Test(arguments: 0...5)
    func everyReplayCarriesANewerGenerationAndRotationsWithinTheLimitNeverReachTheClient(rotations: Int) {
        let rule = ReplayRule()
        var current: UInt64 = 1
        var sent: [UInt64] = []
        var tokenGeneration: UInt64 = 1
        var pendingRotations = rotations
        var outcome: ReplayRule.Verdict?
        while outcome == nil {
            sent.append(tokenGeneration)
            // While this try is in flight, the next rotation happens (if any is left).
            if pendingRotations > 0 {
                current += 1
                pendingRotations -= 1
            }
            let rejected = tokenGeneration != current
            let v = rule.verdict(
                tokenRejected: rejected, attempt: attempt(tokenGeneration, replays: sent.count - 1), current: snapshot(current),
                now: now)
            if v == .replay { tokenGeneration = current } else { outcome = v }
        }
        #expect(zip(sent, sent.dropFirst()).allSatisfy { $0 < $1 }, "generations strictly increase: \(sent)")
        if rotations <= rule.maxReplays {
            #expect(outcome == .deliver)
            #expect(sent.count == rotations + 1)
        } else {
            #expect(outcome == .passThrough(.replayLimit))
            #expect(sent.count == rule.maxReplays + 1)
        }
    }

    @Test func everyPassReasonTellsTheClientInAHeaderValueWithoutControlCharacters() {
        for reason in ReplayRule.PassReason.allCases {
            #expect(!reason.headerValue.isEmpty)
            #expect(reason.headerValue.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F })
        }
    }
}
