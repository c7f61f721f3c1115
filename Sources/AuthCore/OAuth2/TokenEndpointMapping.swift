/// How to talk to a token endpoint that does not follow RFC 6749 to the letter, declared as
/// data (it decodes from the JSON configuration) rather than written as code per server.
///
/// The default value is plain RFC 6749. A server that takes a JSON body, wants the expired
/// access token as `Bearer` on the refresh call and returns the new access token in the
/// `Authorization` response header (SEEDS.md row 7) is described by:
///
/// ```json
/// { "requestBody": "json", "refreshURL": "https://api.example.com/auth/refresh",
///   "omitGrantType": true, "requestFieldNames": { "refresh_token": "refreshToken" },
///   "refreshSendsExpiredAccessToken": true, "accessTokenHeader": "Authorization",
///   "paths": { "refreshToken": "data.refreshToken", "expiresIn": "data.expiresIn" },
///   "terminalStatuses": [401] }
/// ```
public struct TokenEndpointMapping: Sendable, Equatable, Codable {
    /// How request bodies are encoded.
    public enum BodyEncoding: String, Sendable, Codable {
        /// `application/x-www-form-urlencoded` (RFC 6749).
        case form
        /// `application/json`, a flat object of strings.
        case json
    }

    /// Where fields are found in a JSON response: dotted paths such as `data.accessToken`.
    public struct ResponsePaths: Sendable, Equatable, Codable {
        /// Path of the access token (ignored when ``TokenEndpointMapping/accessTokenHeader`` is set).
        public var accessToken: String
        /// Path of the refresh token.
        public var refreshToken: String
        /// Path of the lifetime in seconds (a number or a numeric string).
        public var expiresIn: String
        /// Path of the token type.
        public var tokenType: String
        /// Path of the granted scope.
        public var scope: String
        /// Path of the ID token.
        public var idToken: String
        /// Path of the error code in an error body.
        public var error: String
        /// Path of the error description in an error body.
        public var errorDescription: String

        /// Creates paths; every one defaults to its RFC 6749 name.
        public init(
            accessToken: String = "access_token", refreshToken: String = "refresh_token",
            expiresIn: String = "expires_in", tokenType: String = "token_type",
            scope: String = "scope", idToken: String = "id_token", error: String = "error",
            errorDescription: String = "error_description"
        ) {
            self.accessToken = accessToken
            self.refreshToken = refreshToken
            self.expiresIn = expiresIn
            self.tokenType = tokenType
            self.scope = scope
            self.idToken = idToken
            self.error = error
            self.errorDescription = errorDescription
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            let d = ResponsePaths()
            accessToken = try c.decodeIfPresent(String.self, forKey: .accessToken) ?? d.accessToken
            refreshToken = try c.decodeIfPresent(String.self, forKey: .refreshToken) ?? d.refreshToken
            expiresIn = try c.decodeIfPresent(String.self, forKey: .expiresIn) ?? d.expiresIn
            tokenType = try c.decodeIfPresent(String.self, forKey: .tokenType) ?? d.tokenType
            scope = try c.decodeIfPresent(String.self, forKey: .scope) ?? d.scope
            idToken = try c.decodeIfPresent(String.self, forKey: .idToken) ?? d.idToken
            error = try c.decodeIfPresent(String.self, forKey: .error) ?? d.error
            errorDescription =
                try c.decodeIfPresent(String.self, forKey: .errorDescription) ?? d.errorDescription
        }
    }

    /// Request body encoding. Default `.form`.
    public var requestBody: BodyEncoding
    /// A different URL for the refresh call; `nil` uses the token endpoint.
    public var refreshURL: String?
    /// Leave `grant_type` out of the body (servers with one endpoint per grant).
    public var omitGrantType: Bool
    /// Renames request fields: standard name (`refresh_token`, `username`, …) → server's name.
    public var requestFieldNames: [String: String]
    /// Extra fields added to every request body.
    public var extraFields: [String: String]
    /// Send the current (possibly expired) access token as `Authorization: Bearer` on the
    /// refresh call. HTTP Basic client authentication is then impossible; use `.post`.
    public var refreshSendsExpiredAccessToken: Bool
    /// Take the access token from this response header (a `Bearer ` prefix is removed)
    /// instead of the JSON body.
    public var accessTokenHeader: String?
    /// Where response fields are found.
    public var paths: ResponsePaths
    /// Statuses that end the session on refresh even without an OAuth error body (servers
    /// that answer an expired refresh token with a bare 401).
    public var terminalStatuses: [Int]

    /// Creates a mapping; the defaults are plain RFC 6749.
    public init(
        requestBody: BodyEncoding = .form, refreshURL: String? = nil, omitGrantType: Bool = false,
        requestFieldNames: [String: String] = [:], extraFields: [String: String] = [:],
        refreshSendsExpiredAccessToken: Bool = false, accessTokenHeader: String? = nil,
        paths: ResponsePaths = ResponsePaths(), terminalStatuses: [Int] = []
    ) {
        self.requestBody = requestBody
        self.refreshURL = refreshURL
        self.omitGrantType = omitGrantType
        self.requestFieldNames = requestFieldNames
        self.extraFields = extraFields
        self.refreshSendsExpiredAccessToken = refreshSendsExpiredAccessToken
        self.accessTokenHeader = accessTokenHeader
        self.paths = paths
        self.terminalStatuses = terminalStatuses
    }

    /// Plain RFC 6749.
    public static let standard = TokenEndpointMapping()

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        requestBody = try c.decodeIfPresent(BodyEncoding.self, forKey: .requestBody) ?? .form
        refreshURL = try c.decodeIfPresent(String.self, forKey: .refreshURL)
        omitGrantType = try c.decodeIfPresent(Bool.self, forKey: .omitGrantType) ?? false
        requestFieldNames =
            try c.decodeIfPresent([String: String].self, forKey: .requestFieldNames) ?? [:]
        extraFields = try c.decodeIfPresent([String: String].self, forKey: .extraFields) ?? [:]
        refreshSendsExpiredAccessToken =
            try c.decodeIfPresent(Bool.self, forKey: .refreshSendsExpiredAccessToken) ?? false
        accessTokenHeader = try c.decodeIfPresent(String.self, forKey: .accessTokenHeader)
        paths = try c.decodeIfPresent(ResponsePaths.self, forKey: .paths) ?? ResponsePaths()
        terminalStatuses = try c.decodeIfPresent([Int].self, forKey: .terminalStatuses) ?? []
    }

    /// The server's name for a standard request field.
    func fieldName(_ standard: String) -> String {
        requestFieldNames[standard] ?? standard
    }
}
