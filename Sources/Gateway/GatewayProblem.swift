public import HTTPWire

/// The problem documents the gateway answers with.
public enum GatewayProblem {
    /// No route matches the request path.
    public static let noRoute = Problem(
        type: "https://authgate.dev/problems/no-route", title: "Not Found", status: 404,
        detail: "no route matches this path")
}
