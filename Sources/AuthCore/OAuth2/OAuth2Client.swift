internal import Foundation

/// An RFC 6749 token-endpoint client written against ``HTTPTransport``.
///
/// It speaks the password, client-credentials, authorization-code (+ PKCE) and refresh-token
/// grants, authenticates the client with Basic or in the body, parses §5.2 errors and turns
/// every failure into a ``AuthError`` of the ``AuthError/Code/Domain/tokenEndpoint`` domain whose ``AuthError/disposition`` says
/// whether a session should end. Servers that deviate are described by a
/// ``TokenEndpointMapping``.
public struct OAuth2Client: TokenGrantClient {
    /// Where and as whom to ask for tokens.
    public struct Configuration: Sendable, Equatable, CustomStringConvertible {
        /// The token endpoint URL.
        public var tokenEndpoint: String
        /// The client identifier, when the server wants one.
        public var clientID: String?
        /// The client secret (confidential clients).
        public var clientSecret: String?
        /// How the client authenticates.
        public var authentication: ClientAuthentication
        /// Deviations from RFC 6749.
        public var mapping: TokenEndpointMapping
        /// The RFC 7009 revocation endpoint; tokens are revoked at logout when it is set.
        public var revocationEndpoint: String?
        /// The assertion of `private_key_jwt` and `client_secret_jwt`.
        public var assertion: ClientAssertion?
        /// The certificate shown to the token and revocation endpoints: the credential of
        /// `tls_client_auth` and `self_signed_tls_client_auth`, and with any other method
        /// what the server binds the tokens to (RFC 8705 §3).
        public var certificate: ClientCertificate?
        /// Where the JWT bearer grant (RFC 7523 §2.1) reads its assertion.
        public var jwtBearer: JWTBearerGrantSettings?
        /// Where token exchange (RFC 8693) reads its subject token, and what it asks for.
        public var tokenExchange: TokenExchangeSettings?
        /// The device authorization endpoint (RFC 8628 §3.1), for device logins.
        public var deviceAuthorizationEndpoint: String?

        /// Creates a configuration.
        public init(
            tokenEndpoint: String, clientID: String? = nil, clientSecret: String? = nil,
            authentication: ClientAuthentication = .basic,
            mapping: TokenEndpointMapping = .standard, revocationEndpoint: String? = nil, assertion: ClientAssertion? = nil,
            certificate: ClientCertificate? = nil, jwtBearer: JWTBearerGrantSettings? = nil,
            tokenExchange: TokenExchangeSettings? = nil, deviceAuthorizationEndpoint: String? = nil
        ) {
            self.deviceAuthorizationEndpoint = deviceAuthorizationEndpoint
            self.jwtBearer = jwtBearer
            self.tokenExchange = tokenExchange
            self.certificate = certificate
            self.revocationEndpoint = revocationEndpoint
            self.assertion = assertion
            self.tokenEndpoint = tokenEndpoint
            self.clientID = clientID
            self.clientSecret = clientSecret
            self.authentication = authentication
            self.mapping = mapping
        }

        /// The endpoint and client id; the secret is redacted.
        public var description: String {
            "OAuth2Client.Configuration(\(tokenEndpoint), client: \(clientID ?? "none"), "
                + "auth: \(authentication.rawValue), secret: \(clientSecret == nil ? "none" : "<redacted>"))"
        }
    }

    /// The configuration.
    public let configuration: Configuration
    private let transport: any HTTPTransport
    let clock: any AuthClock

    /// Creates a client. The clock resolves `Retry-After` dates.
    public init(configuration: Configuration, transport: any HTTPTransport, clock: any AuthClock) {
        self.configuration = configuration
        self.transport = transport
        self.clock = clock
    }

    /// Presents `grant` and returns the tokens, or throws ``AuthError`` of the ``AuthError/Code/Domain/tokenEndpoint`` domain.
    ///
    /// With DPoP, a server that answers `use_dpop_nonce` with a `DPoP-Nonce` (RFC 9449 §8)
    /// is asked once more, with a new proof carrying that nonce (and a new assertion, whose
    /// `jti` a server accepts once); a second such answer is its error.
    public func requestToken(_ grant: Grant) async throws -> TokenResponse {
        try await requestToken(grant, dpop: nil)
    }

    /// Presents `grant` with a proof of `dpop` (RFC 9449 §5), the key the session's tokens
    /// are to be bound to; the server's nonces are kept with the key.
    public func requestToken(_ grant: Grant, dpop: DPoPSessionKey?) async throws -> TokenResponse {
        var askedForNonce = false
        while true {
            var request = try makeRequest(
                for: grant, assertion: try currentAssertion(), grantToken: try currentGrantToken(for: grant))
            if let proof = try proof(of: dpop, for: request) { request.headers.append(("DPoP", proof)) }
            let response = try await send(request)
            if let dpop, let nonce = response.header("DPoP-Nonce") {
                dpop.nonces.remember(nonce, for: request.url)
                if !askedForNonce, Self.asksForNonce(response) {
                    askedForNonce = true
                    continue
                }
            }
            return try parse(response, for: grant, now: clock.wallNow)
        }
    }

    /// Sends `request`; a transport failure becomes a token endpoint error (ambiguous when
    /// the server may have acted on the request).
    func send(_ request: HTTPRequestValue) async throws -> HTTPResponseValue {
        do {
            return try await transport.send(request)
        } catch let error as AuthError where error.code.domain == .transport {
            throw AuthError.tokenEndpoint(
                error.requestMayHaveBeenProcessed ? .networkAfterSend : .network,
                error.requestMayHaveBeenProcessed ? .ambiguous : .transient, underlying: error)
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw AuthError.tokenEndpoint(.network, .transient, message: String(describing: type(of: error)))
        }
    }

    /// The proof of `dpop` for `request`, with the nonce its server asked for; nil without
    /// a key. A key that cannot sign sends nothing: a transient
    /// ``AuthError/Code/clientCredentialsUnusable`` error, as for an assertion.
    func proof(of dpop: DPoPSessionKey?, for request: HTTPRequestValue) throws -> String? {
        guard let dpop else { return nil }
        guard let proof = dpop.proof(method: request.method, url: request.url, now: clock.wallNow) else {
            throw AuthError.tokenEndpoint(.clientCredentialsUnusable, .transient, message: "the DPoP key could not sign a proof")
        }
        return proof
    }

    /// Whether `response` is RFC 9449 §8's `use_dpop_nonce` error.
    static func asksForNonce(_ response: HTTPResponseValue) -> Bool {
        guard response.status == 400 || response.status == 401,
            let object = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        else { return false }
        return object["error"] as? String == "use_dpop_nonce"
    }

    /// A fresh client assertion when the client authenticates with one (files are read
    /// now); nothing is sent when it cannot be made: an
    /// ``AuthError/Code/clientCredentialsUnusable`` error, transient, so the session keeps
    /// its token and tries again.
    func currentAssertion() throws -> String? {
        guard configuration.authentication.usesAssertion else { return nil }
        guard let assertion = configuration.assertion else {
            throw AuthError.tokenEndpoint(
                .clientCredentialsUnusable, .transient,
                message: "\(configuration.authentication.rawValue) has no assertion configured")
        }
        do {
            return try assertion.make(
                clientID: configuration.clientID ?? "", secret: configuration.clientSecret, now: clock.wallNow)
        } catch {
            throw AuthError.tokenEndpoint(.clientCredentialsUnusable, .transient, message: error.message)
        }
    }

    /// The assertion (JWT bearer) or subject token (token exchange) `grant` presents, read
    /// from its file now; nil for the other grants. Nothing is sent when the file cannot be
    /// used: a transient ``AuthError/Code/clientCredentialsUnusable`` error naming the file,
    /// so a session keeps its token and tries again once the file is put right.
    func currentGrantToken(for grant: Grant) throws -> String? {
        do throws(AuthError) {
            switch grant {
            case .jwtBearer:
                guard let settings = configuration.jwtBearer else {
                    throw AuthError.input(.unusableAssertion, "the JWT bearer grant needs an assertion file (jwtBearer)")
                }
                return try settings.assertion(now: clock.wallNow)
            case .tokenExchange:
                guard let settings = configuration.tokenExchange else {
                    throw AuthError.input(.unusableAssertion, "token exchange needs a subject token file (tokenExchange)")
                }
                return try settings.subjectToken(now: clock.wallNow)
            default:
                return nil
            }
        } catch {
            throw AuthError.tokenEndpoint(.clientCredentialsUnusable, .transient, message: error.message)
        }
    }

    /// Whether a revocation endpoint is configured.
    public var canRevoke: Bool { configuration.revocationEndpoint != nil }

    /// Revokes the session's tokens (RFC 7009): the refresh token when there is one (the
    /// server ends its access tokens with it), else the access token. Does nothing without
    /// a revocation endpoint. Throws ``AuthError`` of the ``AuthError/Code/Domain/tokenEndpoint``
    /// domain when the server refuses or cannot be reached.
    public func revoke(refreshToken: String?, accessToken: String) async throws {
        let (token, hint) = refreshToken.map { ($0, "refresh_token") } ?? (accessToken, "access_token")
        guard let request = try makeRevocationRequest(token: token, hint: hint, assertion: try currentAssertion()) else { return }
        let response: HTTPResponseValue
        do {
            response = try await transport.send(request)
        } catch {
            throw AuthError.tokenEndpoint(.network, .transient, message: "the revocation endpoint did not answer")
        }
        guard (200..<300).contains(response.status) else {
            throw AuthError.tokenEndpoint(
                .unexpectedStatus, .terminal,
                message: "the revocation endpoint answered HTTP \(response.status)")
        }
    }
}
