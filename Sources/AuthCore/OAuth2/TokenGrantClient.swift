/// Exchanges a grant for tokens: what an ``AuthActor`` needs from a token endpoint.
///
/// ``OAuth2Client`` is the implementation; tests may script their own.
public protocol TokenGrantClient: Sendable {
    /// Presents `grant` to the token endpoint. Throws ``AuthError`` of the ``AuthError/Code/Domain/tokenEndpoint`` domain.
    func requestToken(_ grant: Grant) async throws -> TokenResponse
    /// Presents `grant` with a DPoP proof of `dpop` (RFC 9449 §5), when given: the key the
    /// tokens are to be bound to.
    func requestToken(_ grant: Grant, dpop: DPoPSessionKey?) async throws -> TokenResponse
    /// Revokes a session's tokens at the server (RFC 7009). Throws ``AuthError`` of the ``AuthError/Code/Domain/tokenEndpoint`` domain.
    func revoke(refreshToken: String?, accessToken: String) async throws
    /// Whether ``revoke(refreshToken:accessToken:)`` reaches a server (a revocation
    /// endpoint is configured).
    var canRevoke: Bool { get }
    /// Asks the device authorization endpoint for a device code and a user code (RFC 8628
    /// §3.1). Throws ``AuthError`` of the ``AuthError/Code/Domain/tokenEndpoint`` domain.
    func requestDeviceAuthorization(scope: String?) async throws -> DeviceAuthorization
}

extension TokenGrantClient {
    /// The default, for clients that know nothing of DPoP: the grant alone.
    public func requestToken(_ grant: Grant, dpop: DPoPSessionKey?) async throws -> TokenResponse {
        try await requestToken(grant)
    }

    /// Revokes the session's tokens at the server (RFC 7009), if the client can; the
    /// default does nothing.
    public func revoke(refreshToken: String?, accessToken: String) async throws {}

    /// The default: no revocation.
    public var canRevoke: Bool { false }

    /// The default: no device authorization endpoint
    /// (``AuthError/Code/invalidConfiguration``).
    public func requestDeviceAuthorization(scope: String?) async throws -> DeviceAuthorization {
        throw AuthError.tokenEndpoint(
            .invalidConfiguration, .terminal, message: "no device authorization endpoint is configured")
    }
}
