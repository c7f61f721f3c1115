import HTTPWire
import Runtime

/// `/livez` and `/readyz`: what the admin listener and the probe listener answer, alike.
/// Neither needs an admin token, so neither says more than a reason code.
enum HealthEndpoints {
    /// Answers `request` when its path is `/livez` or `/readyz` and returns true; returns
    /// false, having written nothing, for any other path.
    static func answer(_ request: HTTPRequest, readiness: Readiness, writer: ResponseWriter) -> Bool {
        switch request.head.path {
        case "/livez":
            guard allow(request.head.method, ["GET", "HEAD"], writer) else { return true }
            json(writer, 200, Health(status: "ok"))
        case "/readyz":
            guard allow(request.head.method, ["GET", "HEAD"], writer) else { return true }
            let (ready, reason) = readiness.check()
            json(
                writer, ready ? 200 : 503,
                ready ? Health(status: "ready") : Health(status: "not_ready", reason: reason?.rawValue ?? ""))
        default:
            return false
        }
        return true
    }

    /// The `/livez` and `/readyz` document: `status`, and `reason` when not ready.
    struct Health: Encodable, Sendable {
        var status: String
        var reason: String?
    }

    /// `document` as a JSON answer that no cache keeps. A document that does not encode
    /// (none of the admin documents can fail to) is answered 500.
    static func json(_ writer: ResponseWriter, _ status: Int, _ document: some Encodable) {
        let body: [UInt8]
        do {
            body = try AdminJSON.encode(document)
        } catch {
            writer.respond(problem: GatewayProblem.make("internal-error", 500, "the answer could not be encoded"))
            return
        }
        var h = HTTPHeaders()
        h.add(name: "Content-Type", value: "application/json")
        h.add(name: "Cache-Control", value: "no-store")
        writer.respond(status: status, headers: h, body: body)
    }

    /// True when `method` is among `allowed`; otherwise answers 405 with `Allow` and returns false.
    static func allow(_ method: String, _ allowed: [String], _ writer: ResponseWriter) -> Bool {
        if allowed.contains(method) { return true }
        methodNotAllowed(method, allowed, writer)
        return false
    }

    /// 405 with `Allow`. The method is named only when it is a plain token (the HTTP layer
    /// has checked it already; this keeps the message safe whatever it let through).
    static func methodNotAllowed(_ method: String, _ allowed: [String], _ writer: ResponseWriter) {
        var h = HTTPHeaders()
        h.add(name: "Allow", value: allowed.joined(separator: ", "))
        let shown = StrictJSON.isShowable(method) ? method : "this method"
        writer.respond(
            problem: GatewayProblem.make(
                "method-not-allowed", 405, "\(shown) is not allowed here; use \(allowed.joined(separator: " or "))"),
            headers: h)
    }
}
