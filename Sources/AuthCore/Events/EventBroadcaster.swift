public import Foundation
internal import Locking

/// Fans session events out to any number of subscribers, each an `AsyncStream` with a
/// bounded buffer.
///
/// - A new subscriber first receives the current state (``AuthEvent/state(_:)``), like a
///   `CurrentValueSubject`, then every later event.
/// - A subscriber resuming with a last event id (SSE `Last-Event-ID`) receives the events it
///   missed from the replay buffer instead, when they are all still there.
/// - A subscriber that stops consuming (its task cancelled, the stream dropped) is removed
///   through `onTermination` and nothing of it is retained.
/// - A slow subscriber loses its oldest undelivered events (`.bufferingNewest`), never
///   blocks the publisher; the ids show the gap.
///
/// ```swift
/// for await record in broadcaster.subscribe() {
///     print(record.id, record.event.name)
/// }
/// ```
public final class EventBroadcaster: Sendable {
    private struct State {
        var lastEventID: UInt64 = 0
        var current: SessionStatus
        var replay: [AuthEventRecord] = []
        var replayStart = 0
        var subscribers: [UInt64: AsyncStream<AuthEventRecord>.Continuation] = [:]
        var nextSubscriberID: UInt64 = 0
        var finished = false

        var replayed: ArraySlice<AuthEventRecord> { replay[replayStart...] }
    }

    private let state: Locked<State>
    private let bufferSize: Int
    private let replayCapacity: Int
    private let wallClock: @Sendable () -> Date

    /// Creates a broadcaster whose current state is `initialStatus`.
    ///
    /// - Parameters:
    ///   - bufferSize: events buffered per subscriber before the oldest are dropped.
    ///   - replayCapacity: events kept for resumption by id.
    ///   - wallClock: timestamps events.
    public init(
        initialStatus: SessionStatus, bufferSize: Int = 64, replayCapacity: Int = 256,
        wallClock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.state = Locked(State(current: initialStatus))
        self.bufferSize = max(1, bufferSize)
        self.replayCapacity = max(0, replayCapacity)
        self.wallClock = wallClock
    }

    /// The number of live subscribers.
    public var subscriberCount: Int {
        state.withLock { $0.subscribers.count }
    }

    /// The current state.
    public var currentStatus: SessionStatus {
        state.withLock { $0.current }
    }

    /// The id of the last event published.
    public var lastEventID: UInt64 {
        state.withLock { $0.lastEventID }
    }

    /// Publishes `event`, with `status` as the new current state, to every subscriber.
    @discardableResult
    public func publish(_ event: AuthEvent, status: SessionStatus) -> AuthEventRecord {
        let timestamp = wallClock()
        return state.withLock { state in
            state.lastEventID += 1
            let record = AuthEventRecord(id: state.lastEventID, event: event, timestamp: timestamp)
            state.current = status
            if replayCapacity > 0 {
                state.replay.append(record)
                if state.replay.count - state.replayStart > replayCapacity {
                    state.replayStart += 1
                    if state.replayStart > replayCapacity {
                        state.replay.removeFirst(state.replayStart)
                        state.replayStart = 0
                    }
                }
            }
            var terminated: [UInt64] = []
            for (id, continuation) in state.subscribers {
                if case .terminated = continuation.yield(record) {
                    terminated.append(id)
                }
            }
            for id in terminated { state.subscribers[id] = nil }
            return record
        }
    }

    /// A new subscription.
    ///
    /// - Parameter lastEventID: the id of the last event the subscriber saw. When every
    ///   later event is still in the replay buffer, those are delivered first; otherwise (or
    ///   when `nil`) the current state is.
    public func subscribe(resumingAfter lastEventID: UInt64? = nil) -> AsyncStream<AuthEventRecord> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: AuthEventRecord.self, bufferingPolicy: .bufferingNewest(bufferSize))
        let finished: Bool = state.withLock { state in
            if state.finished { return true }
            let id = state.nextSubscriberID
            state.nextSubscriberID += 1
            let replayed = state.replayed
            if let lastEventID, lastEventID <= state.lastEventID,
                lastEventID == state.lastEventID || (replayed.first.map { $0.id <= lastEventID + 1 } ?? false)
            {
                for record in replayed where record.id > lastEventID {
                    continuation.yield(record)
                }
            } else {
                continuation.yield(
                    AuthEventRecord(
                        id: state.lastEventID, event: .state(state.current), timestamp: wallClock()))
            }
            continuation.onTermination = { [weak self] _ in
                self?.remove(id)
            }
            state.subscribers[id] = continuation
            return false
        }
        if finished { continuation.finish() }
        return stream
    }

    /// Ends every subscription (at shutdown); later subscriptions end at once.
    public func finish() {
        let continuations = state.withLock { state in
            state.finished = true
            let all = Array(state.subscribers.values)
            state.subscribers.removeAll()
            return all
        }
        for continuation in continuations { continuation.finish() }
    }

    private func remove(_ id: UInt64) {
        _ = state.withLock { $0.subscribers.removeValue(forKey: id) }
    }
}
