import CLibUV
import HTTPWire

/// Sending a request body the client is still streaming, as the socket takes it.
extension HTTP1Connection {
    /// Sends what the client's body stream holds while the socket's queue is short; waits
    /// for the stream (``BodyStream/notifyWhenReadable(_:)``) or a write completion for more.
    func pumpBody() {
        while let stream = streamBody, isBusy, tcp.queuedBytes < 256 * 1024 {
            let chunked = exchange?.head.framing == .chunked
            // Room before the data for a chunk-size line, after it for the CRLF.
            let scratch = pool.scratch
            let lead = 18
            let room = UnsafeMutableRawBufferPointer(rebasing: scratch[lead..<(scratch.count - 2)])
            do throws(RuntimeError) {
                switch stream.readNow(into: room) {
                case .bytes(let n):
                    machine.bodyProgressed(now: now)
                    guard chunked else {
                        try tcp.write(UnsafeRawBufferPointer(rebasing: scratch[lead..<(lead + n)]))
                        continue
                    }
                    let size = Array(String(n, radix: 16).utf8) + [0x0D, 0x0A]
                    let start = lead - size.count
                    UnsafeMutableRawBufferPointer(rebasing: scratch[start..<lead]).copyBytes(from: size)
                    scratch[lead + n] = 0x0D
                    scratch[lead + n + 1] = 0x0A
                    try tcp.write(UnsafeRawBufferPointer(rebasing: scratch[start..<(lead + n + 2)]))
                case .end:
                    streamBody = nil
                    if chunked { try send(ChunkedEncoding.terminator) }
                    machine.requestWritten()
                case .empty:
                    let loop = pool.client.loop
                    stream.notifyWhenReadable { [weak self] in
                        guard let self else { return }
                        let bound = LoopBound(self, loop: loop)
                        loop.execute { bound.value.pumpBody() }
                    }
                    return
                case .failed:
                    execute(machine.bodyFailed())
                    return
                }
            } catch {
                inputEnded(error.systemCode ?? UV_ECONNRESET.rawValue, writing: true)
                return
            }
        }
    }

    /// A queued write completed: a failure ends the exchange; else the body goes on.
    func writeCompleted(_ status: Int32) {
        guard exchange != nil else { return }
        execute(machine.writeCompleted(status: status, parserStarted: parser.started, replayable: replayable, now: now))
    }
}
