internal import Logging
internal import PostgresNIO

extension PostgresTokenStore {
    /// Keeps one connection listening on `channel`, reconnecting with backoff when it is
    /// lost, and hands every notification in the store's own form to `hub` (which keeps only
    /// those about accounts this process asks about). Each (re)connection resynchronises the
    /// hub: whatever was missed meanwhile, every waiter and follower reads its row again.
    static func listen(
        on channel: String, with configuration: PostgresConnection.Configuration, hub: NotificationHub, logger: Logger
    ) async {
        var delay = Duration.milliseconds(100)
        var id = 1_000
        while !Task.isCancelled {
            id += 1
            let connection: PostgresConnection
            do {
                connection = try await PostgresConnection.connect(configuration: configuration, id: id, logger: logger)
            } catch {
                if Task.isCancelled { break }
                logger.info(
                    "store notifications unavailable; reconnecting",
                    metadata: ["store.error": "\(String(describing: type(of: error)))", "store.retry_in": "\(delay)"])
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(5))
                continue
            }
            do {
                try await withTaskCancellationHandler {
                    try await connection.listen(on: channel) { notifications in
                        delay = .milliseconds(100)
                        hub.resynchronise()
                        logger.debug("listening for the store's notifications", metadata: ["store.channel": "\(channel)"])
                        for try await notification in notifications {
                            if let change = NotificationHub.Change(payload: notification.payload) { hub.deliver(change) }
                        }
                    }
                } onCancel: {
                    connection.close().whenComplete { _ in }
                }
            } catch {
                if !Task.isCancelled {
                    logger.info(
                        "store notifications lost; reconnecting",
                        metadata: ["store.error": "\(String(describing: type(of: error)))", "store.retry_in": "\(delay)"])
                }
            }
            // Closed on every path: postgres-nio requires it before the connection goes away.
            try? await connection.close()
            if Task.isCancelled { break }
            try? await Task.sleep(for: delay)
            delay = min(delay * 2, .seconds(5))
        }
    }
}
