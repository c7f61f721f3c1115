import Synchronization

/// A bound on the request-body bytes buffered in memory across every connection of every
/// server that shares it (the proxy and the admin listener of one process).
///
/// A connection reserves each chunk of a body it buffers before keeping it, and gives the
/// whole reservation back when the exchange ends or the connection closes. A chunk that
/// does not fit is refused: the request gets 503 and the connection closes, so an
/// unauthenticated flood of large bodies cannot take the process past its memory limit.
/// Streamed bodies are not counted: they hold at most the server's `bodyHighWater` each.
///
/// ```swift
/// let budget = BufferBudget(limit: 64 << 20)
/// var c = HTTPServerConfiguration(port: 8080)
/// c.bufferBudget = budget
/// ```
public final class BufferBudget: Sendable {
    /// The most bytes held at once.
    public let limit: Int
    private let used = Atomic<Int>(0)

    /// Creates a budget of `limit` bytes.
    public init(limit: Int) {
        self.limit = limit
    }

    /// Takes `bytes` from the budget; false (and nothing taken) when they do not fit.
    public func reserve(_ bytes: Int) -> Bool {
        var current = used.load(ordering: .relaxed)
        while true {
            let next = current + bytes
            if next > limit { return false }
            let (exchanged, original) = used.compareExchange(
                expected: current, desired: next, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
    }

    /// Gives back `bytes` taken with ``reserve(_:)``.
    public func release(_ bytes: Int) {
        guard bytes > 0 else { return }
        used.subtract(bytes, ordering: .relaxed)
    }

    /// Bytes held now.
    public var inUse: Int { used.load(ordering: .relaxed) }
}
