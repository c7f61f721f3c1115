import CLibUV
import Glibc

/// A libuv TCP handle (`uv_tcp_t`): a ``LoopStream`` that can also connect, turn Nagle's
/// algorithm off and name its peer. Used as the upstream client's socket, and for the
/// server's accepted TCP connections (``StreamListener/accept(readBuffer:)``). Heap
/// allocated, freed in its close callback (``LoopHandle``); closing it closes the socket.
final class LoopTCP: LoopStream {
    private var onConnect: ((_ status: Int32) -> Void)?

    /// Creates an unconnected handle on `loop`; reads go into `readBuffer`.
    init(loop: UnsafeMutablePointer<uv_loop_t>, readBuffer: UnsafeMutableRawBufferPointer) throws(RuntimeError) {
        try super.init(uv_tcp_t.self, "uv_tcp_init", readBuffer: readBuffer) { uv_tcp_init(loop, $0) }
    }

    private var tcp: UnsafeMutablePointer<uv_tcp_t> { typed(uv_tcp_t.self) }

    /// Connects to `address`; `done` gets 0 or a libuv error (`UV_ECANCELED` never reaches
    /// it: closing first drops it). Throws when the connection cannot even start (then
    /// `done` never runs).
    func connect(to address: UnsafePointer<sockaddr>, _ done: @escaping (_ status: Int32) -> Void) throws(RuntimeError) {
        guard !isClosing else { throw .libuv(-EINVAL, "uv_tcp_connect") }
        try LoopStream.request(uv_connect_t.self, "uv_tcp_connect") { req in
            uv_tcp_connect(req, tcp, address) { req, status in
                let owner = LoopStream.finished(req, LoopTCP.self) { $0.handle }
                let done = owner.onConnect
                owner.onConnect = nil
                done?(status)
            }
        }
        onConnect = done
        setNoDelay()
    }

    /// Sends small writes at once (`TCP_NODELAY`): small requests and responses wait for
    /// no Nagle delay. A failure costs latency only, never correctness, so it is not acted
    /// on.
    func setNoDelay() {
        guard !isClosing else { return }
        _ = uv_tcp_nodelay(tcp, 1)
    }

    /// `ip:port` of the connected peer, nil when the kernel cannot say (the peer already
    /// left).
    func peerName() -> String? {
        guard !isClosing else { return nil }
        var storage = sockaddr_storage()
        var len = Int32(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_tcp_getpeername(tcp, $0, &len) }
        }
        guard rc == 0 else { return nil }
        return SocketAddress.describe(&storage)
    }

    override func willClose() {
        super.willClose()
        onConnect = nil
    }
}
