public import HTTPWire
public import Runtime

/// The probe listener: `GET`/`HEAD` `/livez` and `/readyz` (the same answers as the admin
/// API's), and 404 `no-route` for everything else.
///
/// It is meant for probes that cannot reach the admin listener, such as the kubelet's when
/// the admin API is on a Unix socket. It never reads an `Authorization` header, so an admin
/// token sent here opens nothing, and it reads no request body: an answer goes out after
/// the head, and a connection whose body was not read closes.
public struct ProbeAPI: HTTPResponder {
    let readiness: Readiness

    /// Creates the probe listener's responder over the gateway's readiness.
    public init(readiness: Readiness) {
        self.readiness = readiness
    }

    public func bodyPolicy(for head: RequestHead, limits: HTTPLimits) -> BodyPolicy {
        // Answered after the head; a body is never buffered (nor read).
        .stream
    }

    public func respond(to request: HTTPRequest, writer: ResponseWriter) {
        if HealthEndpoints.answer(request, readiness: readiness, writer: writer) { return }
        writer.respond(problem: GatewayProblem.make("no-route", 404, "the probe listener answers only /livez and /readyz"))
    }
}
