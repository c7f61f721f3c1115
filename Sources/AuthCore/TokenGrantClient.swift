/// Exchanges a grant for tokens: what an ``AuthActor`` needs from a token endpoint.
///
/// ``OAuth2Client`` is the implementation; tests may script their own.
public protocol TokenGrantClient: Sendable {
    /// Presents `grant` to the token endpoint. Throws ``TokenEndpointError``.
    func requestToken(_ grant: Grant) async throws -> TokenResponse
}
