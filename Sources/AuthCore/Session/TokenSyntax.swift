/// The characters a token may carry before AuthGate accepts it.
///
/// An access token and its type end up in an `Authorization` header line, a refresh token
/// in a form or JSON body. A value that could end a header line (CR, LF), start a new one or
/// add a parameter is refused where it enters — the token endpoint's answer and an import —
/// so it never reaches a request.
public enum TokenSyntax {
    /// Whether `value` is an RFC 6750 §2.1 `b64token`:
    /// `1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`.
    public static func isB64Token(_ value: String) -> Bool {
        let bytes = value.utf8
        var body = 0
        var padding = 0
        for b in bytes {
            if b == UInt8(ascii: "=") {
                padding += 1
            } else if padding == 0 && isB64TokenByte(b) {
                body += 1
            } else {
                return false
            }
        }
        return body > 0
    }

    /// Whether `value` is an RFC 9110 `token` (one or more `tchar`), as an auth scheme
    /// such as a `token_type` must be.
    public static func isTokenType(_ value: String) -> Bool {
        !value.isEmpty && value.utf8.allSatisfy(isTokenChar)
    }

    /// Whether `value` is an RFC 6749 Appendix A `refresh-token`: `1*VSCHAR`, where
    /// `VSCHAR = %x20-7E` (visible ASCII and space; no control character, no DEL).
    public static func isRefreshToken(_ value: String) -> Bool {
        !value.isEmpty && value.utf8.allSatisfy { (0x20...0x7E).contains($0) }
    }

    /// The first field of `response` whose value breaks its syntax (`access_token`,
    /// `token_type` or `refresh_token`), or nil when all are acceptable.
    public static func violation(in response: TokenResponse) -> String? {
        if !isB64Token(response.accessToken) { return "access_token" }
        if !isTokenType(response.tokenType) { return "token_type" }
        if let refresh = response.refreshToken, !isRefreshToken(refresh) { return "refresh_token" }
        return nil
    }

    /// The first field of a stored `record` whose value breaks its syntax (`access_token`,
    /// `token_type` or `refresh_token`), or nil. A record written before these checks
    /// existed, or tampered with, can hold what no answer would be accepted with today.
    public static func violation(in record: TokenRecord) -> String? {
        violation(
            in: TokenResponse(
                accessToken: record.accessToken, tokenType: record.tokenType, expiresIn: nil,
                refreshToken: record.refreshToken, scope: nil))
    }

    /// The sentence saying what `field` must be, for error messages.
    public static func requirement(for field: String) -> String {
        switch field {
        case "access_token": return "the access_token must be an RFC 6750 b64token"
        case "token_type": return "the token_type must be an RFC 9110 token"
        case "refresh_token": return "the refresh_token must be visible ASCII characters or spaces (RFC 6749 VSCHAR)"
        default: return "the \(field) is not acceptable"
        }
    }

    private static func isB64TokenByte(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "+"), UInt8(ascii: "/"):
            return true
        default:
            return false
        }
    }

    private static func isTokenChar(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
            UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
            UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }
}
