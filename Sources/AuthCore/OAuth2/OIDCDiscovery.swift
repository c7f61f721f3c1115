internal import Foundation

/// The endpoints an OpenID Connect provider publishes at
/// `{issuer}/.well-known/openid-configuration` (OpenID Connect Discovery 1.0 §4, and
/// RFC 8414 for the OAuth 2 metadata it shares).
///
/// Parsing is pure: ``parse(_:expectedIssuer:)`` checks the document the way §4.3 asks —
/// the `issuer` it names must be exactly the one configured — and that every endpoint it
/// gives is an absolute http(s) URL.
public struct OIDCDiscovery: Sendable, Equatable {
    /// The issuer, exactly as configured.
    public var issuer: String
    /// `token_endpoint`.
    public var tokenEndpoint: String
    /// `revocation_endpoint` (RFC 7009), when the provider has one.
    public var revocationEndpoint: String?
    /// `introspection_endpoint` (RFC 7662), when the provider has one.
    public var introspectionEndpoint: String?
    /// `userinfo_endpoint`, when the provider has one.
    public var userInfoEndpoint: String?
    /// `authorization_endpoint`, when the provider has one.
    public var authorizationEndpoint: String?
    /// `device_authorization_endpoint` (RFC 8628 §4), when the provider has one.
    public var deviceAuthorizationEndpoint: String?
    /// `mtls_endpoint_aliases` (RFC 8705 §5): the endpoints a client that shows a
    /// certificate uses instead of the ones above, each only when the provider names it.
    public var mutualTLSAliases: MutualTLSAliases

    /// The endpoints of `mtls_endpoint_aliases`.
    public struct MutualTLSAliases: Sendable, Equatable {
        /// `token_endpoint`.
        public var tokenEndpoint: String?
        /// `revocation_endpoint`.
        public var revocationEndpoint: String?
        /// `introspection_endpoint`.
        public var introspectionEndpoint: String?
        /// `userinfo_endpoint`.
        public var userInfoEndpoint: String?
        /// `device_authorization_endpoint`.
        public var deviceAuthorizationEndpoint: String?

        /// Creates aliases; none by default.
        public init(
            tokenEndpoint: String? = nil, revocationEndpoint: String? = nil, introspectionEndpoint: String? = nil,
            userInfoEndpoint: String? = nil
        ) {
            self.tokenEndpoint = tokenEndpoint
            self.revocationEndpoint = revocationEndpoint
            self.introspectionEndpoint = introspectionEndpoint
            self.userInfoEndpoint = userInfoEndpoint
        }
    }

    /// Creates a document.
    public init(
        issuer: String, tokenEndpoint: String, revocationEndpoint: String? = nil, introspectionEndpoint: String? = nil,
        userInfoEndpoint: String? = nil, authorizationEndpoint: String? = nil,
        mutualTLSAliases: MutualTLSAliases = MutualTLSAliases()
    ) {
        self.mutualTLSAliases = mutualTLSAliases
        self.issuer = issuer
        self.tokenEndpoint = tokenEndpoint
        self.revocationEndpoint = revocationEndpoint
        self.introspectionEndpoint = introspectionEndpoint
        self.userInfoEndpoint = userInfoEndpoint
        self.authorizationEndpoint = authorizationEndpoint
    }

    /// Where the document of `issuer` lives: the issuer without a trailing `/`, then
    /// `/.well-known/openid-configuration`.
    public static func documentURL(forIssuer issuer: String) -> String {
        var base = Substring(issuer)
        while base.hasSuffix("/") { base = base.dropLast() }
        return base + "/.well-known/openid-configuration"
    }

    /// Whether `text` can be an issuer: an absolute http(s) URL with a host and no query or
    /// fragment (§2 of OpenID Connect Discovery).
    public static func isValidIssuer(_ text: String) -> Bool {
        guard isEndpoint(text), let c = URLComponents(string: text) else { return false }
        return c.query == nil && c.fragment == nil
    }

    /// Parses the document served for `expectedIssuer`.
    public static func parse(_ body: [UInt8], expectedIssuer: String) throws(AuthError) -> OIDCDiscovery {
        let object: [String: Any]
        do {
            guard let o = try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
                throw AuthError.input(.invalidDiscovery, "the discovery document is not a JSON object")
            }
            object = o
        } catch let e as AuthError {
            throw e
        } catch {
            throw AuthError.input(.invalidDiscovery, "the discovery document is not valid JSON")
        }
        guard let issuer = object["issuer"] as? String else {
            throw AuthError.input(.invalidDiscovery, "the discovery document has no issuer")
        }
        guard issuer == expectedIssuer else {
            throw AuthError(
                .invalidDiscovery,
                message: "the discovery document names another issuer (\(issuer.prefix(200))) than the one configured")
        }
        func endpoint(_ key: String, in object: [String: Any], at path: String = "", required: Bool) throws(AuthError)
            -> String?
        {
            guard let value = object[key], !(value is NSNull) else {
                if required { throw AuthError.input(.invalidDiscovery, "the discovery document has no \(path)\(key)") }
                return nil
            }
            guard let text = value as? String, isEndpoint(text) else {
                throw AuthError.input(.invalidDiscovery, "the discovery document's \(path)\(key) is not an http or https URL")
            }
            return text
        }
        var aliases = MutualTLSAliases()
        if let value = object["mtls_endpoint_aliases"], !(value is NSNull) {
            guard let members = value as? [String: Any] else {
                throw AuthError.input(.invalidDiscovery, "the discovery document's mtls_endpoint_aliases is not a JSON object")
            }
            let path = "mtls_endpoint_aliases."
            aliases.tokenEndpoint = try endpoint("token_endpoint", in: members, at: path, required: false)
            aliases.revocationEndpoint = try endpoint("revocation_endpoint", in: members, at: path, required: false)
            aliases.introspectionEndpoint = try endpoint("introspection_endpoint", in: members, at: path, required: false)
            aliases.userInfoEndpoint = try endpoint("userinfo_endpoint", in: members, at: path, required: false)
            aliases.deviceAuthorizationEndpoint = try endpoint(
                "device_authorization_endpoint", in: members, at: path, required: false)
        }
        var document = OIDCDiscovery(
            issuer: issuer, tokenEndpoint: try endpoint("token_endpoint", in: object, required: true)!,
            revocationEndpoint: try endpoint("revocation_endpoint", in: object, required: false),
            introspectionEndpoint: try endpoint("introspection_endpoint", in: object, required: false),
            userInfoEndpoint: try endpoint("userinfo_endpoint", in: object, required: false),
            authorizationEndpoint: try endpoint("authorization_endpoint", in: object, required: false),
            mutualTLSAliases: aliases)
        document.deviceAuthorizationEndpoint = try endpoint("device_authorization_endpoint", in: object, required: false)
        return document
    }

    private static func isEndpoint(_ text: String) -> Bool {
        guard text.hasPrefix("http://") || text.hasPrefix("https://"), let c = URLComponents(string: text),
            let host = c.host, !host.isEmpty
        else { return false }
        return text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
    }
}
