public import Foundation

/// An ``AuthEvent`` with its broadcast id (monotonic, for SSE `id:`/`Last-Event-ID`).
public struct AuthEventRecord: Sendable, Equatable {
    /// The event id. A ``AuthEvent/state(_:)`` snapshot carries the id of the last event it
    /// reflects.
    public var id: UInt64
    /// The event.
    public var event: AuthEvent
    /// When it was published (wall clock).
    public var timestamp: Date

    /// Creates a record.
    public init(id: UInt64, event: AuthEvent, timestamp: Date) {
        self.id = id
        self.event = event
        self.timestamp = timestamp
    }
}
