import AuthCore
import Foundation
import HTTPWire

/// The JSON of the admin API: one configured encoder for every document
/// (``SessionDocument``, ``SessionListDocument``, ``EventDocument``, the health answers),
/// and the problem for a failed login. None contains a token.
enum AdminJSON {
    /// 9999-12-31T23:59:59Z and 0001-01-01T00:00:00Z: the range an RFC 3339 date-time can write.
    static let latestDate = Date(timeIntervalSince1970: 253_402_300_799)
    static let earliestDate = Date(timeIntervalSince1970: -62_135_596_800)

    /// The encoder of every admin document: compact, `/` not escaped, members sorted by
    /// name so that the same document is always the same bytes (Foundation's encoder keeps
    /// no other order).
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    /// `document` as JSON bytes.
    static func encode(_ document: some Encodable) throws -> [UInt8] {
        Array(try encoder.encode(document))
    }

    /// An RFC 3339 date-time, or nil. A date outside years 1–9999 (an imported token whose
    /// `exp` is absurdly far away, say) is written as the nearest end of that range.
    static func rfc3339(_ d: Date?) -> String? {
        guard let d, d.timeIntervalSince1970.isFinite else { return nil }
        return RFC3339.format(min(max(d, earliestDate), latestDate))
    }

    /// The problem for a refused or failed login (`e` is the token endpoint's error).
    static func loginFailure(_ e: AuthError) -> Problem {
        if e.code == .invalidTokenSyntax, let field = e.field {
            return GatewayProblem.make(
                "authorization-server-unavailable", 502,
                "the authorization server answered with an unusable \(field) (\(TokenSyntax.requirement(for: field))); "
                    + "the login was not completed", [("field", Problem.quote(field))])
        }
        if e.code == .clientCredentialsUnusable {
            // A key, assertion or subject token file that cannot be used: nothing was sent.
            // The message names the file, never its contents.
            return GatewayProblem.make("login-failed", 401, "the login was not sent: \(e.message)")
        }
        // A login is asked for once: a refusal the session would retry at a refresh (a
        // credential from a file that can be put right) is still the server's answer now.
        let refused = e.oauthError != nil && [400, 401].contains(e.status ?? 0)
        switch e.disposition {
        case .terminal,
            _ where refused:
            let code = e.oauthError?.error ?? "rejected"
            return GatewayProblem.make(
                "login-rejected", 401, "the authorization server refused the login (\(code))", [("error", Problem.quote(code))])
        default:
            return GatewayProblem.make(
                "authorization-server-unavailable", 502, "the authorization server could not be reached or failed; try again")
        }
    }
}
