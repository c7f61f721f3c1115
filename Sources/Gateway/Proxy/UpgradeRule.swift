public import HTTPWire
public import Runtime

/// Whether a request that asks to switch protocols to WebSocket may be passed to its route's
/// upstream. Pure.
///
/// The parser marks an upgrade a proxy may pass on (``RequestHead/upgrade``: `GET` over
/// HTTP/1.1, no body, `Upgrade: websocket` with `Connection: upgrade`); any other request's
/// `Upgrade` (`h2c` among them, whose tunnel would escape the route's path checks) is ignored
/// and stripped as hop-by-hop, and an upstream that switches to a protocol the request did
/// not name gets 502. An upgrade is spliced only on the loop's own
/// HTTP/1.1 client, so its upstream must be `http://` with that client on and no Unix socket;
/// otherwise the answer is 501 `upgrade-needs-http-upstream`, nothing sent upstream.
public enum UpgradeRule {
    /// What to do with a request.
    public enum Verdict: Equatable, Sendable {
        /// Not an upgrade: an ordinary exchange.
        case none
        /// Pass it on with `Connection: upgrade` and `Upgrade: <protocol>`.
        case pass(protocol: String)
        /// Answer with this problem, nothing sent upstream.
        case refuse(Problem)
    }

    /// The verdict for `head` on a route whose upstream is `upstream`, with `client` the
    /// upstream clients' settings.
    public static func verdict(for head: RequestHead, upstream: UpstreamOrigin, client: UpstreamClientConfiguration) -> Verdict {
        guard let proto = head.upgrade else { return .none }
        guard upstream.scheme == "http", client.loopHTTP1, client.unixSocketPath == nil else {
            return .refuse(
                GatewayProblem.make(
                    "upgrade-needs-http-upstream", 501,
                    "protocol upgrades (WebSocket) are passed only to http:// upstreams; this route's upstream cannot take one"))
        }
        return .pass(protocol: proto)
    }
}
