import HTTPWire
import Testing

@testable import Runtime

/// Whole and streamed responses: framing, the held head, and what follows their end.
@Suite struct ConnectionStateMachineResponseTests {
    /// A machine whose request 1 (`head`) is read to its end.
    func answering(_ head: RequestHead) -> Machine {
        var m = makeMachine()
        _ = m.receivedHead(head, body: .buffer(maxBytes: 10), now: 0)
        _ = m.receivedEnd(now: 0)
        return m
    }

    /// The actions of writing `text` as body bytes, as the shell sends them: a
    /// ``Machine/Action/writeInput`` is `text` itself.
    func body(_ m: inout Machine, _ text: String) -> Machine.Actions {
        let bytes = Array(text.utf8)
        var out = Machine.Actions()
        for a in bytes.withUnsafeBytes({ m.writeBody(1, $0) }) { out.append(a == .writeInput ? .write(bytes) : a) }
        return out
    }

    @Test func aWholeResponseReplacesTheFramingHeadersItWasGiven() {
        var m = answering(request())
        var h = HTTPHeaders()
        h.add(name: "Content-Length", value: "99")
        h.add(name: "Transfer-Encoding", value: "chunked")
        h.add(name: "Connection", value: "keep-alive")
        h.add(name: "X-A", value: "1")
        let a = m.respond(1, status: 200, headers: h, body: Array("hi".utf8), now: 0)
        #expect(writes(a) == ["HTTP/1.1 200 OK\r\nX-A: 1\r\nContent-Length: 2\r\n\r\nhi"])
    }

    @Test func aStreamedHeadDropsTheFramingFieldsItWasGivenAndKeepsItsLength() {
        var h = HTTPHeaders()
        h.add(name: "transfer-ENCODING", value: "gzip, chunked")
        h.add(name: "X-A", value: "1")
        h.add(name: "CONNECTION", value: "keep-alive")
        var withLength = h
        withLength.add(name: "content-length", value: "3")
        var m = answering(request())
        _ = m.writeHead(1, status: 200, headers: withLength)
        #expect(writes(m.flushHeldHead()) == ["HTTP/1.1 200 OK\r\nX-A: 1\r\ncontent-length: 3\r\n\r\n"])
        var n = answering(request())
        _ = n.writeHead(1, status: 200, headers: h)
        #expect(writes(n.flushHeldHead()) == ["HTTP/1.1 200 OK\r\nX-A: 1\r\nTransfer-Encoding: chunked\r\n\r\n"])
    }

    @Test(arguments: [204, 304])
    func aBodylessStatusGetsNoLengthAndNoBody(_ status: Int) {
        var m = answering(request())
        let a = m.respond(1, status: status, headers: HTTPHeaders(), body: Array("x".utf8), now: 0)
        #expect(writes(a) == ["HTTP/1.1 \(status) \(ResponseHead.reason(for: status))\r\n\r\n"])
    }

    @Test func aStreamedHeadIsHeldAndLeavesWithTheFirstBodyBytes() {
        var m = answering(request())
        #expect(m.writeHead(1, status: 200, headers: HTTPHeaders()) == [.scheduleHeadFlush])
        #expect(m.isStreaming(1))
        #expect(writes(body(&m, "abc")) == ["HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n"])
        #expect(m.flushHeldHead() == [], "already sent")
        #expect(writes(body(&m, "")) == [], "an empty chunk would end the body")
        let end = m.end(1, now: 1)
        #expect(writes(end) == ["0\r\n\r\n"])
        #expect(end.contains(.drainPending), "kept alive")
    }

    @Test func aStreamedHeadLeavesAtTheEndOfTheLoopTurnWithoutBody() {
        var m = answering(request())
        _ = m.writeHead(1, status: 200, headers: HTTPHeaders())
        #expect(writes(m.flushHeldHead()) == ["HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"])
        #expect(m.flushHeldHead() == [])
    }

    @Test func aStreamedResponseWithALengthIsSentAsItIs() {
        var m = answering(request())
        var h = HTTPHeaders()
        h.add(name: "Content-Length", value: "3")
        _ = m.writeHead(1, status: 200, headers: h)
        #expect(writes(body(&m, "abc")) == ["HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc"])
        #expect(writes(m.end(1, now: 0)) == [])
    }

    @Test func anHTTP10StreamedResponseWithoutLengthIsDelimitedByTheClose() {
        var m = answering(request(minor: 0, connection: "keep-alive"))
        _ = m.writeHead(1, status: 200, headers: HTTPHeaders())
        #expect(writes(body(&m, "abc")) == ["HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nabc"])
        let end = m.end(1, now: 0)
        #expect(writes(end) == [])
        #expect(m.phase == .closingAfterFlush)
        #expect(m.writeCompleted(failed: false, queuedBytes: 0, now: 5) == [.resumeWriters] + lingerActions(5, paused: false))
    }

    @Test func aHeadRequestsStreamedResponseHasNoBody() {
        var m = answering(request("HEAD"))
        _ = m.writeHead(1, status: 200, headers: HTTPHeaders())
        #expect(body(&m, "abc") == [])
        #expect(writes(m.end(1, now: 0)) == ["HTTP/1.1 200 OK\r\n\r\n"], "no chunked coding for a body never sent")
    }

    @Test func bodyBytesForAnotherRequestAreIgnored() {
        var m = answering(request())
        _ = m.writeHead(1, status: 200, headers: HTTPHeaders())
        let stale = Array("x".utf8).withUnsafeBytes { m.writeBody(2, $0) }
        #expect(stale == [])
        #expect(!m.isStreaming(2))
        #expect(m.end(2, now: 0) == [])
    }

    @Test func writesAreCountedUntilTheyComplete() {
        var m = answering(request())
        _ = m.writeHead(1, status: 200, headers: HTTPHeaders())
        _ = body(&m, "a")
        _ = body(&m, "b")
        #expect(m.writesInFlight == 2)
        #expect(!m.runsWritableHandlerNow(queuedBytes: 0))
        _ = m.writeCompleted(failed: false, queuedBytes: 0, now: 0)
        _ = m.writeCompleted(failed: false, queuedBytes: 0, now: 0)
        #expect(m.runsWritableHandlerNow(queuedBytes: 0))
        #expect(!m.runsWritableHandlerNow(queuedBytes: 1001))
    }
}

struct ConnectionSwitchProtocolsTests {
    private func machineWithEndedRequest() -> Machine {
        var m = makeMachine()
        _ = m.receivedHead(request(), body: .buffer(maxBytes: 0), now: 1)
        _ = m.receivedEnd(now: 1)
        return m
    }

    @Test func aReadRequestSwitchesAndTheTimerStops() {
        var m = machineWithEndedRequest()
        let (accepted, actions) = m.switchProtocols(1)
        #expect(accepted)
        #expect(actions == [])  // the timer was already stopped when the request ended
        #expect(m.phase == .tunnel)
        #expect(m.exchange?.response == .done)
        // The HTTP side is finished: no response, no new request is taken.
        #expect(m.respond(1, status: 200, headers: HTTPHeaders(), body: [], now: 2) == [])
        #expect(!m.acceptsRequestBytes)
    }

    @Test func aSwitchIsRefusedOnceAResponseBeganOrForAnotherRequest() {
        var m = machineWithEndedRequest()
        _ = m.writeHead(1, status: 200, headers: HTTPHeaders())
        #expect(!m.switchProtocols(1).accepted)
        var n = machineWithEndedRequest()
        #expect(!n.switchProtocols(2).accepted)
        var o = makeMachine()
        _ = o.receivedHead(request(), body: .stream, now: 1)
        #expect(!o.switchProtocols(1).accepted)  // the request is not read to its end
        var p = machineWithEndedRequest()
        _ = p.abort()
        #expect(!p.switchProtocols(1).accepted)
    }

    @Test func closingATunnelConnectionNotifiesNothingOfTheDoneExchange() {
        var m = machineWithEndedRequest()
        _ = m.switchProtocols(1)
        let actions = m.abort()
        #expect(actions == [.failWriters, .close])
    }
}
