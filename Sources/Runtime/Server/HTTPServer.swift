import Dispatch
import Locking
import Synchronization

/// An HTTP/1.1 server: one listener per loop on the same port (`SO_REUSEPORT`), so the
/// kernel spreads connections across loops and each connection stays on one thread.
///
/// On a Unix domain socket (``ListenAddress/unix(path:mode:)``) the group's first loop binds
/// the path and every other loop listens on a duplicate of that socket, so connections are
/// spread across the loops there too (the kernel hands each to one of the loops waiting).
/// A stale socket file left by a crash is replaced, a live one is not
/// (``StaleSocketRule``); the file is removed at shutdown.
///
/// ```swift
/// let group = try EventLoopGroup()
/// let server = HTTPServer(configuration: .init(port: 8080), group: group, responder: MyResponder())
/// try server.start()
/// // …
/// server.shutdown()
/// group.shutdown()
/// ```
public final class HTTPServer: Sendable {
    /// The configuration it was created with.
    public let configuration: HTTPServerConfiguration
    private let group: EventLoopGroup
    private let context: ServerContext
    private let states: Locked<[LoopBound<ServerLoopState>]> = Locked([])
    private let boundPort = Atomic<Int>(0)

    /// Creates a server; nothing listens until ``start()``.
    public init(configuration: HTTPServerConfiguration, group: EventLoopGroup, responder: any HTTPResponder) {
        self.configuration = configuration
        self.group = group
        self.context = ServerContext(configuration: configuration, responder: responder)
    }

    /// The port listened on (useful with port 0); 0 for a Unix socket.
    public var port: Int { boundPort.load(ordering: .relaxed) }

    /// The address listened on, with the bound port for TCP, once started.
    public var address: ListenAddress {
        switch configuration.address {
        case .tcp(let host, _): .tcp(host: host, port: port)
        case .unix: configuration.address
        }
    }

    /// Connections open now.
    public var activeConnections: Int { context.activeConnections }

    /// Binds every loop's listener (for a Unix socket: the first loop binds, the others
    /// share its socket). Throws the first error (and listens nowhere then).
    public func start() throws(RuntimeError) {
        var address = configuration.address
        var port = 0
        // The first loop's listening descriptor, which the others share on a Unix socket.
        var shared: Int32?
        for loop in group.loops {
            let result = Locked<Result<(Int, Int32?, LoopBound<ServerLoopState>), RuntimeError>?>(nil)
            let done = DispatchSemaphore(value: 0)
            let target = address
            let context = self.context
            let descriptor = shared
            loop.execute {
                let state = ServerLoopState(loop: loop, context: context)
                do throws(RuntimeError) {
                    var bound = 0
                    var own: Int32?
                    if let descriptor {
                        try state.listen(sharing: descriptor)
                    } else {
                        bound = try state.listen(target)
                        if target.isUnix { own = try state.listenerDescriptor() }
                    }
                    let box = LoopBound(state, loop: loop)
                    loop.onShutdown { state.shutdown(grace: .zero) {} }
                    result.withLock { $0 = .success((bound, own, box)) }
                } catch {
                    state.shutdown(grace: .zero) {}
                    result.withLock { $0 = .failure(error) }
                }
                done.signal()
            }
            done.wait()
            switch result.withLock({ $0 })! {
            case .success(let (bound, own, box)):
                // The other loops bind the port the first one got (port 0 picks one).
                port = bound
                if let own { shared = own }
                if case .tcp(let host, _) = address { address = .tcp(host: host, port: bound) }
                states.withLock { $0.append(box) }
            case .failure(let e):
                shutdown(grace: .zero)
                throw e
            }
        }
        boundPort.store(port, ordering: .relaxed)
    }

    /// Stops accepting, lets in-flight responses finish for up to `grace`, then closes
    /// everything. Blocks until every connection is closed; do not call it on a loop.
    public func shutdown(grace: Duration = .seconds(10)) {
        let all = states.withLock { s in
            let copy = s
            s = []
            return copy
        }
        let done = DispatchSemaphore(value: 0)
        for box in all {
            box.withValue { state in state.shutdown(grace: grace) { done.signal() } }
        }
        for _ in all { done.wait() }
    }
}
