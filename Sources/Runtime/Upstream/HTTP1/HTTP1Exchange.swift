import HTTPWire

/// One exchange on the loop's own HTTP/1.1 client (``HTTP1Pool``): the request, its
/// handler, and the connection serving it once it has one. Loop-confined.
final class HTTP1Exchange: UpstreamTransfer {
    let request: UpstreamRequest
    let head: HTTP1RequestHead
    unowned let pool: HTTP1Pool
    private var handler: (any UpstreamResponseHandler)?
    /// The connection serving the exchange; nil while it waits for one.
    var connection: HTTP1Connection?
    /// Whether the exchange was already sent again after a reused connection turned out
    /// to be closed.
    var retried = false
    private(set) var isFinished = false

    init(request: consuming UpstreamRequest, head: HTTP1RequestHead, pool: HTTP1Pool, handler: any UpstreamResponseHandler) {
        self.request = request
        self.head = head
        self.pool = pool
        self.handler = handler
    }

    deinit {
        // The fields went out in `head`: their storage can serve the next message parsed on
        // this thread (the last reference is this exchange's, so it is reused, not copied).
        request.headers.recycle()
    }

    /// Whether the request can be sent a second time: its body, if any, is in memory.
    var replayable: Bool {
        if case .stream = request.body { return false }
        return true
    }

    /// The handler while the exchange is running.
    var activeHandler: (any UpstreamResponseHandler)? { handler }

    func resume() {
        connection?.resumeDelivery()
    }

    func cancel(_ reason: RuntimeError) {
        guard !isFinished else { return }
        let connection = self.connection
        finish(reason)
        if let connection {
            connection.abandon()
        } else {
            pool.dequeue(self)
        }
    }

    /// The upstream switched protocols: the exchange is over and its handler owns `tunnel`
    /// (closed here when the exchange was cancelled meanwhile).
    func switched(_ headers: HTTPHeaders, _ tunnel: UpstreamTunnel) {
        guard !isFinished, let h = handler else {
            tunnel.close()
            return
        }
        // Only to the protocol the request named: a tunnel to another is not what the client,
        // or the route, agreed to.
        guard let asked = request.headers[first: "upgrade"], let answered = headers[first: "upgrade"],
            FramingRules.trimOWS(answered).caseInsensitiveEquals(FramingRules.trimOWS(asked))
        else {
            tunnel.close()
            finish(.upstream(.invalidResponse, "the upstream switched to a protocol the request did not ask for"))
            return
        }
        isFinished = true
        connection = nil
        handler = nil
        h.upstreamSwitched(headers: headers, tunnel: tunnel)
    }

    /// Ends the exchange; the handler hears `error` (nil: success). Only once.
    func finish(_ error: RuntimeError?) {
        guard !isFinished else { return }
        isFinished = true
        connection = nil
        let h = handler
        handler = nil
        h?.upstreamFinished(error)
    }
}
