import HTTPWire
import Testing

@testable import Runtime

typealias Machine = Connection.StateMachine
typealias Action = Connection.StateMachine.Action

/// Timeouts in loop milliseconds: head 1000, body idle 500, keep-alive 3000, linger 2000;
/// write high water 1000 bytes.
func makeMachine(budgeted: Bool = false, admitted: Bool = true) -> Machine {
    var m = Machine(
        configuration: .init(
            headTimeout: 1000, bodyIdleTimeout: 500, keepAliveTimeout: 3000, writeHighWater: 1000, budgeted: budgeted))
    _ = m.start(admitted: admitted, now: 0)
    return m
}

func request(
    _ method: String = "GET", major: Int = 1, minor: Int = 1, connection: String? = nil, framing: BodyFraming = .none,
    expectsContinue: Bool = false
) -> RequestHead {
    var h = HTTPHeaders()
    h.add(name: "Host", value: "a")
    if let connection { h.add(name: "Connection", value: connection) }
    return RequestHead(
        method: method, target: "/", major: major, minor: minor, headers: h, framing: framing,
        expectsContinue: expectsContinue, keepAlive: FramingRules.keepAlive(headers: h, major: major, minor: minor))
}

/// The text of every write among `actions`.
func writes(_ actions: some Sequence<Action>) -> [String] {
    actions.compactMap { if case .write(let b) = $0 { String(decoding: b, as: UTF8.self) } else { nil } }
}

/// The problem+json response the connection sends for `error`.
func problemResponse(_ error: WireError, withBody: Bool = true) -> String {
    var h = HTTPHeaders()
    h.add(name: "Content-Type", value: Problem.contentType)
    h.add(name: "Content-Length", value: String(error.problem.json.count))
    h.add(name: "Connection", value: "close")
    var out: [UInt8] = []
    ResponseHead(status: error.status, headers: h).serialize(into: &out)
    if withBody { out += error.problem.json }
    return String(decoding: out, as: UTF8.self)
}

/// What starting the linger at `now` returns; reading resumes if it was paused.
func lingerActions(_ now: UInt64, paused: Bool = true) -> [Action] {
    paused
        ? [.shutdownWrite, .resumeReading, .armTimer(.linger, deadline: now + 2000)]
        : [.shutdownWrite, .armTimer(.linger, deadline: now + 2000)]
}

extension Machine {
    /// Reports every write among `actions` as completed with an empty queue, returning what followed.
    mutating func complete(_ actions: Actions, now: UInt64) -> Actions {
        var out = Actions()
        for a in actions { if case .write = a { out += writeCompleted(failed: false, queuedBytes: 0, now: now) } }
        return out
    }

    /// A whole GET exchange answered 200, returning the actions of the response and its write.
    mutating func serve(_ head: RequestHead, now: UInt64) -> Actions {
        _ = bytesReceived(now: now)
        _ = receivedHead(head, body: .buffer(maxBytes: 100), now: now)
        _ = receivedEnd(now: now)
        let r = respond(sequence, status: 200, headers: HTTPHeaders(), body: Array("ok".utf8), now: now)
        return r + complete(r, now: now)
    }
}

@Suite struct ConnectionStateMachineTests {
    // MARK: Start

    @Test func anAdmittedConnectionArmsTheHeadTimerAndReads() {
        var m = Machine(
            configuration: .init(
                headTimeout: 1000, bodyIdleTimeout: 500, keepAliveTimeout: 3000, writeHighWater: 1000, budgeted: false))
        #expect(m.start(admitted: true, now: 7) == [.armTimer(.head, deadline: 1007), .resumeReading])
        #expect(m.phase == .open)
        #expect(m.start(admitted: true, now: 8) == [], "a second start is ignored")
    }

    @Test func aConnectionPastTheLimitGets503ThenLingers() {
        var m = Machine(
            configuration: .init(
                headTimeout: 1000, bodyIdleTimeout: 500, keepAliveTimeout: 3000, writeHighWater: 1000, budgeted: false))
        let a = m.start(admitted: false, now: 0)
        #expect(writes(a) == [problemResponse(WireError(.overloaded, status: 503, "the server is at its connection limit"))])
        #expect(m.phase == .closingAfterFlush)
        #expect(m.writeCompleted(failed: false, queuedBytes: 0, now: 5) == [.resumeWriters] + lingerActions(5))
        #expect(m.phase == .lingering)
    }

    // MARK: Keep-alive

    static let keepAliveCases: [(minor: Int, connection: String?, keepsOpen: Bool)] = [
        (1, nil, true), (1, "keep-alive", true), (1, "close", false), (1, "Close", false), (1, "foo, close", false),
        (0, nil, false), (0, "keep-alive", true), (0, "Keep-Alive", true), (0, "close", false),
    ]

    @Test(arguments: keepAliveCases)
    func keepAliveFollowsTheVersionAndConnectionHeader(_ c: (minor: Int, connection: String?, keepsOpen: Bool)) {
        var m = makeMachine()
        let a = m.serve(request(minor: c.minor, connection: c.connection), now: 10)
        let text = writes(a).joined()
        #expect(text.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(text.contains("Content-Length: 2\r\n"))
        #expect(text.contains("Connection: close\r\n") == !c.keepsOpen)
        if c.keepsOpen {
            #expect(a.contains(.armTimer(.keepAlive, deadline: 3010)))
            #expect(a.contains(.drainPending))
            #expect(m.phase == .open)
            #expect(m.exchange == nil)
        } else {
            #expect(!a.contains(.drainPending), "nothing more is parsed")
            #expect(Array(a.suffix(2)) == lingerActions(10, paused: false), "reading goes on, to see the client leave")
            #expect(m.phase == .lingering)
        }
    }

    @Test func aServerThatIsStoppingAnswersWithConnectionClose() {
        var m = makeMachine()
        m.serverDraining = true
        let a = m.serve(request(), now: 0)
        #expect(writes(a).joined().contains("Connection: close\r\n"))
        #expect(m.phase == .lingering)
    }

    @Test func aServerThatStartsStoppingMidExchangeClosesAfterTheResponse() {
        var m = makeMachine()
        _ = m.receivedHead(request(), body: .buffer(maxBytes: 10), now: 0)
        _ = m.receivedEnd(now: 0)
        m.serverDraining = true
        let a = m.respond(1, status: 200, headers: HTTPHeaders(), body: [], now: 1)
        #expect(!writes(a).joined().contains("Connection: close"), "the head was already promised keep-alive")
        #expect(a.contains(.resetExchange))
        #expect(!a.contains(.drainPending))
        #expect(m.complete(a, now: 2) == [.resumeWriters] + lingerActions(2, paused: false))
    }

    @Test func anIdleKeepAliveConnectionClosesWhenItsTimerFires() {
        var m = makeMachine()
        _ = m.serve(request(), now: 0)
        #expect(m.timer == .keepAlive)
        #expect(m.timerFired(now: 3000) == [.failWriters, .close])
        #expect(m.isClosed)
    }

    @Test func theFirstByteOfTheNextRequestSwitchesKeepAliveToTheHeadTimer() {
        var m = makeMachine()
        _ = m.serve(request(), now: 0)
        #expect(m.bytesReceived(now: 100) == [.armTimer(.head, deadline: 1100), .consumeInput])
        #expect(m.bytesReceived(now: 200) == [.consumeInput], "the head timer is not re-armed by later bytes")
    }

    // MARK: Pipelining

    @Test func pipelinedRequestsWaitForTheResponseBeforeThem() {
        var m = makeMachine()
        _ = m.receivedHead(request(), body: .buffer(maxBytes: 10), now: 0)
        #expect(m.receivedEnd(now: 0) == [.deliverBuffered], "no timer ran: a GET has no body")
        #expect(!m.acceptsRequestBytes, "the next request is not parsed before this one is answered")
        // The next request arrives and is held.
        #expect(m.bytesReceived(now: 5) == [.consumeInput])
        #expect(m.inputHeld(40) == [])
        #expect(m.receivedHead(request(), body: .stream, now: 5) == [], "a head fed out of turn is ignored")
        #expect(m.respond(2, status: 200, headers: HTTPHeaders(), body: [], now: 6) == [], "no answer out of turn")
        let a = m.respond(1, status: 200, headers: HTTPHeaders(), body: [], now: 6)
        #expect(Array(a.dropFirst()) == [.resetExchange, .armTimer(.head, deadline: 1006), .drainPending])
        #expect(m.acceptsRequestBytes)
        #expect(m.pendingDrained(0, now: 7) == [])
        _ = m.receivedHead(request(), body: .buffer(maxBytes: 10), now: 7)
        #expect(m.sequence == 2)
        #expect(m.isCurrent(2) && !m.isCurrent(1))
    }

    @Test func heldInputPastTheLimitPausesReadingUntilParsed() {
        var m = makeMachine()
        #expect(m.inputHeld(64 * 1024) == [])
        #expect(m.inputHeld(64 * 1024 + 1) == [.pauseReading])
        #expect(m.inputHeld(70_000) == [], "already paused")
        #expect(m.pendingDrained(66_000, now: 1) == [], "still too much")
        #expect(m.pendingDrained(10, now: 2) == [.resumeReading])
        #expect(!m.hasNoExchange)
        #expect(m.pendingDrained(0, now: 3) == [])
        #expect(m.hasNoExchange)
    }

    // MARK: Requests

    @Test func aBodyOverTheLimitByItsLengthGets413WithoutReadingIt() {
        var m = makeMachine()
        let a = m.receivedHead(request("POST", framing: .length(11), expectsContinue: true), body: .buffer(maxBytes: 10), now: 0)
        #expect(a.first == .resetExchange)
        #expect(writes(a) == [problemResponse(WireError(.bodyTooLarge, status: 413, "the request body exceeds 10 bytes"))])
        #expect(a.contains(.pauseReading))
        #expect(!a.contains(.deliverBuffered) && !a.contains(.deliverStreaming))
        #expect(!m.acceptsRequestBytes)
        #expect(m.receivedBody(11, now: 1) == [] && m.receivedEnd(now: 1) == [], "nothing after the error is read")
    }

    @Test func expectContinueGets100AndArmsTheBodyTimer() {
        var m = makeMachine()
        let a = m.receivedHead(request("POST", framing: .length(3), expectsContinue: true), body: .buffer(maxBytes: 10), now: 4)
        #expect(a == [.resetExchange, .write(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)), .armTimer(.bodyIdle, deadline: 504)])
    }

    @Test func aBufferedBodyIsKeptUntilItsEndThenDelivered() {
        var m = makeMachine()
        _ = m.receivedHead(request("POST", framing: .chunked), body: .buffer(maxBytes: 10), now: 0)
        #expect(m.receivedBody(6, now: 1) == [.bufferBody(reserve: nil)])
        let over = m.receivedBody(5, now: 2)
        #expect(writes(over) == [problemResponse(WireError(.bodyTooLarge, status: 413, "the request body exceeds 10 bytes"))])
        #expect(m.receivedEnd(now: 3) == [], "a refused body is never delivered")
    }

    @Test func aStreamedBodyIsDeliveredAtTheHeadAndFedAsItArrives() {
        var m = makeMachine()
        let a = m.receivedHead(request("POST", framing: .length(5)), body: .stream, now: 0)
        #expect(a == [.resetExchange, .armTimer(.bodyIdle, deadline: 500), .deliverStreaming])
        #expect(m.receivedBody(5, now: 1) == [.appendToStream])
        #expect(m.receivedEnd(now: 2) == [.cancelTimer, .finishBodyStream])
    }

    @Test func aBodyThatEndsWithinItsBoundIsCheckedThenDeliveredWhole() {
        var m = makeMachine(budgeted: true)
        let a = m.receivedHead(request("POST", framing: .chunked), body: .bufferUpTo(10), now: 0)
        #expect(a == [.resetExchange, .armTimer(.bodyIdle, deadline: 500)], "nothing is handed on at the head")
        #expect(m.receivedBody(6, now: 1) == [.bufferBody(reserve: 6)])
        #expect(m.receivedBody(4, now: 2) == [.bufferBody(reserve: 4)])
        #expect(m.receivedEnd(now: 3) == [.cancelTimer, .deliverBuffered])
    }

    @Test func aBodyWhoseFramingFailsWithinItsBoundIsNeverHandedOn() {
        var m = makeMachine(budgeted: true)
        _ = m.receivedHead(request("POST", framing: .chunked), body: .bufferUpTo(10), now: 0)
        _ = m.receivedBody(3, now: 1)
        let error = WireError(.invalidChunk, status: 400, "bad chunk")
        let a = m.parseFailed(error, now: 2)
        #expect(writes(a) == [problemResponse(error)])
        #expect(!a.contains(.deliverStreaming) && !a.contains(.deliverBuffered))
    }

    @Test func aBodyPastItsBoundGoesOnAsAStreamStartingWithWhatWasRead() {
        var m = makeMachine(budgeted: true)
        _ = m.receivedHead(request("POST", framing: .chunked), body: .bufferUpTo(10), now: 0)
        #expect(m.receivedBody(8, now: 1) == [.bufferBody(reserve: 8)])
        #expect(
            m.receivedBody(5, now: 2) == [.releaseBudget(8), .deliverStreaming, .appendToStream],
            "the budget is given back: the stream holds the bytes and bounds itself")
        #expect(m.receivedBody(5, now: 3) == [.appendToStream])
        #expect(m.receivedEnd(now: 4) == [.cancelTimer, .finishBodyStream])
    }

    @Test func aLengthPastTheBoundStreamsFromTheHead() {
        var m = makeMachine()
        let a = m.receivedHead(request("POST", framing: .length(11)), body: .bufferUpTo(10), now: 0)
        #expect(a == [.resetExchange, .armTimer(.bodyIdle, deadline: 500), .deliverStreaming])
        #expect(m.receivedBody(11, now: 1) == [.appendToStream])
    }

    @Test func aHeadRequestGetsTheLengthWithoutTheBody() {
        var m = makeMachine()
        let text = writes(m.serve(request("HEAD"), now: 0)).joined()
        #expect(text == "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n")
    }

    @Test(arguments: [WireError(.invalidHeaderValue, status: 400, "x"), WireError(.headTooLarge, status: 431, "y")])
    func aParseErrorIsAnsweredWithItsProblemAndTheConnectionLingers(_ error: WireError) {
        var m = makeMachine()
        let a = m.parseFailed(error, now: 3)
        #expect(a == [.write(Array(problemResponse(error).utf8)), .pauseReading])
        #expect(m.complete(a, now: 4) == [.resumeWriters] + lingerActions(4))
        #expect(m.parseFailed(error, now: 5) == [], "a second error is ignored")
    }
}
