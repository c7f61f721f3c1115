public import AuthCore
import Locking

/// The token-endpoint client of one session, whose client secret (and transport, when the
/// token endpoint's timeouts change) a reload can replace. Each call takes the client current
/// when it starts: a refresh in flight finishes with the secret it started with.
public final class ReloadableGrantClient: TokenGrantClient {
    private struct Parts: Sendable {
        var configuration: OAuth2Client.Configuration
        var transport: any HTTPTransport
        var client: OAuth2Client
    }

    private let clock: any AuthClock
    private let parts: Locked<Parts>

    /// Creates the client with its first configuration (the secret included) and transport.
    public init(configuration: OAuth2Client.Configuration, transport: any HTTPTransport, clock: any AuthClock) {
        self.clock = clock
        parts = Locked(
            Parts(
                configuration: configuration, transport: transport,
                client: OAuth2Client(configuration: configuration, transport: transport, clock: clock)))
    }

    /// The client calls start with now.
    public var current: OAuth2Client { parts.withLock { $0.client } }

    /// Uses `clientSecret` from now on, and `transport` when given.
    public func replace(clientSecret: String?, transport: (any HTTPTransport)? = nil) {
        parts.withLock {
            $0.configuration.clientSecret = clientSecret
            if let transport { $0.transport = transport }
            $0.client = OAuth2Client(configuration: $0.configuration, transport: $0.transport, clock: clock)
        }
    }

    /// Presents `grant` with the current client.
    public func requestToken(_ grant: Grant) async throws -> TokenResponse {
        try await current.requestToken(grant)
    }

    /// Presents `grant` with the current client and a proof of `dpop`.
    public func requestToken(_ grant: Grant, dpop: DPoPSessionKey?) async throws -> TokenResponse {
        try await current.requestToken(grant, dpop: dpop)
    }

    /// Revokes with the current client.
    public func revoke(refreshToken: String?, accessToken: String) async throws {
        try await current.revoke(refreshToken: refreshToken, accessToken: accessToken)
    }

    /// Asks for a device code with the current client.
    public func requestDeviceAuthorization(scope: String?) async throws -> DeviceAuthorization {
        try await current.requestDeviceAuthorization(scope: scope)
    }

    /// Whether a revocation endpoint is configured.
    public var canRevoke: Bool { current.canRevoke }
}
