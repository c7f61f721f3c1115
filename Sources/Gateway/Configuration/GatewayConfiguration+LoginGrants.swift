public import AuthCore
public import Foundation

extension GatewayConfiguration.Authorization {
    /// `authorization.jwtBearer`: the JWT bearer grant (RFC 7523 §2.1).
    public struct JWTBearer: Sendable, Codable, Equatable {
        /// The file holding the assertion (a Kubernetes projected service-account token, a
        /// SPIFFE JWT-SVID, …), read before every token request.
        public var assertionFile: String
        /// The `scope` to ask for when the login names none.
        public var scope: String?

        /// Creates the settings.
        public init(assertionFile: String, scope: String? = nil) {
            self.assertionFile = assertionFile
            self.scope = scope
        }
    }

    /// `authorization.tokenExchange`: token exchange (RFC 8693).
    public struct TokenExchange: Sendable, Codable, Equatable {
        /// The file holding the subject token, read before every exchange.
        public var subjectTokenFile: String
        /// `subject_token_type` (default `urn:ietf:params:oauth:token-type:jwt`).
        public var subjectTokenType: String?
        /// `audience`: one logical name of a service the token is for, or a list of them, when
        /// the server needs it; each is sent as an `audience` field of its own (RFC 8693 §2.1).
        public var audience: StringList?
        /// `resource`: one absolute URI without a fragment, or a list of them, when the server
        /// needs it; each is sent as a `resource` field of its own (RFC 8693 §2.1).
        public var resource: StringList?
        /// The `scope` to ask for when the login names none.
        public var scope: String?
        /// `requested_token_type`, when a particular kind of token is wanted.
        public var requestedTokenType: String?

        /// Creates the settings.
        public init(
            subjectTokenFile: String, subjectTokenType: String? = nil, audience: StringList? = nil, resource: StringList? = nil,
            scope: String? = nil, requestedTokenType: String? = nil
        ) {
            self.subjectTokenFile = subjectTokenFile
            self.subjectTokenType = subjectTokenType
            self.audience = audience
            self.resource = resource
            self.scope = scope
            self.requestedTokenType = requestedTokenType
        }
    }

    /// `authorization.autoLogin`: the session logs itself in at start and again whenever it
    /// ends, except after a logout someone asked for.
    ///
    /// With `device`, a device login (RFC 8628) starts at start and whenever the session
    /// ends; its user code and verification URI are logged (info) and shown by
    /// `GET /auth/session` and the events, and a new one starts when it expires unapproved.
    public struct AutoLogin: Sendable, Codable, Equatable {
        /// `client_credentials`, `jwt-bearer`, `token-exchange` or `device`.
        public var grant: String
        /// The `scope` to ask for (default: the grant's own `scope`, if any).
        public var scope: String?

        /// Creates the settings.
        public init(grant: String, scope: String? = nil) {
            self.grant = grant
            self.scope = scope
        }

        /// The grants `grant` may name.
        public static let grants = ["client_credentials", "jwt-bearer", "token-exchange", "device"]

        /// Whether the grant is a device login, started rather than presented.
        public var isDevice: Bool { grant == "device" }

        /// How to log in, once `grant` is valid: a grant to present, or a device login to start.
        public var method: SessionAutoLogin.Method {
            isDevice ? .device(scope: scope) : .grant(loginGrant)
        }

        /// The grant to present, once `grant` is valid (not `device`).
        public var loginGrant: Grant {
            switch grant {
            case "jwt-bearer": .jwtBearer(scope: scope)
            case "token-exchange": .tokenExchange(scope: scope)
            default: .clientCredentials(scope: scope)
            }
        }
    }

    /// The token client's JWT bearer settings.
    var jwtBearerSettings: JWTBearerGrantSettings? {
        jwtBearer.map { JWTBearerGrantSettings(assertionFile: $0.assertionFile, scope: $0.scope) }
    }

    /// The token client's token exchange settings.
    var tokenExchangeSettings: TokenExchangeSettings? {
        tokenExchange.map {
            TokenExchangeSettings(
                subjectTokenFile: $0.subjectTokenFile,
                subjectTokenType: $0.subjectTokenType ?? TokenExchangeSettings.jwtTokenType,
                audiences: $0.audience?.values ?? [], resources: $0.resource?.values ?? [], scope: $0.scope,
                requestedTokenType: $0.requestedTokenType)
        }
    }
}

extension GatewayConfiguration {
    /// The rules of `jwtBearer`, `tokenExchange` and `autoLogin` in `a` (no file is read).
    static func validateLoginGrants(_ a: Authorization, at field: String) throws(GatewayError) {
        if let x = a.tokenExchange {
            for (name, value) in [("subjectTokenType", x.subjectTokenType), ("requestedTokenType", x.requestedTokenType)] {
                if let value, !isAbsoluteURI(value) {
                    throw .invalid(
                        "\(field).tokenExchange.\(name)", "must be an absolute URI such as urn:ietf:params:oauth:token-type:jwt")
                }
            }
            for (name, list) in [("audience", x.audience), ("resource", x.resource)] {
                guard let values = list?.values else { continue }
                let at = "\(field).tokenExchange.\(name)"
                if values.isEmpty { throw .invalid(at, "must name at least one \(name) (or be left out)") }
                if Set(values).count != values.count { throw .invalid(at, "lists the same \(name) twice") }
                guard name == "resource" else { continue }
                for (i, resource) in values.enumerated() where !isAbsoluteURI(resource) || resource.contains("#") {
                    throw .invalid(
                        values.count == 1 ? at : "\(at)[\(i)]", "must be an absolute URI without a fragment (RFC 8693 §2.1)")
                }
            }
        }
        guard let auto = a.autoLogin else { return }
        guard Authorization.AutoLogin.grants.contains(auto.grant) else {
            throw .invalid("\(field).autoLogin.grant", "must be client_credentials, jwt-bearer, token-exchange or device")
        }
        switch auto.grant {
        case "jwt-bearer" where a.jwtBearer == nil:
            throw .required("\(field).jwtBearer", "is required by \(field).autoLogin.grant jwt-bearer")
        case "token-exchange" where a.tokenExchange == nil:
            throw .required("\(field).tokenExchange", "is required by \(field).autoLogin.grant token-exchange")
        case "client_credentials" where a.clientID == nil:
            throw .required("\(field).clientID", "is required by \(field).autoLogin.grant client_credentials")
        case "device" where a.deviceAuthorizationEndpoint == nil && a.issuer == nil:
            throw .required(
                "\(field).deviceAuthorizationEndpoint", "is required by \(field).autoLogin.grant device (or set \(field).issuer)")
        case "device" where a.clientID == nil:
            throw .required("\(field).clientID", "is required by \(field).autoLogin.grant device")
        default:
            break
        }
    }

    /// Whether `text` is an absolute URI: a scheme (RFC 3986 §3.1), a colon and more, with
    /// no space or control character.
    static func isAbsoluteURI(_ text: String) -> Bool {
        let scalars = Array(text.unicodeScalars)
        guard let colon = scalars.firstIndex(of: ":"), colon > 0, colon < scalars.count - 1 else { return false }
        func letter(_ c: Unicode.Scalar) -> Bool { ("a"..."z").contains(c) || ("A"..."Z").contains(c) }
        let schemeOK = scalars[..<colon].allSatisfy {
            letter($0) || ("0"..."9").contains($0) || "+-.".unicodeScalars.contains($0)
        }
        return letter(scalars[0]) && schemeOK && scalars.allSatisfy { $0.value > 0x20 && $0.value < 0x7F }
    }

    /// Reads the JWT bearer assertion and the token exchange's subject token files `a` names
    /// and checks they can be used now (as before every token request). The error names
    /// the field and the file, never its contents.
    static func checkLoginGrantFiles(_ a: Authorization, at field: String, now: Date) throws(GatewayError) {
        if let settings = a.jwtBearerSettings {
            let name = "\(field).jwtBearer.assertionFile"
            let data = try SecretSources.readBytes(settings.assertionFile, field: name)
            do { _ = try settings.assertion(now: now, read: { _ in data }) } catch { throw .invalid(name, error.message) }
        }
        if let settings = a.tokenExchangeSettings {
            let name = "\(field).tokenExchange.subjectTokenFile"
            let data = try SecretSources.readBytes(settings.subjectTokenFile, field: name)
            do { _ = try settings.subjectToken(now: now, read: { _ in data }) } catch { throw .invalid(name, error.message) }
        }
    }
}
