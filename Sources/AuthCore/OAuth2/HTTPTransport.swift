/// Sends one HTTP request and returns its response: what the ``OAuth2Client`` needs from
/// an HTTP stack.
///
/// The gateway implements it with libcurl on its event loop; tests use the in-process fake
/// authorization server. Implementations throw ``AuthError/transport(_:_:)`` (or any error, which
/// is then treated as a network failure) when no response arrived.
public protocol HTTPTransport: Sendable {
    /// Sends `request` and returns the response, whatever its status.
    func send(_ request: HTTPRequestValue) async throws -> HTTPResponseValue
}
