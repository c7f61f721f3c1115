public import AuthCore
public import Foundation

/// Everything `authgate serve` reads from its configuration file (JSON).
///
/// Secrets are never inline: the client secret, the admin token and the store key come
/// from files (a Kubernetes secret, a systemd credential) or, for the key, from the
/// environment, read by `main` only.
public struct GatewayConfiguration: Sendable, Codable, Equatable {
    /// A proxied path prefix.
    public struct Route: Sendable, Codable, Equatable {
        /// The path prefix the route serves (starts with `/`; matched at a segment boundary).
        public var prefix: String
        /// The upstream base URL (`http` or `https`, no query or fragment).
        public var upstream: String
        /// Remove the prefix from the path sent upstream (default `false`).
        public var stripPrefix: Bool?
        /// Attach the session's token (default `true`); `false` makes a public route.
        public var requiresAuthentication: Bool?
        /// On a public route, pass the client's own `Authorization` through (default `false`).
        public var forwardClientAuthorization: Bool?
        /// The session whose token this route gets (default `default`: the top-level
        /// `authorization`).
        public var session: String?
        /// At most this many requests of an authenticated route at its upstream at once; the
        /// rest wait in AuthGate and take the token as they leave (default: no bound).
        public var maxInFlight: Int?
        /// How long a request waits for one of those slots before a 503 (default 10).
        public var queueTimeoutSeconds: Int?
        /// Bound the route by its upstream origin's adaptive limit (``adaptiveLimitDefault``).
        public var adaptiveLimit: Bool? = nil
        /// The callers the route serves (default: every caller that reaches the listener).
        public var callers: Callers?
        /// The PEM certificate shown to an `https` upstream that asks for one (mutual TLS),
        /// with ``clientCertificateKeyFile``. An authenticated route without one shows its
        /// session's `authorization.clientCertificateFile`, to which the session's tokens may
        /// be bound (RFC 8705 §3).
        public var clientCertificateFile: String? = nil
        /// The PEM key of ``clientCertificateFile``, readable by its owner only.
        public var clientCertificateKeyFile: String? = nil
        /// Creates a route; every option left `nil` takes its default.
        public init(
            prefix: String, upstream: String, stripPrefix: Bool? = nil, requiresAuthentication: Bool? = nil,
            forwardClientAuthorization: Bool? = nil, session: String? = nil, maxInFlight: Int? = nil,
            queueTimeoutSeconds: Int? = nil, callers: Callers? = nil
        ) {
            self.callers = callers
            self.maxInFlight = maxInFlight
            self.queueTimeoutSeconds = queueTimeoutSeconds
            self.session = session
            self.prefix = prefix
            self.upstream = upstream
            self.stripPrefix = stripPrefix
            self.requiresAuthentication = requiresAuthentication
            self.forwardClientAuthorization = forwardClientAuthorization
        }
    }

    /// The authorization server.
    public struct Authorization: Sendable, Codable, Equatable {
        /// The OpenID Connect issuer: at start, `tokenEndpoint`, `revocationEndpoint` and
        /// `deviceAuthorizationEndpoint` that are not set here are read from `{issuer}/.well-known/openid-configuration`.
        public var issuer: String?
        /// The token endpoint; required unless `issuer` is set.
        public var tokenEndpoint: String?
        /// The OAuth 2 client identifier.
        public var clientID: String?
        /// A file holding the client secret.
        public var clientSecretFile: String?
        /// `basic`, `post`, `none`, `private_key_jwt`, `client_secret_jwt`, `tls_client_auth`
        /// or `self_signed_tls_client_auth`.
        public var clientAuthentication: String?
        /// `private_key_jwt`: the PEM file of the key the client signs its assertions with
        /// (EC P-256, or RSA of at least 2,048 bits), readable by the owner only; read for
        /// every token request, so a replaced key is used at once.
        public var clientKeyFile: String?
        /// `private_key_jwt`: `ES256` (EC keys), `PS256` or `RS256` (RSA keys; RS256 by default).
        public var clientKeyAlgorithm: String?
        /// `private_key_jwt`: the assertion's `kid` (default: the key's RFC 7638 thumbprint).
        public var clientKeyID: String?
        /// `private_key_jwt` with a JWT made by someone else (a Kubernetes projected
        /// service-account token, a SPIFFE JWT-SVID): the file it is read from before every
        /// token request.
        public var clientAssertionFile: String?
        /// The assertion's `aud`: `tokenEndpoint` (default) or `issuer`, as the server wants.
        public var clientAssertionAudience: String?
        /// The PEM certificate (and any intermediates) shown to the token endpoint: the
        /// credential of `tls_client_auth` and `self_signed_tls_client_auth`; with another
        /// method, what the server may bind the tokens to (RFC 8705 §3). It is shown to the
        /// session's authenticated routes too. Read at each new connection, so a renewed
        /// certificate is used without a restart.
        public var clientCertificateFile: String? = nil
        /// The PEM key of ``clientCertificateFile``, readable by its owner only.
        public var clientCertificateKeyFile: String? = nil
        /// Sender-constrained tokens (RFC 9449): the key every token request and every
        /// proxied request of the session proves possession of.
        public var dpop: DPoP? = nil
        /// A declarative mapping for a non-standard token endpoint.
        public var mapping: TokenEndpointMapping?
        /// The RFC 7009 revocation endpoint: a logout someone asked for revokes the tokens.
        public var revocationEndpoint: String?
        /// The device authorization endpoint (RFC 8628 §3.1), for device logins; read from
        /// the issuer's `device_authorization_endpoint` when not set.
        public var deviceAuthorizationEndpoint: String? = nil
        /// The JWT bearer grant (RFC 7523 §2.1): where its assertion is read from.
        public var jwtBearer: JWTBearer? = nil
        /// Token exchange (RFC 8693): where the subject token is read from, and what to ask for.
        public var tokenExchange: TokenExchange? = nil
        /// Log in at start, and again whenever the session ends, with a grant that needs no
        /// person.
        public var autoLogin: AutoLogin? = nil
        /// Creates the settings of an authorization server.
        public init(
            tokenEndpoint: String?, clientID: String? = nil, clientSecretFile: String? = nil,
            clientAuthentication: String? = nil, mapping: TokenEndpointMapping? = nil, revocationEndpoint: String? = nil,
            issuer: String? = nil, clientKeyFile: String? = nil, clientKeyAlgorithm: String? = nil,
            clientKeyID: String? = nil, clientAssertionFile: String? = nil, clientAssertionAudience: String? = nil
        ) {
            self.issuer = issuer
            self.clientKeyFile = clientKeyFile
            self.clientKeyAlgorithm = clientKeyAlgorithm
            self.clientKeyID = clientKeyID
            self.clientAssertionFile = clientAssertionFile
            self.clientAssertionAudience = clientAssertionAudience
            self.revocationEndpoint = revocationEndpoint
            self.tokenEndpoint = tokenEndpoint
            self.clientID = clientID
            self.clientSecretFile = clientSecretFile
            self.clientAuthentication = clientAuthentication
            self.mapping = mapping
        }
    }

    /// The DPoP key of a session.
    public struct DPoP: Sendable, Codable, Equatable {
        /// The PEM file of the key (EC P-256, or RSA of at least 2,048 bits), readable by its
        /// owner only. A session whose tokens are bound to another key than the file holds
        /// ends (`key_changed`). Exactly one of `keyFile` and `generate`.
        public var keyFile: String?
        /// `true`: a key is generated when a session begins and kept sealed with its tokens
        /// (in the file or PostgreSQL store, so a restart or another replica proves the same
        /// key); a logout forgets it.
        public var generate: Bool?
        /// `ES256` or `PS256` (default: ES256 for an EC key, PS256 for an RSA key; ES256 for
        /// a generated key).
        public var algorithm: String?

        /// A key read from `keyFile`, or generated with `generate: true`.
        public init(keyFile: String? = nil, generate: Bool? = nil, algorithm: String? = nil) {
            self.keyFile = keyFile
            self.generate = generate
            self.algorithm = algorithm
        }
    }

    /// A session besides the default one: its own identity at its own (or the same)
    /// authorization server, its own tokens and events.
    public struct Session: Sendable, Codable, Equatable {
        /// The name routes and the admin API (`?session=`) use; also the account name in
        /// the stores. Lower-case letters, digits, `-` and `_`; not `default`.
        public var name: String
        /// The session's authorization server and client.
        public var authorization: Authorization
        /// The user-info call for this session.
        public var userInfo: UserInfoProbe.Configuration?
        /// Creates a session.
        public init(name: String, authorization: Authorization, userInfo: UserInfoProbe.Configuration? = nil) {
            self.name = name
            self.authorization = authorization
            self.userInfo = userInfo
        }
    }

    /// The name of the session the top-level `authorization` defines.
    public static let defaultSession = "default"

    /// The proxy listener (TCP).
    public var proxy: Listener
    /// The admin API's listener: TCP (keep it on loopback) or a Unix domain socket.
    public var admin: Listener
    /// An optional listener that answers only `GET`/`HEAD` `/livez` and `/readyz`, for
    /// probes that cannot reach the admin API (the kubelet's, when the admin API is on a Unix
    /// socket or on loopback). It never looks at an admin token.
    public var probes: Listener?
    /// An optional listener that answers only `GET`/`HEAD` `/metrics`, without the admin
    /// token, for scrapers (which rarely carry a bearer token). The metrics stay on the admin
    /// API too, behind the token.
    public var metrics: Listener?
    /// A file holding the admin token.
    public var adminTokenFile: String?
    /// Must be true to run the admin API without a token.
    public var adminTokenDisabled: Bool?
    /// The default session's authorization server and client.
    public var authorization: Authorization
    /// More sessions, each named; routes choose one with `session`.
    public var sessions: [Session]?
    /// The proxy's routes (at least one); the longest matching prefix wins.
    public var routes: [Route]
    /// Where the encrypted tokens and the session state live.
    public var stateDirectory: String
    /// Where the tokens and the session state are kept: files in `stateDirectory` (the
    /// default) or a PostgreSQL table replicas share (see ``Store``).
    public var store: Store?
    /// A file holding the 32-byte store key (raw or base64).
    public var keyFile: String?
    /// Create the key file (mode 0600) when it is missing.
    public var createKey: Bool?
    /// Event loops; default one per core.
    public var loops: Int?
    /// Refresh this many seconds before expiry (default 30).
    public var refreshSkewSeconds: Int?
    /// When to refresh before expiry: seconds (`30`) or a share of the lifetime (`"50%"`).
    /// Takes the place of `refreshSkewSeconds`; set one of them.
    public var refreshLead: RefreshLead?
    /// A random extra lead of up to this many seconds, drawn per token, so replicas do not
    /// refresh in lockstep (default 5; 0 turns it off). Never more than half a token's life.
    public var refreshJitterSeconds: Int?
    /// The refresh-loop guard: at most this many refreshes that replace a young token within
    /// 30 s (default 5). Refreshes at expiry never count.
    public var refreshLoopLimit: Int?
    /// The most times one request is replayed after its token was rejected (default 3;
    /// 0 turns replays off).
    public var maxReplays: Int?
    /// How long a call to the token endpoint may take, in seconds (default 10): a request
    /// waiting on a refresh waits at most this long before the replay.
    public var tokenEndpointTimeoutSeconds: Int?
    /// Request bodies up to this size are kept for a replay (default 1 MiB).
    public var replayLimitBytes: Int?
    /// Connections the proxy listener serves at once (default 10,000); past it a new one gets
    /// 503 and is closed. Each holds at most ~640 KiB while it streams (body and write high
    /// waters, read-ahead), so size it to the memory limit.
    public var maxConnections: Int?
    /// Request bodies held in memory at once, across every connection of both listeners
    /// (default 64 MiB); past it a request gets 503 and is closed.
    public var maxBufferedRequestBytes: Int?
    /// A CA bundle for TLS upstreams and the token endpoint.
    public var caFile: String?
    /// Which upstream answers mean "token rejected": `statuses` (default `[401]`), `realms`
    /// (default any) and `bareUnauthorizedMeansTokenRejected` (default `true`).
    public var upstreamRejection: UpstreamRejectionPolicy?
    /// The user-info call made once a session exists (SEEDS row 4): `{url,
    /// needsSignUpStatuses, maxRetrySeconds}`.
    public var userInfo: UserInfoProbe.Configuration?
    /// A path the proxy listener answers itself for liveness probes (default `/livez`).
    public var proxyLivenessPath: String?
    /// How long connecting to an upstream may take, in seconds (default 5).
    public var connectTimeoutSeconds: Int?
    /// How long one upstream exchange may take, in seconds (default 60).
    public var upstreamTimeoutSeconds: Int?
    /// How long a connection spliced after `101 Switching Protocols` (WebSocket) may go with
    /// no byte moving either way before both sides are closed, in seconds (default 300).
    public var upgradeIdleTimeoutSeconds: Int?
    /// Accept `http://` for the token, revocation and user-info endpoints, the issuer and
    /// authenticated routes' upstreams on hosts other than loopback (default `false`: a
    /// token or a client secret never crosses a network in the clear by accident).
    public var allowInsecureHTTP: Bool?
    /// IP addresses of proxies in front of AuthGate whose `X-Forwarded-For` is kept (and
    /// appended to); anyone else's is replaced by the client's address.
    public var trustForwardedFrom: [String]?
    /// One log line per proxied request (label `authgate.access`): on by default, with
    /// `{enabled, sample, includeQuery}` (see ``AccessLogSettings``).
    public var accessLog: AccessLogSettings?

    /// Creates a configuration with the required fields; set the others as properties.
    public init(
        proxy: Listener, admin: Listener, adminTokenFile: String? = nil, adminTokenDisabled: Bool? = nil,
        authorization: Authorization, routes: [Route], stateDirectory: String, keyFile: String? = nil,
        createKey: Bool? = nil, loops: Int? = nil
    ) {
        self.proxy = proxy
        self.admin = admin
        self.adminTokenFile = adminTokenFile
        self.adminTokenDisabled = adminTokenDisabled
        self.authorization = authorization
        self.routes = routes
        self.stateDirectory = stateDirectory
        self.keyFile = keyFile
        self.createKey = createKey
        self.loops = loops
    }

    /// Every session: the default one (top-level `authorization` and `userInfo`) first.
    public var allSessions: [Session] {
        [Session(name: Self.defaultSession, authorization: authorization, userInfo: userInfo)] + (sessions ?? [])
    }

    /// The gateway routes.
    public var proxyRoutes: [ProxyRoute] {
        routes.map {
            let upstream = ProxyRoute.parseUpstream($0.upstream)!
            return ProxyRoute(
                prefix: $0.prefix, upstream: upstream.origin, upstreamPath: upstream.path, stripPrefix: $0.stripPrefix ?? false,
                requiresAuthentication: $0.requiresAuthentication ?? true,
                forwardClientAuthorization: $0.forwardClientAuthorization, session: $0.session ?? Self.defaultSession,
                maxInFlight: $0.maxInFlight, queueTimeout: .seconds($0.queueTimeoutSeconds ?? Route.queueTimeoutDefault),
                // Checked by `validate()`: a name that stopped resolving since admits nobody.
                callers: $0.callers.map { (try? $0.rule(at: "callers")) ?? CallerRule(uids: [], gids: [], networks: []) },
                adaptiveLimit: $0.adaptiveLimit, clientIdentity: upstreamIdentity(of: $0))
        }
    }
}

extension GatewayConfiguration.Route {
    /// `routes[].queueTimeoutSeconds` when absent: the longest a request waits in AuthGate
    /// for a slot at its upstream. See docs/RUNTIME.md, "The adaptive in-flight limit".
    public static let queueTimeoutDefault = 10

    /// `routes[].adaptiveLimit` when absent: on for an authenticated route without
    /// `maxInFlight` (which then stays a fixed bound), off for a public one. A public route
    /// may opt in (`true`); `queueTimeoutSeconds` then applies to it too.
    public var adaptiveLimitDefault: Bool {
        (requiresAuthentication ?? true) && maxInFlight == nil
    }
}
