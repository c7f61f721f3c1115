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
            json(writer, 200, #"{"status":"ok"}"#)
        case "/readyz":
            guard allow(request.head.method, ["GET", "HEAD"], writer) else { return true }
            let (ready, reason) = readiness.check()
            json(
                writer, ready ? 200 : 503,
                ready ? #"{"status":"ready"}"# : #"{"status":"not_ready","reason":"\#(reason?.rawValue ?? "")"}"#)
        default:
            return false
        }
        return true
    }

    /// A JSON answer that no cache keeps.
    static func json(_ writer: ResponseWriter, _ status: Int, _ text: String) {
        var h = HTTPHeaders()
        h.add(name: "Content-Type", value: "application/json")
        h.add(name: "Cache-Control", value: "no-store")
        writer.respond(status: status, headers: h, body: Array(text.utf8))
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
