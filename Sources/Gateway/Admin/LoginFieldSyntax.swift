import AuthCore

/// What each string member of a login body may hold. The rules are the standards' own
/// where one exists (RFC 6749 Appendix A, RFC 7636, RFC 6750) and "no control character"
/// elsewhere; `openapi/authgate.yaml` states the same rules as patterns.
enum LoginFieldSyntax {
    /// The checked value of member `name`, or the refusal naming it.
    static func check(_ name: String, _ value: JSONValue) throws(AdminRequestError) -> String {
        guard case .string(let text) = value else {
            throw AdminRequestError(.invalidField, "the member \(name) must be a string, not \(value.kind)", field: name)
        }
        guard !text.isEmpty else {
            throw AdminRequestError(.invalidField, "the member \(name) must not be empty", field: name)
        }
        if let requirement = violation(name, text) {
            throw AdminRequestError(.invalidField, "the member \(name) \(requirement)", field: name)
        }
        return text
    }

    /// What `text` breaks as the value of `name`, as the end of a sentence, or nil.
    static func violation(_ name: String, _ text: String) -> String? {
        let bytes = text.utf8
        switch name {
        case "access_token":
            return TokenSyntax.isB64Token(text) ? nil : "must be an RFC 6750 b64token (A–Z a–z 0–9 - . _ ~ + /, then = padding)"
        case "token_type":
            return TokenSyntax.isTokenType(text) ? nil : "must be an RFC 9110 token (letters, digits and !#$%&'*+-.^_`|~)"
        case "refresh_token", "code":
            return TokenSyntax.isRefreshToken(text) ? nil : "must be visible ASCII characters or spaces (RFC 6749 VSCHAR)"
        case "scope":
            return isScope(text)
                ? nil : "must be scope tokens (visible ASCII but \" and \\) separated by single spaces (RFC 6749 §3.3)"
        case "redirect_uri":
            return bytes.allSatisfy({ (0x21...0x7E).contains($0) }) ? nil : "must be a URI: visible ASCII characters, no spaces"
        case "code_verifier":
            return (43...128).contains(bytes.count) && bytes.allSatisfy(isUnreserved)
                ? nil : "must be 43 to 128 of A–Z a–z 0–9 - . _ ~ (RFC 7636 §4.1)"
        default:
            return text.unicodeScalars.contains(where: isControl)
                ? "must not contain control characters (U+0000–U+001F, U+007F–U+009F)" : nil
        }
    }

    /// Whether `scalar` is a Unicode control character (general category Cc).
    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    /// RFC 6749 §3.3: `scope-token *( SP scope-token )`, `scope-token = 1*( %x21 / %x23-5B / %x5D-7E )`.
    static func isScope(_ text: String) -> Bool {
        let tokens = text.split(separator: " ", omittingEmptySubsequences: false)
        return tokens.allSatisfy { token in
            !token.isEmpty && token.utf8.allSatisfy { $0 == 0x21 || (0x23...0x5B).contains($0) || (0x5D...0x7E).contains($0) }
        }
    }

    /// RFC 3986 `unreserved`: `ALPHA / DIGIT / "-" / "." / "_" / "~"`.
    static func isUnreserved(_ b: UInt8) -> Bool {
        (0x30...0x39).contains(b) || (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b) || b == 0x2D || b == 0x2E
            || b == 0x5F || b == 0x7E
    }

    /// `a, b and c`.
    static func list(_ items: [String], _ conjunction: String) -> String {
        guard items.count > 1 else { return items.first ?? "" }
        return items.dropLast().joined(separator: ", ") + " \(conjunction) " + items.last!
    }
}
