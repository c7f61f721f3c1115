import CLibUV
import Glibc

/// A listening stream socket: TCP (`uv_tcp_t`, with `SO_REUSEPORT`) or a Unix domain
/// socket (`uv_pipe_t`). Heap allocated, freed in its close callback (``LoopHandle``);
/// libuv unlinks a Unix socket's path when its bound handle closes.
///
/// The factories return a listener that listens, or throw and leave nothing open: a
/// listener that fails half-way is closed before the error is thrown.
///
/// ```swift
/// let listener = try StreamListener.tcp(loop: loop.uv, host: "127.0.0.1", port: 0, backlog: 511) { status in … }
/// let port = try listener.boundPort()
/// ```
final class StreamListener: LoopHandle {
    /// Whether it is a Unix domain socket (else TCP).
    let isUnix: Bool
    private var onConnection: ((_ status: Int32) -> Void)?

    private init(tcp loop: UnsafeMutablePointer<uv_loop_t>, family: Int32) throws(RuntimeError) {
        isUnix = false
        try super.init(uv_tcp_t.self, "uv_tcp_init_ex") { uv_tcp_init_ex(loop, $0, UInt32(family)) }
    }

    private init(pipe loop: UnsafeMutablePointer<uv_loop_t>) throws(RuntimeError) {
        isUnix = true
        try super.init(uv_pipe_t.self, "uv_pipe_init") { uv_pipe_init(loop, $0, 0) }
    }

    private var stream: UnsafeMutablePointer<uv_stream_t> { typed(uv_stream_t.self) }

    /// Listens on `host:port` (an IPv4 or IPv6 literal; port 0 picks a free one) with
    /// `SO_REUSEPORT`, so every loop can listen on the same port. `onConnection` receives
    /// libuv's status for each connection waiting to be ``accept()``ed.
    static func tcp(
        loop: UnsafeMutablePointer<uv_loop_t>, host: String, port: Int, backlog: Int32,
        onConnection: @escaping (_ status: Int32) -> Void
    ) throws(RuntimeError) -> StreamListener {
        var addr = sockaddr_storage()
        try SocketAddress.make(host: host, port: port, into: &addr)
        let address = ListenAddress.tcp(host: host, port: port)
        return try configured(StreamListener(tcp: loop, family: host.contains(":") ? AF_INET6 : AF_INET)) {
            listener throws(RuntimeError) in
            try listener.setReusePort()
            let rc = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_tcp_bind(listener.typed(uv_tcp_t.self), $0, 0) }
            }
            try RuntimeError.checkListen(rc, "bind \(address)")
            try listener.listen(backlog, "listen \(address)", onConnection)
        }
    }

    /// Listens on a Unix domain socket at `path` (which must be free: see
    /// ``UnixSocketFile/prepare(_:)``), with the permission bits `mode` set between `bind`
    /// and `listen`, so nobody connects while the umask's mode is in force.
    static func unix(
        loop: UnsafeMutablePointer<uv_loop_t>, path: String, mode: UInt32, backlog: Int32,
        onConnection: @escaping (_ status: Int32) -> Void
    ) throws(RuntimeError) -> StreamListener {
        try configured(StreamListener(pipe: loop)) { listener throws(RuntimeError) in
            try RuntimeError.checkListen(uv_pipe_bind(listener.typed(uv_pipe_t.self), path), "bind unix:\(path)")
            if chmod(path, mode_t(mode)) != 0 {
                throw .listen(-errno, "chmod \(String(mode, radix: 8)) unix:\(path)")
            }
            try listener.listen(backlog, "listen unix:\(path)", onConnection)
        }
    }

    /// Listens on the Unix domain socket another loop's listener bound, given its
    /// descriptor, through a duplicate of it: every loop accepts from the one socket, the
    /// kernel waking the loops waiting on it and one of them taking each connection. The
    /// path stays the bound listener's, and only it unlinks the path when it closes.
    static func sharing(
        descriptor: Int32, loop: UnsafeMutablePointer<uv_loop_t>, backlog: Int32,
        onConnection: @escaping (_ status: Int32) -> Void
    ) throws(RuntimeError) -> StreamListener {
        let copy = dup(descriptor)
        guard copy >= 0 else { throw .system(errno: errno, "dup") }
        let listener: StreamListener
        do throws(RuntimeError) {
            listener = try StreamListener(pipe: loop)
        } catch {
            Glibc.close(copy)
            throw error
        }
        return try configured(listener) { listener throws(RuntimeError) in
            let rc = uv_pipe_open(listener.typed(uv_pipe_t.self), copy)
            if rc < 0 {
                Glibc.close(copy)
                throw .listen(rc, "uv_pipe_open (shared unix listener)")
            }
            try listener.listen(backlog, "listen (shared unix listener)", onConnection)
        }
    }

    /// The listening socket's descriptor, which another loop's listener may share.
    func descriptor() throws(RuntimeError) -> Int32 {
        var fd: uv_os_fd_t = -1
        try RuntimeError.check(uv_fileno(handle, &fd), "uv_fileno")
        return fd
    }

    /// `listener` after `configure` ran on it; closed when that throws.
    private static func configured(
        _ listener: StreamListener, _ configure: (StreamListener) throws(RuntimeError) -> Void
    ) throws(RuntimeError) -> StreamListener {
        do throws(RuntimeError) {
            try configure(listener)
            return listener
        } catch {
            listener.close()
            throw error
        }
    }

    /// libuv 1.44 has no flag for `SO_REUSEPORT`: it is set on the socket before `bind`.
    private func setReusePort() throws(RuntimeError) {
        var fd: uv_os_fd_t = -1
        try RuntimeError.check(uv_fileno(handle, &fd), "uv_fileno")
        var one: Int32 = 1
        if setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, socklen_t(MemoryLayout<Int32>.size)) != 0 {
            throw .system(errno: errno, "setsockopt(SO_REUSEPORT)")
        }
    }

    private func listen(_ backlog: Int32, _ operation: String, _ body: @escaping (Int32) -> Void) throws(RuntimeError) {
        onConnection = body
        let rc = uv_listen(stream, backlog) { server, status in
            LoopHandle.owner(StreamListener.self, server).onConnection?(status)
        }
        try RuntimeError.checkListen(rc, operation)
    }

    /// The port a TCP listener is bound to; 0 for a Unix socket.
    func boundPort() throws(RuntimeError) -> Int {
        guard !isUnix else { return 0 }
        var bound = sockaddr_storage()
        var len = Int32(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_tcp_getsockname(typed(uv_tcp_t.self), $0, &len) }
        }
        try RuntimeError.check(rc, "uv_tcp_getsockname")
        return SocketAddress.port(&bound)
    }

    /// Accepts a waiting connection: a new stream (a ``LoopTCP``, or a ``LoopStream``
    /// over a `uv_pipe_t` for a Unix socket) reading into `readBuffer`, which the caller
    /// owns from then on and must ``LoopHandle/close(then:)``. Throws when the stream
    /// cannot be made or accepted (the client is gone, or the process is out of
    /// descriptors); nothing is left open then.
    func accept(readBuffer: UnsafeMutableRawBufferPointer) throws(RuntimeError) -> LoopStream {
        guard !isClosing else { throw .libuv(-EINVAL, "uv_accept") }
        // Invariant: an initialised handle names its loop (`uv_*_init` set it).
        let loop: UnsafeMutablePointer<uv_loop_t> = handle.pointee.loop!
        let client: LoopStream =
            isUnix
            ? try LoopStream(pipe: loop, readBuffer: readBuffer)
            : try LoopTCP(loop: loop, readBuffer: readBuffer)
        let rc = uv_accept(stream, client.stream)
        if rc < 0 {
            client.close()
            throw .libuv(rc, "uv_accept")
        }
        return client
    }

    override func willClose() {
        onConnection = nil
    }
}
