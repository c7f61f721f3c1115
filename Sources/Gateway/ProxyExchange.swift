import HTTPWire
import Runtime

/// Streams one upstream response to one client, with backpressure both ways:
/// when the client falls behind, the upstream transfer pauses until it catches up.
/// Loop-confined.
final class ProxyExchange: UpstreamResponseHandler {
    let writer: ResponseWriter
    var transfer: UpstreamTransfer?
    private var headSent = false
    private let onFinish: ((Int, UpstreamError?) -> Void)?
    private var status = 0

    init(writer: ResponseWriter, onFinish: ((Int, UpstreamError?) -> Void)? = nil) {
        self.writer = writer
        self.onFinish = onFinish
    }

    func upstreamHead(status: Int, headers: HTTPHeaders) {
        headSent = true
        self.status = status
        writer.writeHead(status: status, headers: ForwardedHeaders.clientResponse(headers))
    }

    func upstreamBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard writer.isWritable else {
            writer.whenWritable { [weak self] in self?.transfer?.resume() }
            return false
        }
        _ = writer.writeBodyNow(bytes)
        return true
    }

    func upstreamFinished(_ error: UpstreamError?) {
        transfer = nil
        if let error {
            if headSent {
                writer.abort()
            } else {
                writer.respond(problem: error.problem)
            }
        } else {
            writer.end()
        }
        onFinish?(error?.status ?? status, error)
    }
}
