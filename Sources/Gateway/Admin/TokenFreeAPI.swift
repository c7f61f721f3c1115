public import HTTPWire
public import Runtime

/// The listeners that need no admin token: the probe listener (`GET`/`HEAD` `/livez` and
/// `/readyz`, the admin API's answers) and the metrics listener (`GET`/`HEAD` `/metrics`,
/// for scrapers, which rarely carry a bearer token). Everything else is 404 `no-route`.
///
/// Such a listener never reads an `Authorization` header, so an admin token sent to it opens
/// nothing, and it reads no request body: an answer goes out after the head, and a
/// connection whose body was not read closes.
public struct TokenFreeAPI: HTTPResponder {
    /// What a token-free listener serves.
    public enum Endpoints: Sendable {
        /// `/livez` and `/readyz` (the `probes` listener).
        case probes(Readiness)
        /// `/metrics` (the `metrics` listener).
        case metrics(MetricsEndpoint)
    }

    let endpoints: Endpoints
    /// The tasks rendering `/metrics` (shutdown waits for them).
    public let tasks = TaskTracker()

    /// Creates the responder of a probe or metrics listener.
    public init(_ endpoints: Endpoints) {
        self.endpoints = endpoints
    }

    public func bodyPolicy(for head: RequestHead, limits: HTTPLimits) -> BodyPolicy {
        // Answered after the head; a body is never buffered (nor read).
        .stream
    }

    public func respond(to request: HTTPRequest, writer: ResponseWriter) {
        switch endpoints {
        case .probes(let readiness):
            if HealthEndpoints.answer(request, readiness: readiness, writer: writer) { return }
            writer.respond(problem: GatewayProblem.make("no-route", 404, "the probe listener answers only /livez and /readyz"))
        case .metrics(let metrics):
            guard request.head.path == "/metrics" else {
                writer.respond(problem: GatewayProblem.make("no-route", 404, "the metrics listener answers only /metrics"))
                return
            }
            guard HealthEndpoints.allow(request.head.method, ["GET", "HEAD"], writer) else { return }
            tasks.start(on: request.loop) { await metrics.respond(writer) }
        }
    }
}
