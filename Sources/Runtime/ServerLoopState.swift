import CLibUV
import Glibc

/// One server's listener and connections on one loop. Loop-confined.
final class ServerLoopState {
    let loop: EventLoop
    let context: ServerContext
    private var listener: UnsafeMutablePointer<uv_tcp_t>?
    private var connections: [ObjectIdentifier: Connection] = [:]
    private(set) var closing = false
    private var onDrained: (() -> Void)?
    private var graceTimer: UnsafeMutablePointer<uv_timer_t>?

    init(loop: EventLoop, context: ServerContext) {
        self.loop = loop
        self.context = context
    }

    /// Binds and listens; returns the bound port.
    func listen(host: String, port: Int) throws(UVError) -> Int {
        let tcp = UnsafeMutablePointer<uv_tcp_t>.allocate(capacity: 1)
        let family = host.contains(":") ? AF_INET6 : AF_INET
        var rc = uv_tcp_init_ex(loop.uv, tcp, UInt32(family))
        if rc < 0 {
            tcp.deallocate()
            throw UVError(code: rc, operation: "uv_tcp_init_ex")
        }
        tcp.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        listener = tcp
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
        rc = uv_listen(UnsafeMutablePointer(OpaquePointer(tcp)), context.configuration.backlog) { server, status in
            let state = Unmanaged<ServerLoopState>.fromOpaque(server!.pointee.data).takeUnretainedValue()
            state.accept(status)
        }
        try UVError.check(rc, "listen \(host):\(port)")
        var bound = sockaddr_storage()
        var len = Int32(MemoryLayout<sockaddr_storage>.size)
        rc = withUnsafeMutablePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_tcp_getsockname(tcp, $0, &len) }
        }
        try UVError.check(rc, "uv_tcp_getsockname")
        return SocketAddress.port(&bound)
    }

    private func accept(_ status: Int32) {
        guard status == 0, let listener, !closing else { return }
        let client = UnsafeMutablePointer<uv_tcp_t>.allocate(capacity: 1)
        uv_tcp_init(loop.uv, client)
        if uv_accept(UnsafeMutablePointer(OpaquePointer(listener)), UnsafeMutablePointer(OpaquePointer(client))) != 0 {
            uv_close(UnsafeMutablePointer(OpaquePointer(client))) { h in h!.deallocate() }
            return
        }
        let admitted = context.admit()
        let connection = Connection(loop: loop, context: context, registry: self, tcp: client)
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
