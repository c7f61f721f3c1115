import AuthCore
import HTTPWire
import Testing

@testable import Gateway

/// One authenticated exchange as a value: every event in every state, the verdict on an
/// answer's head, replays, resends and failures, without a socket or a session.
@Suite struct ExchangeMachineTests {
    typealias Machine = ExchangeMachine
    static let now = MonotonicInstant(offset: .seconds(100))
    static let rejected = Machine.Head(status: 401, wwwAuthenticate: [#"Bearer error="invalid_token""#])

    static func machine(bounded: Bool = false, replayable: Bool = true, maxReplays: Int = 3) -> Machine {
        Machine(
            policy: UpstreamRejectionPolicy(), rule: ReplayRule(maxReplays: maxReplays), bodyReplayable: replayable,
            bounded: bounded, withToken: true)
    }

    static func g(_ n: UInt64) -> TokenGeneration { TokenGeneration(n) }

    /// Takes `m` from idle to sending its first try with a token of `generation` (a slot
    /// first when the route is bounded).
    static func send(_ m: inout Machine, _ generation: UInt64) {
        if m.start() == .acquireSlot(.first) { _ = m.slotGranted() }
        _ = m.tokenObtained(generation: g(generation))
    }

    static func attempt(_ generation: UInt64, replays: Int = 0, replayable: Bool = true, nonceResent: Bool = false)
        -> ReplayRule.Attempt
    {
        var a = ReplayRule.Attempt(generation: g(generation), replaysSoFar: replays, bodyReplayable: replayable)
        a.nonceResent = nonceResent
        return a
    }

    /// The session as it stands: its token of `generation` (nil: logged out), due or not.
    static func session(_ generation: UInt64?, due: Bool = false) -> () -> Machine.SessionNow {
        {
            Machine.SessionNow(
                current: generation.map {
                    TokenSnapshot(generation: g($0), refreshAt: now + (due ? .seconds(-1) : .seconds(60)))
                }, now: now)
        }
    }

    // MARK: the path of one request

    @Test func aFirstTryTakesTheTokenThenSends() {
        var m = Self.machine()
        #expect(m.start() == .takeToken(firstTry: true))
        #expect(m.state == .waitingForToken(.first))
        #expect(m.tokenObtained(generation: Self.g(5)) == .send(Self.attempt(5)))
        #expect(m.attempt == Self.attempt(5))
        #expect(m.headArrived(Machine.Head(status: 200), session: Self.session(5)) == .deliver)
        #expect(m.attemptEnded(.answered) == .finish)
        #expect(m.state == .finished)
    }

    @Test func aBoundedRouteWaitsForASlotBeforeTheToken() {
        var m = Self.machine(bounded: true)
        #expect(m.start() == .acquireSlot(.first))
        #expect(m.state == .waitingForSlot(.first))
        #expect(m.slotGranted() == .takeToken(firstTry: true))
        #expect(m.tokenObtained(generation: Self.g(5)) == .send(Self.attempt(5)))
    }

    @Test func aRejectedTokenIsHeldRefreshedAndReplayedWithTheNewOne() {
        var m = Self.machine()
        Self.send(&m, 5)
        #expect(m.headArrived(Self.rejected, session: Self.session(5)) == .holdForRefresh)
        #expect(m.attemptEnded(.heldForRefresh) == .refresh(after: Self.g(5)))
        #expect(m.state == .waitingForRefresh(after: Self.attempt(5)))
        #expect(m.refreshed(generation: Self.g(6)) == .send(Self.attempt(6, replays: 1)))
        #expect(m.headArrived(Machine.Head(status: 200), session: Self.session(6)) == .deliver)
        #expect(m.attemptEnded(.answered) == .finish)
    }

    @Test func aBoundedReplayWaitsInTheReplayLaneAndTakesTheTokenAgain() {
        var m = Self.machine(bounded: true)
        Self.send(&m, 5)
        #expect(m.attemptEnded(.heldForRefresh) == .refresh(after: Self.g(5)))
        #expect(m.refreshed(generation: Self.g(6)) == .acquireSlot(.replay))
        #expect(m.state == .waitingForSlot(.replay(after: Self.attempt(5))))
        #expect(m.slotGranted() == .takeToken(firstTry: false))
        // The slot took a while: the session's token moved on meanwhile.
        #expect(m.tokenObtained(generation: Self.g(7)) == .send(Self.attempt(7, replays: 1)))
    }

    @Test func aDPoPNonceRequestIsResentOnceWithTheSessionsTokenAndNoRefresh() {
        for bounded in [false, true] {
            var m = Self.machine(bounded: bounded)
            Self.send(&m, 5)
            var nonce = Machine.Head(status: 401, wwwAuthenticate: [#"DPoP error="use_dpop_nonce""#])
            nonce.nonceRequested = true
            #expect(m.headArrived(nonce, session: Self.session(5)) == .holdForNonce)
            if bounded {
                #expect(m.attemptEnded(.heldForNonce) == .acquireSlot(.replay))
                #expect(m.slotGranted() == .takeToken(firstTry: false))
            } else {
                #expect(m.attemptEnded(.heldForNonce) == .takeToken(firstTry: false))
            }
            let resent = Self.attempt(5, nonceResent: true)
            #expect(m.tokenObtained(generation: Self.g(5)) == .send(resent))
            // Asked again: the request is not resent twice; the answer is judged as any other.
            #expect(m.headArrived(nonce, session: Self.session(5)) == .deliver)
            // A rejected token after the resend still refreshes, and the replay keeps the mark.
            #expect(m.headArrived(Self.rejected, session: Self.session(5)) == .holdForRefresh)
            _ = m.attemptEnded(.heldForRefresh)
            if bounded {
                _ = m.refreshed(generation: Self.g(6))
                _ = m.slotGranted()
                #expect(m.tokenObtained(generation: Self.g(6)) == .send(Self.attempt(6, replays: 1, nonceResent: true)))
            } else {
                #expect(m.refreshed(generation: Self.g(6)) == .send(Self.attempt(6, replays: 1, nonceResent: true)))
            }
        }
    }

    @Test func aNonceRequestWithABodyThatCannotGoAgainIsJudgedAsAnAnswer() {
        var m = Self.machine(replayable: false)
        Self.send(&m, 5)
        var nonce = Machine.Head(status: 401, wwwAuthenticate: [#"DPoP error="use_dpop_nonce""#])
        nonce.nonceRequested = true
        #expect(m.headArrived(nonce, session: Self.session(5)) == .deliver)
    }

    @Test func aRefusedProofIsAnsweredByAuthGateWhateverElseTheHeadSays() {
        var m = Self.machine()
        Self.send(&m, 5)
        var head = Self.rejected
        head.proofRefused = true
        head.nonceRequested = true
        #expect(m.headArrived(head, session: Self.session(5)) == .refuseProof)
        #expect(m.attemptEnded(.answered) == .finish)
    }

    @Test func replaysStopAtTheLimit() {
        var m = Self.machine(maxReplays: 2)
        Self.send(&m, 1)
        for n in 1...2 {
            // Each rejected token has been superseded by the time its answer comes.
            #expect(m.headArrived(Self.rejected, session: Self.session(UInt64(n) + 1)) == .holdForRefresh)
            _ = m.attemptEnded(.heldForRefresh)
            #expect(m.refreshed(generation: Self.g(UInt64(n) + 1)) == .send(Self.attempt(UInt64(n) + 1, replays: n)))
        }
        let last = m.headArrived(Self.rejected, session: Self.session(9))
        #expect(last == .passThrough(.replayLimit, refreshInBackground: false))
        #expect(last.extraHeaders[first: "authgate-replay"] == ReplayRule.PassReason.replayLimit.headerValue)
        #expect(m.attemptEnded(.answered) == .finish)
    }

    @Test func aFreshTokenRejectedAgainPassesThrough() {
        var m = Self.machine()
        Self.send(&m, 5)
        _ = m.attemptEnded(.heldForRefresh)
        _ = m.refreshed(generation: Self.g(6))
        #expect(
            m.headArrived(Self.rejected, session: Self.session(6))
                == .passThrough(.currentTokenRejected, refreshInBackground: false))
        // Unless it fell due while the replay was out: then it is refreshed again.
        #expect(m.headArrived(Self.rejected, session: Self.session(6, due: true)) == .holdForRefresh)
        // With no session left, the client learns that it ended.
        #expect(m.headArrived(Self.rejected, session: Self.session(nil)) == .passThrough(.noSession, refreshInBackground: false))
    }

    @Test func aStreamedBodyPassesTheRejectionThroughAndRefreshesInTheBackground() {
        var m = Self.machine(replayable: false)
        Self.send(&m, 5)
        let action = m.headArrived(Self.rejected, session: Self.session(5))
        #expect(action == .passThrough(.bodyStreamed, refreshInBackground: true))
        #expect(action.extraHeaders[first: "authgate-replay"] == ReplayRule.PassReason.bodyStreamed.headerValue)
        #expect(m.attemptEnded(.answered) == .finish)
    }

    @Test func answersThatRejectNoTokenAreDeliveredWithoutAskingTheSession() {
        var m = Self.machine()
        Self.send(&m, 5)
        let heads = [
            Machine.Head(status: 200), Machine.Head(status: 403, wwwAuthenticate: [#"Bearer error="insufficient_scope""#]),
            Machine.Head(status: 401, wwwAuthenticate: [#"Basic realm="downstream""#]),
            Machine.Head(status: 401, wwwAuthenticate: [#"Bearer error="insufficient_scope""#]), Machine.Head(status: 500),
        ]
        for head in heads {
            let action = m.headArrived(head) {
                Issue.record("the session was asked about an answer that rejects no token")
                return Self.session(5)()
            }
            #expect(action == .deliver)
            #expect(action.extraHeaders.fields.isEmpty)
        }
    }

    @Test func failuresEndTheExchangeWithWhatToAnswer() {
        var m = Self.machine()
        _ = m.start()
        #expect(m.tokenFailed() == .fail(.token))
        #expect(m.state == .finished)

        m = Self.machine(bounded: true)
        _ = m.start()
        #expect(m.slotRefused() == .fail(.busy))
        #expect(m.state == .finished)

        // A replay whose refresh failed (or whose wait was cancelled: the client left).
        m = Self.machine()
        Self.send(&m, 5)
        _ = m.attemptEnded(.heldForRefresh)
        #expect(m.refreshFailed() == .fail(.refresh))
        #expect(m.state == .finished)

        // A bounded replay whose token failed after its slot came.
        m = Self.machine(bounded: true)
        Self.send(&m, 5)
        _ = m.attemptEnded(.heldForRefresh)
        _ = m.refreshed(generation: Self.g(6))
        _ = m.slotGranted()
        #expect(m.tokenFailed() == .fail(.refresh))

        // A resend whose token failed: a refresh failure too, not a first token's.
        m = Self.machine()
        Self.send(&m, 5)
        _ = m.attemptEnded(.heldForNonce)
        #expect(m.tokenFailed() == .fail(.refresh))
        // A resend refused a slot is busy, like a first try.
        m = Self.machine(bounded: true)
        Self.send(&m, 5)
        _ = m.attemptEnded(.heldForNonce)
        #expect(m.slotRefused() == .fail(.busy))
    }

    // MARK: every event in every state

    /// One event, by name, applied to a machine; the head is asked as an event too (it moves
    /// nothing, and answers `deliver` outside `sending`).
    enum Event: String, CaseIterable {
        case start, slotGranted, slotRefused, tokenObtained, tokenFailed, refreshed, refreshFailed
        case answered, heldForRefresh, heldForNonce

        func apply(_ m: inout Machine) -> Machine.Action {
            switch self {
            case .start: m.start()
            case .slotGranted: m.slotGranted()
            case .slotRefused: m.slotRefused()
            case .tokenObtained: m.tokenObtained(generation: ExchangeMachineTests.g(9))
            case .tokenFailed: m.tokenFailed()
            case .refreshed: m.refreshed(generation: ExchangeMachineTests.g(9))
            case .refreshFailed: m.refreshFailed()
            case .answered: m.attemptEnded(.answered)
            case .heldForRefresh: m.attemptEnded(.heldForRefresh)
            case .heldForNonce: m.attemptEnded(.heldForNonce)
            }
        }
    }

    /// Every state a machine can be in, each reached through events from a new machine.
    static func everyState() -> [(String, Machine)] {
        func reach(_ bounded: Bool, _ events: [Event]) -> Machine {
            var m = machine(bounded: bounded)
            for e in events { _ = e.apply(&m) }
            return m
        }
        return [
            ("idle", reach(false, [])),
            ("waitingForSlot(first)", reach(true, [.start])),
            ("waitingForSlot(replay)", reach(true, [.start, .slotGranted, .tokenObtained, .heldForRefresh, .refreshed])),
            ("waitingForSlot(resend)", reach(true, [.start, .slotGranted, .tokenObtained, .heldForNonce])),
            ("waitingForToken(first)", reach(false, [.start])),
            (
                "waitingForToken(replay)",
                reach(true, [.start, .slotGranted, .tokenObtained, .heldForRefresh, .refreshed, .slotGranted])
            ),
            ("waitingForToken(resend)", reach(false, [.start, .tokenObtained, .heldForNonce])),
            ("waitingForRefresh", reach(false, [.start, .tokenObtained, .heldForRefresh])),
            ("sending", reach(false, [.start, .tokenObtained])),
            ("finished", reach(false, [.start, .tokenObtained, .answered])),
        ]
    }

    /// Which events each state takes; every other event is late: `none`, nothing changes.
    static let accepted: [String: Set<Event>] = [
        "idle": [.start],
        "waitingForSlot(first)": [.slotGranted, .slotRefused],
        "waitingForSlot(replay)": [.slotGranted, .slotRefused],
        "waitingForSlot(resend)": [.slotGranted, .slotRefused],
        "waitingForToken(first)": [.tokenObtained, .tokenFailed],
        "waitingForToken(replay)": [.tokenObtained, .tokenFailed],
        "waitingForToken(resend)": [.tokenObtained, .tokenFailed],
        "waitingForRefresh": [.refreshed, .refreshFailed],
        "sending": [.answered, .heldForRefresh, .heldForNonce],
        "finished": [],
    ]

    @Test func eventsOutOfTurnChangeNothing() {
        for (name, machine) in Self.everyState() {
            let accepted = Self.accepted[name] ?? []
            for event in Event.allCases where !accepted.contains(event) {
                var m = machine
                #expect(event.apply(&m) == .none, "\(event) in \(name)")
                #expect(m == machine, "\(event) in \(name)")
            }
        }
    }

    @Test func eventsInTurnMoveTheMachine() {
        for (name, machine) in Self.everyState() {
            for event in Self.accepted[name] ?? [] {
                var m = machine
                let action = event.apply(&m)
                #expect(action != .none, "\(event) in \(name)")
                #expect(m.state != machine.state, "\(event) in \(name)")
                // Whatever it did, the machine reaches an end: an answer or a failure.
                switch action {
                case .finish, .fail: #expect(m.state == .finished, "\(event) in \(name)")
                default: #expect(m.state != .finished, "\(event) in \(name)")
                }
            }
        }
    }

    // MARK: a public request

    static func publicMachine(bounded: Bool) -> Machine {
        Machine(policy: UpstreamRejectionPolicy(), rule: ReplayRule(), bodyReplayable: true, bounded: bounded, withToken: false)
    }

    @Test func aPublicRequestIsSentWithoutATokenAndItsAnswerDelivered() {
        var m = Self.publicMachine(bounded: false)
        let first = ReplayRule.Attempt(generation: Self.g(0), replaysSoFar: 0, bodyReplayable: true)
        #expect(m.start() == .send(first))
        #expect(m.state == .sending(first))
        // Even an answer that would reject a session's token: the request carried none.
        let action = m.headArrived(Self.rejected) {
            Issue.record("a public request's answer asked the session")
            return Self.session(5)()
        }
        #expect(action == .deliver)
        #expect(m.attemptEnded(.answered) == .finish)
        #expect(m.state == .finished)
    }

    @Test func aBoundedPublicRequestWaitsForASlotThenSends() {
        var m = Self.publicMachine(bounded: true)
        #expect(m.start() == .acquireSlot(.first))
        #expect(m.slotGranted() == .send(ReplayRule.Attempt(generation: Self.g(0), replaysSoFar: 0, bodyReplayable: true)))
        #expect(m.attemptEnded(.answered) == .finish)

        m = Self.publicMachine(bounded: true)
        _ = m.start()
        #expect(m.slotRefused() == .fail(.busy))
        #expect(m.state == .finished)
    }

    @Test func noEventsMakeAPublicRequestAskForATokenOrARefreshOrSendTwice() {
        // Every sequence of up to five events, on a bounded and an unbounded route: the
        // shell of a public request has no session to ask, and lets the request go at its
        // one send.
        for bounded in [false, true] {
            var frontier = [(Self.publicMachine(bounded: bounded), sends: 0)]
            for _ in 0..<5 {
                var next: [(Machine, sends: Int)] = []
                for (machine, sends) in frontier {
                    for event in Event.allCases {
                        var m = machine
                        let action = event.apply(&m)
                        var sent = sends
                        switch action {
                        case .takeToken, .refresh: Issue.record("\(event) after \(machine.state): \(action)")
                        case .send: sent += 1
                        default: break
                        }
                        #expect(sent <= 1, "\(event) after \(machine.state): a second send")
                        if m != machine { next.append((m, sent)) }
                    }
                }
                frontier = next
            }
        }
    }

    @Test func aHeadOutsideAnAttemptIsDelivered() {
        for (name, machine) in Self.everyState() where name != "sending" {
            #expect(machine.headArrived(Self.rejected, session: Self.session(9)) == .deliver, "\(name)")
        }
    }

    @Test func onlyTheThreeHoldingActionsHoldAnAnswer() {
        #expect(HeldAnswer(.holdForRefresh) == .forRefresh)
        #expect(HeldAnswer(.holdForNonce) == .forNonce)
        #expect(HeldAnswer(.refuseProof) == .proofRefused)
        #expect(HeldAnswer(.deliver) == nil)
        #expect(HeldAnswer(.passThrough(.replayLimit, refreshInBackground: false)) == nil)
        #expect(HeldAnswer(.passThrough(.bodyStreamed, refreshInBackground: true)) == nil)
    }
}
