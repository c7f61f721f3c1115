internal import Foundation

extension OAuth2Client {
    /// Builds the HTTP request for `grant` (pure; no I/O); `assertion` is the client
    /// assertion when the client authenticates with one; `grantToken` the JWT bearer
    /// assertion or the token exchange's subject token, read from its file by the caller.
    public func makeRequest(for grant: Grant, assertion: String? = nil, grantToken: String? = nil) throws
        -> HTTPRequestValue
    {
        let mapping = configuration.mapping
        var fields: [(String, String)] = []
        var headers: [(name: String, value: String)] = [("Accept", "application/json")]
        var url = configuration.tokenEndpoint

        if !mapping.omitGrantType {
            fields.append(("grant_type", grant.grantType))
        }
        switch grant {
        case .password(let username, let password, let scope):
            fields.append(("username", username))
            fields.append(("password", password))
            if let scope { fields.append(("scope", scope)) }
        case .clientCredentials(let scope):
            if let scope { fields.append(("scope", scope)) }
        case .authorizationCode(let code, let redirectURI, let codeVerifier):
            fields.append(("code", code))
            if let redirectURI { fields.append(("redirect_uri", redirectURI)) }
            if let codeVerifier { fields.append(("code_verifier", codeVerifier)) }
        case .refreshToken(let refreshToken, let expiredAccessToken, let scope):
            fields.append(("refresh_token", refreshToken))
            if let scope { fields.append(("scope", scope)) }
            if let refreshURL = mapping.refreshURL { url = refreshURL }
            if mapping.refreshSendsExpiredAccessToken, let expiredAccessToken {
                headers.append(("Authorization", "Bearer \(expiredAccessToken)"))
            }
        case .jwtBearer(let scope):
            fields += try jwtBearerFields(scope: scope, assertion: grantToken)
        case .tokenExchange(let scope):
            fields += try tokenExchangeFields(scope: scope, subjectToken: grantToken)
        case .deviceCode(let deviceCode):
            fields.append(("device_code", deviceCode))
        }

        try authenticate(&headers, &fields, assertion: assertion)

        fields = fields.map { (mapping.fieldName($0.0), $0.1) }
        for (name, value) in mapping.extraFields.sorted(by: { $0.key < $1.key }) {
            fields.append((name, value))
        }

        let body: [UInt8]
        switch mapping.requestBody {
        case .form:
            headers.append(("Content-Type", "application/x-www-form-urlencoded"))
            body = Array(FormURLEncoding.encode(fields).utf8)
        case .json:
            headers.append(("Content-Type", "application/json"))
            var object: [String: String] = [:]
            for (name, value) in fields { object[name] = value }
            let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
            body = Array(data)
        }
        return HTTPRequestValue(
            method: "POST", url: url, headers: headers, body: body, clientCertificate: configuration.certificate)
    }

    /// Adds the client's authentication (RFC 6749 §2.3) to a token or revocation request.
    func authenticate(
        _ headers: inout [(name: String, value: String)], _ fields: inout [(String, String)], assertion: String?
    ) throws {
        switch configuration.authentication {
        case .basic:
            guard let clientID = configuration.clientID else { break }
            if headers.contains(where: { $0.name == "Authorization" }) {
                throw AuthError.tokenEndpoint(
                    .invalidConfiguration, .terminal,
                    message: "basic client authentication conflicts with refreshSendsExpiredAccessToken; use post")
            }
            let pair =
                "\(FormURLEncoding.encode(clientID)):\(FormURLEncoding.encode(configuration.clientSecret ?? ""))"
            headers.append(("Authorization", "Basic \(Data(pair.utf8).base64EncodedString())"))
        case .post:
            if let clientID = configuration.clientID { fields.append(("client_id", clientID)) }
            if let secret = configuration.clientSecret { fields.append(("client_secret", secret)) }
        case .none, .tlsClientAuth, .selfSignedTLSClientAuth:
            // The certificate, shown in the handshake, is the credential (RFC 8705 §2).
            if let clientID = configuration.clientID { fields.append(("client_id", clientID)) }
        case .privateKeyJWT, .clientSecretJWT:
            guard let assertion else {
                throw AuthError.tokenEndpoint(
                    .clientCredentialsUnusable, .transient, message: "no client assertion was made for this request")
            }
            if let clientID = configuration.clientID { fields.append(("client_id", clientID)) }
            fields.append(("client_assertion_type", ClientAssertion.type))
            fields.append(("client_assertion", assertion))
        }
    }

    /// Builds the RFC 7009 revocation request for `token` (pure; no I/O); `nil` when no
    /// revocation endpoint is configured.
    public func makeRevocationRequest(token: String, hint: String, assertion: String? = nil) throws -> HTTPRequestValue? {
        guard let endpoint = configuration.revocationEndpoint else { return nil }
        var headers: [(name: String, value: String)] = [("Accept", "application/json")]
        var fields: [(String, String)] = [("token", token), ("token_type_hint", hint)]
        try authenticate(&headers, &fields, assertion: assertion)
        headers.append(("Content-Type", "application/x-www-form-urlencoded"))
        return HTTPRequestValue(
            method: "POST", url: endpoint, headers: headers, body: Array(FormURLEncoding.encode(fields).utf8),
            clientCertificate: configuration.certificate)
    }
}
