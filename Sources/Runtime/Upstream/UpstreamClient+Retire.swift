extension UpstreamClient {
    /// Newer settings replaced this client: from now on it closes every connection (its
    /// libcurl handle and pooled sockets, its own HTTP/1.1 connections) whenever no exchange
    /// is under way, rather than keeping them open for reuse. Exchanges under way finish
    /// normally, and an exchange started later (a replay under the settings a request began
    /// with) opens what it needs again. Call on the loop.
    public func retire() {
        precondition(loop.inEventLoop)
        retired = true
        exchangeEnded()
    }

    /// An exchange ended: a retired client closes everything once nothing is under way, on
    /// the next turn of the loop (never from inside the callbacks that ended it).
    func exchangeEnded() {
        guard retired, !closed, !quietCheckScheduled else { return }
        quietCheckScheduled = true
        let client = LoopBound(self, loop: loop)
        loop.execute {
            let c = client.value
            c.quietCheckScheduled = false
            guard c.retired, !c.closed, c.transfers.isEmpty, c.http1Pools.values.allSatisfy(\.isQuiet) else { return }
            c.close()
        }
    }

    /// Whether the client holds no libcurl handle and no connection (closed, for now or for
    /// good). For tests.
    public var isClosed: Bool {
        precondition(loop.inEventLoop)
        return closed
    }

    /// A retired client that closed sets itself up again for a late exchange.
    func reopen() {
        closed = false
        http1Pools.removeAll()
        lastHTTP1Pool = nil
        multi = nil
        timer = nil
        setupError = nil
        do throws(RuntimeError) {
            try setUp()
        } catch {
            setupError = error
        }
    }
}
