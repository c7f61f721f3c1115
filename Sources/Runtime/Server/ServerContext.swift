import Synchronization

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
