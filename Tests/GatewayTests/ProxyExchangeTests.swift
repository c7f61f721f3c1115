import AuthCore
import HTTPWire
import Runtime
import Testing

@testable import Gateway

/// The shell that streams one upstream answer to one client (``ProxyExchange``), driven by
/// hand without sockets: what reaches the client for each head action, the body's
/// backpressure, an upstream failure before and after the head, and what the request hears.
@Suite struct ProxyExchangeTests {
    /// What the exchange wrote to its client, in order.
    final class RecordingClient: ClientResponseSink {
        enum Write: Equatable {
            case head(Int, [String])
            case body(String)
            case end
            case abort
            case problem(Int, String)
        }

        var writes: [Write] = [] {
            didSet { if let last = writes.last { written?(last) } }
        }
        /// Hears each write as it is made.
        var written: ((Write) -> Void)?
        var isWritable = true
        var writableHandler: (() -> Void)?

        func whenWritable(_ handler: @escaping () -> Void) { writableHandler = handler }
        func writeHead(status: Int, headers: HTTPHeaders) {
            writes.append(.head(status, headers.map { "\($0.name): \($0.value)" }))
        }
        func writeBodyNow(_ bytes: UnsafeRawBufferPointer) -> Bool {
            writes.append(.body(String(decoding: bytes, as: UTF8.self)))
            return isWritable
        }
        func end() { writes.append(.end) }
        func abort() { writes.append(.abort) }
        func respond(problem: Problem, headers: HTTPHeaders) { writes.append(.problem(problem.status, problem.type)) }
        func switchProtocols(
            headers: HTTPHeaders, to tunnel: UpstreamTunnel, idleTimeout: Duration, onEnd: @escaping (String) -> Void
        ) -> Bool {
            Issue.record("no upgrade in these tests")
            return false
        }
    }

    /// The request the attempt belongs to: answers each head with `action`, keeps the outcome.
    final class ScriptedOwner: ExchangeAttemptOwner {
        var action: ExchangeMachine.HeadAction
        var heads: [Int] = []
        var outcomes: [ExchangeOutcome] = []
        init(_ action: ExchangeMachine.HeadAction) { self.action = action }
        func decide(status: Int, headers: HTTPHeaders) -> ExchangeMachine.HeadAction {
            heads.append(status)
            return action
        }
        func ended(_ outcome: ExchangeOutcome) { outcomes.append(outcome) }
    }

    /// The upstream transfer: counts the resumes asked of it.
    final class CountingTransfer: UpstreamTransfer {
        var isFinished = false
        var resumes = 0
        func resume() { resumes += 1 }
        func cancel(_ reason: RuntimeError) {}
    }

    struct Rig {
        let client = RecordingClient()
        let owner: ScriptedOwner
        let transfer = CountingTransfer()
        let metrics = GatewayMetrics(sessions: [])
        let exchange: ProxyExchange<RecordingClient, ScriptedOwner>

        init(_ action: ExchangeMachine.HeadAction = .deliver) {
            owner = ScriptedOwner(action)
            exchange = ProxyExchange(
                writer: client, tunnelIdleTimeout: .seconds(1), metrics: metrics, span: nil, runner: owner)
            exchange.transfer = transfer
        }

        func head(_ status: Int, _ fields: [(String, String)] = []) {
            exchange.upstreamHead(status: status, headers: HTTPHeaders(fields))
        }

        @discardableResult
        func body(_ text: String) -> Bool {
            Array(text.utf8).withUnsafeBytes { exchange.upstreamBody($0) }
        }

        func failures(_ kind: RuntimeError.Code) -> Bool {
            metrics.render(sessions: [], process: .init()).contains(
                #"authgate_upstream_failures_total{kind="\#(kind)"} 1"#)
        }
    }

    static func outcome(_ o: ExchangeOutcome?) -> String { o.map { "\($0)" } ?? "none" }

    @Test func aDeliveredAnswerGoesToTheClientWithItsHopFieldsRemoved() {
        let rig = Rig()
        rig.head(200, [("Content-Type", "text/plain"), ("Connection", "close"), ("Keep-Alive", "timeout=5")])
        #expect(rig.body("hello, ") && rig.body("world"))
        rig.exchange.upstreamFinished(nil)
        #expect(
            rig.client.writes == [
                .head(200, ["Content-Type: text/plain", "Via: 1.1 authgate"]), .body("hello, "), .body("world"), .end,
            ])
        #expect(rig.owner.heads == [200])
        guard case .forwarded(200, 12) = rig.owner.outcomes.first else {
            Issue.record("ended \(Self.outcome(rig.owner.outcomes.first))")
            return
        }
        #expect(rig.owner.outcomes.count == 1)
        #expect(rig.exchange.transfer == nil, "the finished transfer is let go")
    }

    @Test(arguments: [
        (ExchangeMachine.HeadAction.holdForRefresh, HeldAnswer.forRefresh),
        (.holdForNonce, .forNonce),
        (.refuseProof, .proofRefused),
    ])
    func aHeldAnswerReachesNoClientAndItsBodyIsDiscarded(action: ExchangeMachine.HeadAction, why: HeldAnswer) {
        let rig = Rig(action)
        rig.head(401, [("WWW-Authenticate", "Bearer error=\"invalid_token\""), ("Content-Length", "5")])
        #expect(rig.body("nope!"), "a held body is taken, so the upstream connection drains and stays usable")
        rig.exchange.upstreamFinished(nil)
        #expect(rig.client.writes.isEmpty, "the runner answers, not the exchange")
        guard case .held(let held, 401) = rig.owner.outcomes.first else {
            Issue.record("ended \(Self.outcome(rig.owner.outcomes.first))")
            return
        }
        #expect(held == why)
    }

    @Test func aHeldAnswerCutShortStillEndsHeld() {
        // The body of a held answer is thrown away: losing its end loses nothing.
        let rig = Rig(.holdForRefresh)
        rig.head(401)
        rig.exchange.upstreamFinished(.upstream(.connectionReset, "reset"))
        #expect(rig.client.writes.isEmpty)
        guard case .held(.forRefresh, 401) = rig.owner.outcomes.first else {
            Issue.record("ended \(Self.outcome(rig.owner.outcomes.first))")
            return
        }
        #expect(!rig.failures(.connectionReset), "a held answer is not an upstream failure")
    }

    @Test func aPassedThroughRejectionTellsTheClientWhy() {
        let rig = Rig(.passThrough(.replayLimit, refreshInBackground: false))
        rig.head(401, [("WWW-Authenticate", "Bearer"), ("AuthGate-Replay", "spoofed by the upstream")])
        rig.exchange.upstreamFinished(nil)
        let replay = ReplayRule.PassReason.replayLimit.headerValue
        #expect(
            rig.client.writes == [
                .head(401, ["WWW-Authenticate: Bearer", "Via: 1.1 authgate", "AuthGate-Replay: \(replay)"]), .end,
            ], "the upstream's own AuthGate-Replay is dropped: only AuthGate says why")
        guard case .forwarded(401, 0) = rig.owner.outcomes.first else {
            Issue.record("ended \(Self.outcome(rig.owner.outcomes.first))")
            return
        }
    }

    @Test func aClientThatFallsBehindPausesTheTransferUntilItCatchesUp() {
        let rig = Rig()
        rig.head(200)
        rig.client.isWritable = false
        #expect(!rig.body("later"), "bytes refused while the client is behind come again after resume")
        #expect(rig.client.writes == [.head(200, ["Via: 1.1 authgate"])], "nothing written past the high-water mark")
        #expect(rig.transfer.resumes == 0)
        rig.client.isWritable = true
        rig.client.writableHandler?()
        #expect(rig.transfer.resumes == 1, "the client caught up: the transfer goes on")
        #expect(rig.body("later"))
        rig.exchange.upstreamFinished(nil)
        guard case .forwarded(200, 5) = rig.owner.outcomes.first else {
            Issue.record("ended \(Self.outcome(rig.owner.outcomes.first))")
            return
        }
        // A client that catches up after the exchange ended resumes nothing.
        rig.client.writableHandler?()
        #expect(rig.transfer.resumes == 1)
    }

    @Test func aFailureBeforeTheHeadIsAnsweredWithItsProblem() {
        let rig = Rig()
        let error = RuntimeError.upstream(.timeout, "the upstream did not answer in 1 s")
        rig.exchange.upstreamFinished(error)
        #expect(rig.client.writes == [.problem(504, "https://authgate.dev/problems/upstream-timeout")])
        #expect(rig.owner.heads.isEmpty)
        guard case .failed(let e) = rig.owner.outcomes.first else {
            Issue.record("ended \(Self.outcome(rig.owner.outcomes.first))")
            return
        }
        #expect(e.code == .timeout)
        #expect(rig.failures(.timeout), "counted by its kind")
    }

    /// The request gives its slot back before the client has the end of the answer, so a
    /// client that sends its next request at once never finds its own last one still in flight.
    @Test func theRequestHearsTheEndBeforeTheClientDoes() {
        let ends: [(String, (Rig) -> Void)] = [
            (
                "whole",
                {
                    $0.head(200)
                    $0.exchange.upstreamFinished(nil)
                }
            ),
            (
                "cut short",
                {
                    $0.head(200)
                    $0.exchange.upstreamFinished(.upstream(.connectionReset, "reset"))
                }
            ),
            ("failed", { $0.exchange.upstreamFinished(.upstream(.timeout, "slow")) }),
        ]
        for (name, end) in ends {
            let rig = Rig()
            var heardFirst: Bool?
            // The owner only: the rig holds the client, which would hold the closure.
            rig.client.written = { [owner = rig.owner] write in
                switch write {
                case .end, .abort, .problem: heardFirst = owner.outcomes.count == 1
                case .head, .body: break
                }
            }
            end(rig)
            rig.client.written = nil
            #expect(heardFirst == true, "\(name): the request heard the end before the client got it")
        }
    }

    @Test func aFailureAfterTheHeadCutsTheClientOff() {
        // The client already has a head: a problem document now would be a wrong message;
        // a closed connection is a truncated one, which it can tell.
        let rig = Rig()
        rig.head(200, [("Content-Length", "10")])
        rig.body("12345")
        rig.exchange.upstreamFinished(.upstream(.connectionReset, "reset"))
        #expect(rig.client.writes == [.head(200, ["Content-Length: 10", "Via: 1.1 authgate"]), .body("12345"), .abort])
        guard case .forwarded(200, 5) = rig.owner.outcomes.first else {
            Issue.record("ended \(Self.outcome(rig.owner.outcomes.first))")
            return
        }
        #expect(!rig.failures(.connectionReset), "the answer was forwarded, in part")
    }
}
