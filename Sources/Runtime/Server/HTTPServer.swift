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
/// try await server.listen()
/// // …
/// await server.close()
/// await group.close()
/// ```
///
/// Or as a `Service` in a `ServiceGroup` (``run()``), which listens and closes for you.
public final class HTTPServer: Sendable {
    /// The configuration it was created with.
    public let configuration: HTTPServerConfiguration
    private let group: EventLoopGroup
    private let context: ServerContext
    private let states: Locked<[LoopBound<ServerLoopState>]> = Locked([])
    private let boundPort = Atomic<Int>(0)

    /// Creates a server; nothing listens until ``listen()`` or ``run()``.
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

    /// What binding one loop's listener gave: the port, the listening descriptor the other
    /// loops share on a Unix socket, and the loop's state.
    private typealias Bound = Result<(port: Int, shared: Int32?, state: LoopBound<ServerLoopState>), RuntimeError>

    /// Binds every loop's listener (for a Unix socket: the first loop binds, the others share
    /// its socket) without blocking a thread: the task waits while each loop binds. Throws
    /// the first error (and listens nowhere then).
    public func listen() async throws(RuntimeError) {
        var plan = StartPlan(address: configuration.address)
        for loop in group.loops {
            let bound = await withCheckedContinuation { (continuation: CheckedContinuation<Bound, Never>) in
                bind(on: loop, plan) { continuation.resume(returning: $0) }
            }
            do throws(RuntimeError) {
                try record(bound, into: &plan)
            } catch {
                // Without blocking a thread, as everything here.
                await close(grace: .zero)
                throw error
            }
        }
        boundPort.store(plan.port, ordering: .relaxed)
    }

    /// Where the loops bind: the first one's address (port 0 picks one), then the port it got.
    private struct StartPlan {
        var address: ListenAddress
        var port = 0
        /// The first loop's listening descriptor, which the others share on a Unix socket.
        var shared: Int32?
    }

    /// Binds `loop`'s listener as `plan` says, on the loop; `done` gets the result there.
    private func bind(on loop: EventLoop, _ plan: StartPlan, _ done: @escaping @Sendable (Bound) -> Void) {
        let target = plan.address
        let descriptor = plan.shared
        let context = self.context
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
                done(.success((bound, own, box)))
            } catch {
                state.shutdown(grace: .zero) {}
                done(.failure(error))
            }
        }
    }

    /// Keeps a loop's listener, or throws its error (the caller then closes the others').
    private func record(_ bound: Bound, into plan: inout StartPlan) throws(RuntimeError) {
        switch bound {
        case .success(let (port, shared, box)):
            // The other loops bind the port the first one got (port 0 picks one).
            plan.port = port
            if let shared { plan.shared = shared }
            if case .tcp(let host, _) = plan.address { plan.address = .tcp(host: host, port: port) }
            states.withLock { $0.append(box) }
        case .failure(let e):
            // The caller closes the loops that did bind.
            throw e
        }
    }

    /// Stops accepting, lets in-flight responses finish for up to `grace`, then closes
    /// everything; returns once every connection is closed, without blocking a thread, also
    /// in a cancelled task (cancellation does not cut the grace short).
    public func close(grace: Duration = .seconds(10)) async {
        let all = takeStates()
        await withTaskGroup(of: Void.self) { group in
            for box in all {
                group.addTask {
                    await withCheckedContinuation { (closed: CheckedContinuation<Void, Never>) in
                        box.withValue { state in state.shutdown(grace: grace) { closed.resume() } }
                    }
                }
            }
        }
    }

    /// The loops' states, taken: each is drained once.
    private func takeStates() -> [LoopBound<ServerLoopState>] {
        states.withLock { s in
            let copy = s
            s = []
            return copy
        }
    }
}

/// What every connection of one server shares, across loops.
final class ServerContext: Sendable {
    let configuration: HTTPServerConfiguration
    let responder: any HTTPResponder
    private let active = Atomic<Int>(0)

    init(configuration: HTTPServerConfiguration, responder: any HTTPResponder) {
        self.configuration = configuration
        self.responder = responder
    }

    /// Counts a new connection; false when it is over the limit (it still counts until closed).
    func admit() -> Bool {
        active.add(1, ordering: .relaxed).newValue <= configuration.maxConnections
    }

    func connectionClosed() {
        active.subtract(1, ordering: .relaxed)
    }

    /// Connections open now, across loops.
    var activeConnections: Int { active.load(ordering: .relaxed) }
}
