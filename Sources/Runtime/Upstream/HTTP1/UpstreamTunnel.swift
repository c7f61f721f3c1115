import CLibUV

/// An upstream connection that answered an upgrade request with `101 Switching Protocols`,
/// handed over by the loop's HTTP/1.1 client (``UpstreamResponseHandler/upstreamSwitched(headers:tunnel:)``).
/// It no longer speaks HTTP and never goes back to a pool: pass it to
/// ``ResponseWriter/switchProtocols(headers:to:idleTimeout:onEnd:)`` to splice it to the
/// client, or ``close()`` it. Loop-confined.
public final class UpstreamTunnel: SpliceEndpoint {
    private let tcp: LoopTCP
    /// Bytes the upstream sent after the `101` head, in the same read.
    let early: [UInt8]
    private weak var splice: Splice?
    private var closed = false

    init(tcp: LoopTCP, early: [UInt8]) {
        self.tcp = tcp
        self.early = early
        tcp.stopReading()
        // The callbacks replace the HTTP/1.1 connection's; closing drops them, so
        // `UV_ECANCELED` never reaches them.
        tcp.onRead = { [weak self] n, bytes in
            guard let self, let splice = self.splice else { return }
            if n < 0 {
                splice.readEnded(.upstream, failed: n != Int(UV_EOF.rawValue))
            } else {
                splice.received(.upstream, bytes)
            }
        }
        tcp.onWriteCompleted = { [weak self] status in
            self?.splice?.writeCompleted(.upstream, failed: status < 0)
        }
        tcp.onShutdownCompleted = { [weak self] status in
            self?.splice?.shutdownCompleted(.upstream, failed: status < 0)
        }
    }

    /// Joins `splice` as its upstream side.
    func attach(_ splice: Splice) {
        self.splice = splice
    }

    /// Closes the connection (when it is not spliced, or to end the splice from outside).
    public func close() {
        guard !closed else { return }
        closed = true
        let s = splice
        splice = nil
        tcp.close()
        s?.closedOutside(.upstream)
    }

    func spliceStartReading() -> Bool {
        !closed && (try? tcp.startReading()) != nil
    }

    func spliceStopReading() {
        tcp.stopReading()
    }

    func spliceWrite(_ bytes: UnsafeRawBufferPointer) -> SpliceWriteResult {
        guard !closed else { return .failed }
        do throws(RuntimeError) {
            return try tcp.write(bytes) ? .sent : .queued
        } catch {
            return .failed
        }
    }

    var spliceQueuedBytes: Int { tcp.queuedBytes }

    func spliceShutdownWrite() -> Bool {
        !closed && (try? tcp.shutdown()) != nil
    }

    func spliceClose() {
        splice = nil
        close()
    }
}
