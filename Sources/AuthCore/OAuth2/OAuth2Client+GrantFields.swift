extension OAuth2Client {
    /// The body fields of the JWT bearer grant (RFC 7523 §2.1) besides `grant_type`:
    /// `assertion`, and `scope` (the login's, else the settings').
    func jwtBearerFields(scope: String?, assertion: String?) throws -> [(String, String)] {
        guard let settings = configuration.jwtBearer, let assertion else {
            throw AuthError.tokenEndpoint(
                .clientCredentialsUnusable, .transient, message: "no JWT bearer assertion was read for this request")
        }
        var fields = [("assertion", assertion)]
        if let scope = scope ?? settings.scope { fields.append(("scope", scope)) }
        return fields
    }

    /// The body fields of a token exchange (RFC 8693 §2.1) besides `grant_type`:
    /// `subject_token` and `subject_token_type`, then one `audience` field per audience and
    /// one `resource` field per resource, in the order configured (RFC 8693 §2.1), `scope`
    /// (the login's, else the settings') and `requested_token_type` when set.
    func tokenExchangeFields(scope: String?, subjectToken: String?) throws -> [(String, String)] {
        guard let settings = configuration.tokenExchange, let subjectToken else {
            throw AuthError.tokenEndpoint(
                .clientCredentialsUnusable, .transient, message: "no subject token was read for this exchange")
        }
        var fields = [("subject_token", subjectToken), ("subject_token_type", settings.subjectTokenType)]
        fields += settings.audiences.map { ("audience", $0) }
        fields += settings.resources.map { ("resource", $0) }
        if let scope = scope ?? settings.scope { fields.append(("scope", scope)) }
        if let requested = settings.requestedTokenType { fields.append(("requested_token_type", requested)) }
        return fields
    }
}
