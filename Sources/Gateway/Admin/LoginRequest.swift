import AuthCore

/// A login body (`POST /auth/login`), checked member by member before anything is sent to
/// the authorization server or stored. Every refusal is an ``AdminRequestError`` naming the
/// member at fault; none repeats a value.
///
/// - `{"grant_type":"password","username":…,"password":…,"scope":…}`
/// - `{"grant_type":"authorization_code","code":…,"redirect_uri":…,"code_verifier":…}`
/// - `{"grant_type":"client_credentials","scope":…}`
/// - `{"grant_type":"urn:ietf:params:oauth:grant-type:jwt-bearer","scope":…}` (RFC 7523
///   §2.1; the assertion is read from `authorization.jwtBearer.assertionFile`)
/// - `{"grant_type":"urn:ietf:params:oauth:grant-type:token-exchange","scope":…}` (RFC 8693;
///   the subject token is read from `authorization.tokenExchange.subjectTokenFile`)
/// - `{"grant_type":"urn:ietf:params:oauth:grant-type:device_code","scope":…}` (RFC 8628;
///   answered `202` with the user code while the login waits for a person)
/// - `{"grant_type":"import","access_token":…,"refresh_token":…,"expires_in":…,"token_type":…,"scope":…}`
///
/// Each also takes `subject`. A member the grant does not take is refused (422), not
/// ignored: a misspelt `refresh_tokn` would otherwise install a session that cannot refresh.
enum LoginRequest {
    case grant(Grant)
    case imported(TokenResponse)
    /// A device login (RFC 8628) asking for `scope`.
    case device(scope: String?)

    /// The longest `expires_in` an import may claim (2^31 − 1 s, about 68 years): beyond it
    /// the expiry is no longer a four-digit-year date.
    static let maxExpiresIn = Int(Int32.max)

    /// A login body is a flat object; anything nested deeper is refused as malformed.
    static let maxDepth = 8

    /// The members each grant takes, in the order they are checked; the required ones.
    static let members: [(grantType: String, members: [String], required: [String])] = [
        ("password", ["grant_type", "username", "password", "scope", "subject"], ["username", "password"]),
        ("authorization_code", ["grant_type", "code", "redirect_uri", "code_verifier", "subject"], ["code"]),
        ("client_credentials", ["grant_type", "scope", "subject"], []),
        (Grant.jwtBearerType, ["grant_type", "scope", "subject"], []),
        (Grant.tokenExchangeType, ["grant_type", "scope", "subject"], []),
        (Grant.deviceCodeType, ["grant_type", "scope", "subject"], []),
        (
            "import", ["grant_type", "access_token", "refresh_token", "expires_in", "token_type", "scope", "subject"],
            ["access_token"]
        ),
    ]

    /// Parses a login body sent with the `Content-Type` fields `contentTypes` (exactly one
    /// is acceptable); returns the login and the subject to record.
    static func parse(contentTypes: [String], body: [UInt8]) throws(AdminRequestError) -> (LoginRequest, String?) {
        guard contentTypes.count == 1, isJSON(contentTypes[0]) else {
            throw AdminRequestError(
                .unsupportedMediaType, "the login body must be sent as Content-Type: application/json (UTF-8)")
        }
        let document: JSONValue
        do {
            document = try StrictJSON.parse(body, maxDepth: maxDepth)
        } catch {
            throw AdminRequestError(.malformedJSON, "the login body is not valid JSON: \(error)")
        }
        guard case .object(let written) = document else {
            throw AdminRequestError(.invalidBody, "the login body must be a JSON object, not \(document.kind)")
        }
        guard let grantValue = document["grant_type"] else {
            throw AdminRequestError(.missingField, "the member grant_type is required", field: "grant_type")
        }
        let allowed = Self.members.map(\.grantType)
        guard case .string(let grantType) = grantValue else {
            throw AdminRequestError(
                .invalidField, "the member grant_type must be a string, not \(grantValue.kind)", field: "grant_type")
        }
        guard let grant = members.first(where: { $0.grantType == grantType }) else {
            throw AdminRequestError(
                .unsupportedGrantType, "unsupported grant_type; use \(LoginFieldSyntax.list(allowed, "or"))",
                field: "grant_type")
        }
        for member in written where !grant.members.contains(member.name) {
            throw AdminRequestError(
                .unknownField,
                "the member \(StrictJSON.shown(member.name)) is not part of a \(grantType) login, which takes "
                    + LoginFieldSyntax.list(grant.members, "and"),
                field: member.name)
        }
        var strings: [String: String] = [:]
        var expiresIn: Duration?
        for name in grant.members.dropFirst() {
            guard let value = document[name] else {
                if grant.required.contains(name) {
                    throw AdminRequestError(.missingField, "a \(grantType) login needs the member \(name)", field: name)
                }
                continue
            }
            if name == "expires_in" {
                expiresIn = .seconds(try seconds(value))
            } else {
                strings[name] = try LoginFieldSyntax.check(name, value)
            }
        }
        let subject = strings["subject"]
        switch grantType {
        case "password":
            return (
                .grant(.password(username: strings["username"]!, password: strings["password"]!, scope: strings["scope"])),
                subject
            )
        case "client_credentials":
            return (.grant(.clientCredentials(scope: strings["scope"])), subject)
        case Grant.jwtBearerType:
            return (.grant(.jwtBearer(scope: strings["scope"])), subject)
        case Grant.tokenExchangeType:
            return (.grant(.tokenExchange(scope: strings["scope"])), subject)
        case Grant.deviceCodeType:
            return (.device(scope: strings["scope"]), subject)
        case "authorization_code":
            return (
                .grant(
                    .authorizationCode(
                        code: strings["code"]!, redirectURI: strings["redirect_uri"], codeVerifier: strings["code_verifier"])),
                subject
            )
        default:
            let response = TokenResponse(
                accessToken: strings["access_token"]!, tokenType: strings["token_type"] ?? "Bearer", expiresIn: expiresIn,
                refreshToken: strings["refresh_token"], scope: strings["scope"])
            return (.imported(response), subject)
        }
    }

    /// `expires_in`: an integer from 1 to ``maxExpiresIn``.
    static func seconds(_ value: JSONValue) throws(AdminRequestError) -> Int {
        let range = "an integer number of seconds from 1 to \(maxExpiresIn)"
        guard case .number(let literal) = value else {
            throw AdminRequestError(
                .invalidField, "the member expires_in must be \(range), not \(value.kind)", field: "expires_in")
        }
        guard let n = JSONValue.integer(literal), (1...maxExpiresIn).contains(n) else {
            throw AdminRequestError(.invalidField, "the member expires_in must be \(range)", field: "expires_in")
        }
        return n
    }

    /// Whether `contentType` is `application/json`, with no charset or `charset=utf-8`
    /// (JSON is UTF-8, RFC 8259 §8.1).
    static func isJSON(_ contentType: String) -> Bool {
        let parts = contentType.split(separator: ";", omittingEmptySubsequences: false)
        guard parts[0].trimmingSpace.lowercased() == "application/json" else { return false }
        for parameter in parts.dropFirst() where !parameter.trimmingSpace.isEmpty {
            let pair = parameter.split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { return false }
            guard pair[0].trimmingSpace.lowercased() == "charset" else { continue }
            var value = pair[1].trimmingSpace
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = value.dropFirst().dropLast() }
            guard value.lowercased() == "utf-8" else { return false }
        }
        return true
    }
}

extension Substring {
    /// Without leading and trailing spaces and tabs (HTTP's optional whitespace).
    var trimmingSpace: Substring {
        var s = self
        while s.first == " " || s.first == "\t" { s = s.dropFirst() }
        while s.last == " " || s.last == "\t" { s = s.dropLast() }
        return s
    }
}
