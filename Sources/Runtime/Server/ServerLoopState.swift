import CLibUV
import Glibc

/// One server's listener (TCP or Unix domain socket) and its connections on one loop.
/// Loop-confined.
final class ServerLoopState {
    let loop: EventLoop
    let context: ServerContext
    /// A `uv_tcp_t` or a `uv_pipe_t`, as a stream.
    private var listener: UnsafeMutablePointer<uv_stream_t>?
    private var listenerIsUnix = false
    private var connections: [ObjectIdentifier: Connection] = [:]
    private(set) var closing = false
    private var onDrained: (() -> Void)?
    private var graceTimer: UnsafeMutablePointer<uv_timer_t>?

    init(loop: EventLoop, context: ServerContext) {
        self.loop = loop
        self.context = context
    }

    /// Binds and listens; returns the bound port (0 for a Unix socket).
    func listen(_ address: ListenAddress) throws(UVError) -> Int {
        switch address {
        case .tcp(let host, let port): try listenTCP(host: host, port: port)
        case .unix(let path, let mode): try listenUnix(path: path, mode: mode)
        }
    }

    private func listenTCP(host: String, port: Int) throws(UVError) -> Int {
        let tcp = UnsafeMutablePointer<uv_tcp_t>.allocate(capacity: 1)
        let family = host.contains(":") ? AF_INET6 : AF_INET
        var rc = uv_tcp_init_ex(loop.uv, tcp, UInt32(family))
        if rc < 0 {
            tcp.deallocate()
            throw UVError(code: rc, operation: "uv_tcp_init_ex")
        }
        adopt(UnsafeMutablePointer(OpaquePointer(tcp)), unix: false)
        // libuv 1.44 has no flag for SO_REUSEPORT: set it on the socket before bind.
        var fd: uv_os_fd_t = -1
        rc = uv_fileno(UnsafeMutablePointer(OpaquePointer(tcp)), &fd)
        try UVError.check(rc, "uv_fileno")
        var one: Int32 = 1
        if setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, socklen_t(MemoryLayout<Int32>.size)) != 0 {
            throw UVError(code: -errno, operation: "setsockopt(SO_REUSEPORT)")
        }
        var addr = sockaddr_storage()
        try SocketAddress.make(host: host, port: port, into: &addr)
        rc = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_tcp_bind(tcp, $0, 0) } }
        try UVError.check(rc, "bind \(host):\(port)")
        try startListening("listen \(host):\(port)")
        var bound = sockaddr_storage()
        var len = Int32(MemoryLayout<sockaddr_storage>.size)
        rc = withUnsafeMutablePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_tcp_getsockname(tcp, $0, &len) }
        }
        try UVError.check(rc, "uv_tcp_getsockname")
        return SocketAddress.port(&bound)
    }

    /// Binds a Unix domain socket: a stale socket file is removed first (``UnixSocketFile``),
    /// and the mode is set before `listen`, so nobody connects while it is wider. libuv
    /// unlinks the path when the bound handle closes (at shutdown, or after a failed start).
    private func listenUnix(path: String, mode: UInt32) throws(UVError) -> Int {
        try UnixSocketFile.prepare(path)
        let pipe = UnsafeMutablePointer<uv_pipe_t>.allocate(capacity: 1)
        var rc = uv_pipe_init(loop.uv, pipe, 0)
        if rc < 0 {
            pipe.deallocate()
            throw UVError(code: rc, operation: "uv_pipe_init")
        }
        adopt(UnsafeMutablePointer(OpaquePointer(pipe)), unix: true)
        rc = uv_pipe_bind(pipe, path)
        try UVError.check(rc, "bind unix:\(path)")
        if chmod(path, mode_t(mode)) != 0 {
            throw UVError(code: -errno, operation: "chmod \(String(mode, radix: 8)) unix:\(path)")
        }
        try startListening("listen unix:\(path)")
        return 0
    }

    private func adopt(_ handle: UnsafeMutablePointer<uv_stream_t>, unix: Bool) {
        handle.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        listener = handle
        listenerIsUnix = unix
    }

    private func startListening(_ operation: String) throws(UVError) {
        guard let listener else { throw UVError(code: -EINVAL, operation: operation) }
        let rc = uv_listen(listener, context.configuration.backlog) { server, status in
            let state = Unmanaged<ServerLoopState>.fromOpaque(server!.pointee.data).takeUnretainedValue()
            state.accept(status)
        }
        try UVError.check(rc, operation)
    }

    private func accept(_ status: Int32) {
        guard status == 0, let listener, !closing else { return }
        let client: UnsafeMutablePointer<uv_stream_t>
        let rc: Int32
        if listenerIsUnix {
            let pipe = UnsafeMutablePointer<uv_pipe_t>.allocate(capacity: 1)
            rc = uv_pipe_init(loop.uv, pipe, 0)
            client = UnsafeMutablePointer(OpaquePointer(pipe))
        } else {
            let tcp = UnsafeMutablePointer<uv_tcp_t>.allocate(capacity: 1)
            rc = uv_tcp_init(loop.uv, tcp)
            client = UnsafeMutablePointer(OpaquePointer(tcp))
        }
        if rc < 0 {
            // Not initialised, so not on the loop: nothing to close.
            client.deallocate()
            return
        }
        if uv_accept(listener, client) != 0 {
            uv_close(UnsafeMutablePointer(OpaquePointer(client))) { h in h!.deallocate() }
            return
        }
        let admitted = context.admit()
        let connection = Connection(loop: loop, context: context, registry: self, stream: client, isTCP: !listenerIsUnix)
        connections[ObjectIdentifier(connection)] = connection
        connection.start(admitted: admitted)
    }

    func remove(_ connection: Connection) {
        connections[ObjectIdentifier(connection)] = nil
        if closing && connections.isEmpty { finishDrain() }
    }

    /// Stops accepting, closes idle connections, lets busy ones finish their response,
    /// and force-closes what is left after `grace`. Calls `done` when nothing is open.
    func shutdown(grace: Duration, done: @escaping () -> Void) {
        guard !closing else { return }
        closing = true
        onDrained = done
        if let listener {
            self.listener = nil
            uv_close(UnsafeMutablePointer(OpaquePointer(listener))) { h in h!.deallocate() }
        }
        for c in connections.values where c.isIdle { c.close() }
        if connections.isEmpty {
            finishDrain()
            return
        }
        let t = UnsafeMutablePointer<uv_timer_t>.allocate(capacity: 1)
        uv_timer_init(loop.uv, t)
        t.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        graceTimer = t
        uv_timer_start(t, { t in
            let state = Unmanaged<ServerLoopState>.fromOpaque(t!.pointee.data).takeUnretainedValue()
            for c in state.connections.values { c.abort() }
        }, grace.milliseconds, 0)
    }

    private func finishDrain() {
        if let t = graceTimer {
            graceTimer = nil
            uv_timer_stop(t)
            uv_close(UnsafeMutablePointer(OpaquePointer(t))) { h in h!.deallocate() }
        }
        let done = onDrained
        onDrained = nil
        done?()
    }
}
