import CLibUV
import HTTPWire

/// After `101 Switching Protocols` the client connection is one side of a ``Splice``: reads,
/// writes and the shutdown go to and come from the splice instead of the HTTP state machine.
extension Connection: SpliceEndpoint {
    /// Splices this connection to `upstream` after the upstream answered the current request
    /// with `101`: `head` (the serialised `101`) and the bytes the upstream sent after it go
    /// to the client first, then bytes flow both ways until either side ends.
    /// Returns false, and touches nothing, when the connection cannot switch (the client is
    /// gone, or something of a response was already sent); the caller then closes `upstream`.
    func switchProtocols(
        _ seq: Int, head: [UInt8], upstream: UpstreamTunnel, idleTimeout: Duration,
        onEnd: @escaping (Splice.Outcome) -> Void
    ) -> Bool {
        guard !handlesClosing else { return false }
        let (accepted, actions) = machine.switchProtocols(seq)
        guard accepted else { return false }
        execute(actions)
        tunnelReading = !machine.readingPaused
        let splice = Splice(
            loop: loop, client: self, upstream: upstream, idleTimeout: idleTimeout,
            highWater: context.configuration.writeHighWater, onEnd: onEnd)
        tunnel = splice
        upstream.attach(splice)
        // Bytes the client sent after its request (held as pipelined input) are the new
        // protocol's: they go to the upstream.
        let toUpstream = pending
        pending = []
        splice.start(towardClient: head + upstream.early, towardUpstream: toUpstream)
        return true
    }

    /// A read on the spliced connection: `result` bytes, or a negative libuv code (`UV_EOF`
    /// at the end of the client's input).
    func tunnelRead(_ splice: Splice, _ result: Int, _ bytes: UnsafeRawBufferPointer) {
        if result < 0 {
            splice.readEnded(.client, failed: result != Int(UV_EOF.rawValue))
            return
        }
        guard !bytes.isEmpty else { return }
        splice.received(.client, bytes)
    }

    func spliceStartReading() -> Bool {
        guard !handlesClosing else { return false }
        if tunnelReading { return true }
        tunnelReading = true
        startReading()
        return !handlesClosing
    }

    func spliceStopReading() {
        guard !handlesClosing, tunnelReading else { return }
        tunnelReading = false
        stopReading()
    }

    func spliceWrite(_ bytes: UnsafeRawBufferPointer) -> SpliceWriteResult {
        guard !handlesClosing else { return .failed }
        return send(bytes)
    }

    var spliceQueuedBytes: Int { queuedBytes }

    func spliceShutdownWrite() -> Bool {
        guard !handlesClosing else { return false }
        do throws(RuntimeError) {
            // ``shutdownCompleted(_:)`` tells the splice.
            try socket.shutdown()
            return true
        } catch {
            if failure == nil { failure = error }
            return false
        }
    }

    func spliceClose() {
        tunnel = nil
        abort()
    }
}
