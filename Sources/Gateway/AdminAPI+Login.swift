import AuthCore
import Foundation
import HTTPWire
import Runtime

extension AdminAPI {
    /// `POST /auth/login` with a JSON body naming a grant:
    ///
    /// - `{"grant_type":"password","username":…,"password":…,"scope":…}`
    /// - `{"grant_type":"authorization_code","code":…,"redirect_uri":…,"code_verifier":…}`
    /// - `{"grant_type":"client_credentials","scope":…}`
    /// - `{"grant_type":"import","access_token":…,"refresh_token":…,"expires_in":…,"token_type":…}`
    func login(_ session: GatewaySession, _ head: RequestHead, _ body: [UInt8], _ writer: ResponseWriter) async {
        do {
            let (grant, subject) = try LoginRequest.parse(contentType: head.headers[first: "content-type"], body: body)
            switch grant {
            case .grant(let g): try await session.actor.login(g, subject: subject)
            case .imported(let r): try await session.actor.login(importing: r, subject: subject)
            }
            json(writer, 200, await sessionDocument(session))
        } catch {
            problem(writer, error)
        }
    }
}

/// A parsed login body. Every refusal names the field that was wrong and never echoes a value.
enum LoginRequest {
    case grant(Grant)
    case imported(TokenResponse)

    /// The longest `expires_in` an import may claim (2^31 − 1 s, about 68 years): beyond it
    /// the expiry is no longer a four-digit-year date.
    static let maxExpiresIn = Int(Int32.max)

    /// A JSON number that is an integer; `true` and `false` are not numbers.
    static func integer(_ value: Any) -> Int? {
        guard let number = value as? NSNumber, String(cString: number.objCType) != "c" else { return nil }
        guard let n = value as? Int, number.doubleValue == Double(n) else { return nil }
        return n
    }

    static func parse(contentType: String?, body: [UInt8]) throws(WireError) -> (LoginRequest, String?) {
        guard let type = contentType?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased(),
            type == "application/json"
        else {
            throw WireError(.malformedRequest, status: 415, "the login body must be application/json")
        }
        let object: [String: Any]
        do {
            guard let o = try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
                throw WireError(.malformedRequest, status: 400, "the login body must be a JSON object")
            }
            object = o
        } catch let e as WireError {
            throw e
        } catch {
            throw WireError(.malformedRequest, status: 400, "the login body is not valid JSON")
        }
        func string(_ key: String, required: Bool) throws(WireError) -> String? {
            guard let v = object[key] else {
                if required { throw WireError(.malformedRequest, status: 400, "the field \(key) is required") }
                return nil
            }
            guard let s = v as? String, !s.isEmpty else {
                throw WireError(.malformedRequest, status: 400, "the field \(key) must be a non-empty string")
            }
            return s
        }
        let subject = try string("subject", required: false)
        guard let grantType = try string("grant_type", required: true) else { throw WireError(.malformedRequest, status: 400, "") }
        switch grantType {
        case "password":
            let user = try string("username", required: true)!
            let password = try string("password", required: true)!
            return (.grant(.password(username: user, password: password, scope: try string("scope", required: false))), subject)
        case "client_credentials":
            return (.grant(.clientCredentials(scope: try string("scope", required: false))), subject)
        case "authorization_code":
            let code = try string("code", required: true)!
            return (
                .grant(
                    .authorizationCode(
                        code: code, redirectURI: try string("redirect_uri", required: false),
                        codeVerifier: try string("code_verifier", required: false))), subject
            )
        case "import":
            let access = try string("access_token", required: true)!
            var expiresIn: Duration?
            if let raw = object["expires_in"] {
                guard let n = integer(raw), (1...maxExpiresIn).contains(n) else {
                    throw WireError(
                        .malformedRequest, status: 400,
                        "the field expires_in must be an integer number of seconds from 1 to \(maxExpiresIn)")
                }
                expiresIn = .seconds(n)
            }
            let response = TokenResponse(
                accessToken: access, tokenType: try string("token_type", required: false) ?? "Bearer", expiresIn: expiresIn,
                refreshToken: try string("refresh_token", required: false), scope: try string("scope", required: false))
            if let field = TokenSyntax.violation(in: response) {
                throw WireError(
                    .malformedRequest, status: 400, "the field \(field) is not acceptable: \(TokenSyntax.requirement(for: field))")
            }
            return (.imported(response), subject)
        default:
            throw WireError(
                .malformedRequest, status: 400,
                "unsupported grant_type; use password, authorization_code, client_credentials or import")
        }
    }
}
