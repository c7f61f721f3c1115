import HTTPWire
import Runtime

/// Protocol upgrades (WebSocket) through proxy routes: the request goes upstream with its
/// `Connection: upgrade` and `Upgrade` (and, on an authenticated route, the session's token,
/// refreshed and replayed on a 401 like any bodiless request); a `101` answer splices the
/// client connection to the upstream one (``ResponseWriter/switchProtocols(headers:to:idleTimeout:onEnd:)``).
extension ReverseProxy {
    /// Answers an upgrade this route cannot pass with 501 (``UpgradeRule``); true when it did.
    func refusedUpgrade(_ request: HTTPRequest, _ r: RouteContext) -> Bool {
        guard
            case .refuse(let problem) = UpgradeRule.verdict(
                for: request.head, upstream: r.route.upstream, client: r.settings.clientConfiguration)
        else { return false }
        r.writer.respond(problem: problem)
        r.end.finishAtOnce(metrics, status: problem.status)
        return true
    }

    /// The header fields that make the upstream request an upgrade, added to the cleaned ones.
    static func addUpgradeFields(_ headers: inout HTTPHeaders, for head: RequestHead) {
        guard let proto = head.upgrade else { return }
        headers.replaceOrAdd(name: "Connection", value: "Upgrade")
        headers.replaceOrAdd(name: "Upgrade", value: proto)
    }
}
