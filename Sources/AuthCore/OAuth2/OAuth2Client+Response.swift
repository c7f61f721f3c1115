public import Foundation

extension OAuth2Client {
    /// Interprets a token endpoint response (pure; no I/O).
    ///
    /// - 2xx: the token response, read through the mapping; a body that cannot be read is
    ///   ``AuthError/Disposition/ambiguous`` (the server may have rotated).
    /// - 429, 5xx: transient, with `Retry-After` when sent.
    /// - 400/401 with an RFC 6749 §5.2 error body: terminal (for the standard codes), except
    ///   `invalid_client` for a client that authenticates with an assertion: its key or
    ///   assertion file can be put right without a restart (a key rotated on disk before the
    ///   server registered it), and the refresh token may still be good, so it is transient.
    /// - A status listed in ``TokenEndpointMapping/terminalStatuses``: terminal.
    /// - Anything else (a proxy's HTML page, a bare 403): transient.
    ///
    /// A success whose `access_token`, `token_type` or `refresh_token` breaks its syntax
    /// (``TokenSyntax``; such a token could split the header line it goes into) is
    /// ``AuthError/Code/invalidTokenSyntax``, ambiguous, naming the field only.
    public func parse(_ response: HTTPResponseValue, for grant: Grant, now: Date) throws
        -> TokenResponse
    {
        let mapping = configuration.mapping
        let json = try? JSONSerialization.jsonObject(
            with: Data(response.body), options: [.fragmentsAllowed])
        let retryAfter = response.header("Retry-After").flatMap { RetryAfter.parse($0, now: now) }

        guard (200..<300).contains(response.status) else {
            let oauthError = json.flatMap { Self.oauthError(in: $0, paths: mapping.paths) }
            if response.status == 429 {
                throw AuthError.tokenEndpoint(
                    .rateLimited, .transient, status: 429,
                    oauthError: oauthError, retryAfter: retryAfter)
            }
            if response.status >= 500 {
                throw AuthError.tokenEndpoint(
                    .serverError, .transient, status: response.status,
                    oauthError: oauthError, retryAfter: retryAfter)
            }
            if let oauthError {
                // A key, assertion or certificate comes from a file that can be put right on
                // disk: the session keeps its token and tries again.
                let fromFiles = configuration.authentication.usesAssertion || configuration.authentication.usesCertificate
                // So is the assertion or subject token of a grant read from a file: the
                // server refusing it (RFC 7523 §3.1 `invalid_grant`, RFC 8693 §2.2.2
                // `invalid_request`) is put right by the next file.
                let grantFileRefused = grant.readsFile && ["invalid_grant", "invalid_request"].contains(oauthError.error)
                let credentialsMayRecover = oauthError.error == "invalid_client" && fromFiles || grantFileRefused
                let terminal =
                    oauthError.isTerminal && [400, 401].contains(response.status) && !credentialsMayRecover
                    || mapping.terminalStatuses.contains(response.status)
                var error = AuthError.tokenEndpoint(
                    .oauthError, terminal ? .terminal : .transient,
                    status: response.status, oauthError: oauthError, retryAfter: retryAfter)
                if oauthError.error == "invalid_dpop_proof" {
                    error.serverClockOffset = ClockSkewWatch.offset(serverDate: response.header("Date"), now: now)
                }
                throw error
            }
            let terminal = mapping.terminalStatuses.contains(response.status)
            throw AuthError.tokenEndpoint(
                .unexpectedStatus, terminal ? .terminal : .transient,
                status: response.status, retryAfter: retryAfter,
                message: terminal ? "status declared terminal by the mapping" : "no OAuth error body")
        }

        let paths = mapping.paths
        let accessToken: String?
        if let headerName = mapping.accessTokenHeader {
            accessToken = response.header(headerName).map(Self.strippingBearer)
        } else {
            accessToken = json.flatMap { JSONPath.string(at: paths.accessToken, in: $0) }
        }
        guard let accessToken, !accessToken.isEmpty else {
            throw AuthError.tokenEndpoint(
                .malformedResponse, .ambiguous, status: response.status,
                message: "no access token in the response")
        }
        var result = TokenResponse(accessToken: accessToken)
        if let json {
            result.refreshToken = JSONPath.string(at: paths.refreshToken, in: json)
            if let seconds = JSONPath.number(at: paths.expiresIn, in: json), seconds >= 0 {
                result.expiresIn = .interval(seconds)
            }
            result.tokenType = JSONPath.string(at: paths.tokenType, in: json) ?? "Bearer"
            result.scope = JSONPath.string(at: paths.scope, in: json)
            result.idToken = JSONPath.string(at: paths.idToken, in: json)
            result.issuedTokenType = JSONPath.string(at: "issued_token_type", in: json)
        }
        if case .tokenExchange = grant { try Self.checkExchanged(result, status: response.status) }
        if let field = TokenSyntax.violation(in: result) {
            throw AuthError.tokenEndpoint(
                .invalidTokenSyntax, .ambiguous, status: response.status,
                message: "\(TokenSyntax.requirement(for: field)); the response was not used", field: field)
        }
        return result
    }

    /// RFC 8693 §2.2.1: an exchange's answer names the `issued_token_type`, and a
    /// `token_type` of `N_A` says the token is not an access token, so it cannot be
    /// presented to an API. Either fault is ``AuthError/Code/malformedResponse``.
    static func checkExchanged(_ result: TokenResponse, status: Int) throws {
        guard let issued = result.issuedTokenType, !issued.isEmpty else {
            throw AuthError.tokenEndpoint(
                .malformedResponse, .ambiguous, status: status,
                message: "the token exchange answer has no issued_token_type (RFC 8693 §2.2.1)")
        }
        if result.tokenType.uppercased() == "N_A" {
            throw AuthError.tokenEndpoint(
                .malformedResponse, .ambiguous, status: status,
                message: "the token exchange issued \(issued) with token_type N_A: not an access token an API accepts")
        }
    }

    static func oauthError(in json: Any, paths: TokenEndpointMapping.ResponsePaths)
        -> OAuthErrorResponse?
    {
        guard let code = JSONPath.string(at: paths.error, in: json), !code.isEmpty else {
            return nil
        }
        return OAuthErrorResponse(
            error: code,
            errorDescription: JSONPath.string(at: paths.errorDescription, in: json),
            errorURI: JSONPath.string(at: "error_uri", in: json))
    }

    static func strippingBearer(_ value: String) -> String {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if trimmed.count > 7, trimmed.prefix(7).lowercased() == "bearer " {
            return String(trimmed.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        }
        return trimmed
    }
}
