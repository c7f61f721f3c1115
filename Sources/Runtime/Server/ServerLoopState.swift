import CLibUV
import Glibc

/// One server's listener (TCP or Unix domain socket) and its connections on one loop.
/// Loop-confined.
final class ServerLoopState {
    let loop: EventLoop
    let context: ServerContext
    private var listener: StreamListener?
    private var connections: [ObjectIdentifier: Connection] = [:]
    private(set) var closing = false
    private var onDrained: (() -> Void)?
    private var graceTimer: LoopTimer?

    init(loop: EventLoop, context: ServerContext) {
        self.loop = loop
        self.context = context
    }

    /// Binds and listens; returns the bound port (0 for a Unix socket).
    func listen(_ address: ListenAddress) throws(RuntimeError) -> Int {
        let backlog = context.configuration.backlog
        let onConnection: (Int32) -> Void = { [weak self] status in self?.accept(status) }
        let listener: StreamListener
        switch address {
        case .tcp(let host, let port):
            listener = try StreamListener.tcp(
                loop: loop.uv, host: host, port: port, backlog: backlog, onConnection: onConnection)
        case .unix(let path, let mode):
            // A stale socket file is removed first; libuv unlinks the path when the bound
            // handle closes (at shutdown, or after a failed start).
            try UnixSocketFile.prepare(path)
            listener = try StreamListener.unix(
                loop: loop.uv, path: path, mode: mode, backlog: backlog, onConnection: onConnection)
        }
        self.listener = listener
        return try listener.boundPort()
    }

    /// Listens on the Unix domain socket whose listening `descriptor` another loop's state
    /// bound (``StreamListener/sharing(descriptor:loop:backlog:onConnection:)``).
    func listen(sharing descriptor: Int32) throws(RuntimeError) {
        listener = try StreamListener.sharing(
            descriptor: descriptor, loop: loop.uv, backlog: context.configuration.backlog,
            onConnection: { [weak self] status in self?.accept(status) })
    }

    /// The listening socket's descriptor, for the other loops to share a Unix socket.
    func listenerDescriptor() throws(RuntimeError) -> Int32 {
        guard let listener else { throw .listen(-EBADF, "listen (shared unix listener)") }
        return try listener.descriptor()
    }

    private func accept(_ status: Int32) {
        guard status == 0, let listener, !closing else { return }
        // A connection that cannot be accepted (the client left, no descriptor left) is
        // dropped; the listener keeps serving the others.
        guard let client = try? listener.accept(readBuffer: loop.readBuffer) else { return }
        let admitted = context.admit()
        let connection = Connection(loop: loop, context: context, registry: self, socket: client)
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
        listener?.close()
        listener = nil
        for c in connections.values where c.isIdle { c.close() }
        if connections.isEmpty {
            finishDrain()
            return
        }
        let forceClose = { [weak self] in
            guard let self else { return }
            for c in self.connections.values { c.abort() }
        }
        do throws(RuntimeError) {
            let timer = try LoopTimer(loop: loop.uv)
            graceTimer = timer
            try timer.start(after: grace.milliseconds, forceClose)
        } catch {
            // Without a timer there is no grace period to wait for.
            forceClose()
        }
    }

    private func finishDrain() {
        graceTimer?.close()
        graceTimer = nil
        let done = onDrained
        onDrained = nil
        done?()
    }
}
