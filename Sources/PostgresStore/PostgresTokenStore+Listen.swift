internal import Locking
internal import Logging
internal import NIOCore
internal import PostgresNIO

extension PostgresTokenStore {
    /// A ping of the listening connection went unanswered.
    struct SilentLoss: Error {}

    /// Keeps one connection listening on `channel`, reconnecting when it is lost (see
    /// ``ListenerLink`` for when), and hands every notification in the store's own form to
    /// `hub` (which keeps only those about accounts this process asks about). Each
    /// (re)connection resynchronises the hub: whatever was missed meanwhile, every waiter and
    /// follower reads its row again. One that follows a silent loss first calls `renewPool`,
    /// so that those reads do not go to connections the partition left dead.
    static func listen(
        on channel: String, with configuration: PostgresConnection.Configuration, hub: NotificationHub, logger: Logger,
        renewPool: @escaping @Sendable () -> Void
    ) async {
        var link = ListenerLink()
        var id = 1_000
        reconnecting: while !Task.isCancelled {
            id += 1
            let connection: PostgresConnection
            switch await connect(configuration, id: id, logger: logger) {
            case .success(let c):
                connection = c
            case .failure(let failure):
                if Task.isCancelled { break reconnecting }
                let delay = link.disconnected(timedOut: failure.timedOut)
                logger.info(
                    "store notifications unavailable; reconnecting",
                    metadata: ["store.timed_out": "\(failure.timedOut)", "store.retry_in": "\(delay)"])
                try? await Task.sleep(for: delay)
                continue
            }
            let healed = link.connected()
            if healed.renewPool {
                logger.info("store reachable again after a silent loss; renewing the connection pool")
                renewPool()
            }
            var silent = false
            do {
                try await withTaskCancellationHandler {
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask {
                            try await connection.listen(on: channel) { notifications in
                                hub.resynchronise()
                                logger.debug("listening for the store's notifications", metadata: ["store.channel": "\(channel)"])
                                for try await notification in notifications {
                                    if let change = NotificationHub.Change(payload: notification.payload) { hub.deliver(change) }
                                }
                            }
                        }
                        group.addTask {
                            // A silent partition ends nothing: only an unanswered ping tells.
                            while true {
                                try await Task.sleep(for: ListenerLink.pingInterval)
                                let answered = await ping(connection, logger: logger)
                                if !answered {
                                    connection.close().whenComplete { _ in }
                                    throw SilentLoss()
                                }
                            }
                        }
                        _ = try await group.next()
                        group.cancelAll()
                    }
                } onCancel: {
                    connection.close().whenComplete { _ in }
                }
            } catch is SilentLoss {
                silent = true
                _ = link.pinged(answered: false)
                logger.info("store notifications cut off (ping unanswered); reconnecting")
            } catch {
                if !Task.isCancelled {
                    logger.info(
                        "store notifications lost; reconnecting",
                        metadata: ["store.error": "\(String(describing: type(of: error)))"])
                }
            }
            // Closed on every path: postgres-nio requires it before the connection goes away.
            // (Closing is local: it does not wait for a server that does not answer.)
            try? await connection.close()
            if Task.isCancelled { break }
            try? await Task.sleep(for: link.disconnected(timedOut: silent))
        }
    }

    /// A connection from the first of several staggered attempts to connect (see
    /// ``ListenerLink``): one starts every ``ListenerLink/hedgeInterval`` until one connects
    /// or ``ListenerLink/attempts`` have started, each bounded by
    /// ``ListenerLink/connectTimeout``; any other that connects after the first is closed.
    /// `.failure(timedOut: true)` when an attempt ran out its time.
    private static func connect(
        _ configuration: PostgresConnection.Configuration, id: Int, logger: Logger
    ) async -> Result<PostgresConnection, ConnectFailure> {
        enum Event: Sendable {
            case tick
            case connected(PostgresConnection)
            case failed(timedOut: Bool)
        }
        let (events, sink) = AsyncStream<Event>.makeStream()
        enum Outcome: Sendable {
            case open
            case won(PostgresConnection)
            case abandoned
        }
        let outcome = Locked(Outcome.open)
        func attempt(_ n: Int) {
            Task {
                do {
                    let connection = try await Deadline.run(ListenerLink.connectTimeout) { deadline in
                        let c = try await PostgresConnection.connect(
                            configuration: configuration, id: id * 100 + n, logger: logger)
                        do {
                            try deadline.commitPoint()
                        } catch {
                            try? await c.close()
                            throw error
                        }
                        return c
                    }
                    guard let connection else {
                        sink.yield(.failed(timedOut: true))
                        return
                    }
                    let first = outcome.withLock { o -> Bool in
                        guard case .open = o else { return false }
                        o = .won(connection)
                        return true
                    }
                    if first {
                        sink.yield(.connected(connection))
                    } else {
                        try? await connection.close()
                    }
                } catch {
                    sink.yield(.failed(timedOut: false))
                }
            }
        }
        let ticker = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: ListenerLink.hedgeInterval)
                sink.yield(.tick)
            }
        }
        defer {
            ticker.cancel()
            sink.finish()
        }
        var started = 1
        var running = 1
        var timedOut = false
        attempt(0)
        for await event in events {
            if Task.isCancelled { break }
            switch event {
            case .connected(let connection):
                return .success(connection)
            case .failed(let late):
                running -= 1
                timedOut = timedOut || late
                if running == 0, started >= ListenerLink.attempts { return .failure(ConnectFailure(timedOut: timedOut)) }
            case .tick:
                guard started < ListenerLink.attempts else { continue }
                attempt(started)
                started += 1
                running += 1
            }
        }
        // Cancelled (the store closes): no attempt may win from now on, and one that already
        // did is closed.
        let winner = outcome.withLock { o -> PostgresConnection? in
            defer { o = .abandoned }
            if case .won(let connection) = o { return connection }
            return nil
        }
        try? await winner?.close()
        return .failure(ConnectFailure(timedOut: timedOut))
    }

    struct ConnectFailure: Error {
        var timedOut: Bool
    }

    /// Whether the listening connection answers `SELECT 1` within ``ListenerLink/pingTimeout``.
    private static func ping(_ connection: PostgresConnection, logger: Logger) async -> Bool {
        (try? await Deadline.run(ListenerLink.pingTimeout, { _ in _ = try await connection.query("SELECT 1", logger: logger) }))
            != nil
    }
}
