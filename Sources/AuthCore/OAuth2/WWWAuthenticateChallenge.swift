/// One challenge from a `WWW-Authenticate` header (RFC 9110 §11.6.1), with the RFC 6750
/// §3 Bearer parameters at hand.
///
/// The gateway uses it to tell a 401 that a refresh may cure (`invalid_token`) from one it
/// will not (`insufficient_scope`, or a challenge for another scheme):
///
/// ```swift
/// let challenges = WWWAuthenticateChallenge.parse(#"Bearer realm="api", error="invalid_token""#)
/// challenges.first?.bearerError == .invalidToken  // true
/// ```
public struct WWWAuthenticateChallenge: Sendable, Equatable {
    /// RFC 6750 §3.1 error codes.
    public enum BearerError: Sendable, Equatable {
        /// The request is malformed (400).
        case invalidRequest
        /// The token is expired, revoked or malformed: a refresh may help (401).
        case invalidToken
        /// The token lacks scope: a refresh will not help (403).
        case insufficientScope
        /// Any other code.
        case other(String)
    }

    /// The auth scheme as sent, e.g. `Bearer`.
    public var scheme: String
    /// Parameters with lower-cased names and unquoted values.
    public var parameters: [String: String]
    /// The token68 form, when the challenge used it instead of parameters.
    public var token68: String?

    /// Creates a challenge.
    public init(scheme: String, parameters: [String: String] = [:], token68: String? = nil) {
        self.scheme = scheme
        self.parameters = parameters
        self.token68 = token68
    }

    /// `realm`.
    public var realm: String? { parameters["realm"] }
    /// `error`.
    public var error: String? { parameters["error"] }
    /// `error_description`.
    public var errorDescription: String? { parameters["error_description"] }
    /// `scope`.
    public var scope: String? { parameters["scope"] }
    /// Whether the scheme is `Bearer` (case-insensitive).
    public var isBearer: Bool { scheme.lowercased() == "bearer" }

    /// The RFC 6750 error, when there is one.
    public var bearerError: BearerError? {
        switch error {
        case nil: nil
        case "invalid_request": .invalidRequest
        case "invalid_token": .invalidToken
        case "insufficient_scope": .insufficientScope
        case let other?: .other(other)
        }
    }

    /// Parses the challenges of one or more `WWW-Authenticate` field values. Malformed parts
    /// are skipped; parsing never fails.
    public static func parse(_ fieldValues: String...) -> [WWWAuthenticateChallenge] {
        parse(fieldValues: fieldValues)
    }

    /// Parses the challenges of the given `WWW-Authenticate` field values.
    public static func parse(fieldValues: [String]) -> [WWWAuthenticateChallenge] {
        fieldValues.flatMap { value in
            var parser = ChallengeParser(Array(value.utf8))
            return parser.parseAll()
        }
    }
}

/// A scanner over one field value.
private struct ChallengeParser {
    let bytes: [UInt8]
    var index = 0

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    var atEnd: Bool { index >= bytes.count }
    var current: UInt8? { atEnd ? nil : bytes[index] }

    static func isTokenChar(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            Array("!#$%&'*+-.^_`|~".utf8).contains(b)
        }
    }

    static func isToken68Char(_ b: UInt8) -> Bool {
        isTokenChar(b) || b == UInt8(ascii: "/")
    }

    mutating func skipSpaces() {
        while let c = current, c == UInt8(ascii: " ") || c == UInt8(ascii: "\t") { index += 1 }
    }

    mutating func skipSpacesAndCommas() {
        while let c = current, c == UInt8(ascii: " ") || c == UInt8(ascii: "\t") || c == UInt8(ascii: ",") {
            index += 1
        }
    }

    mutating func readToken(allowSlash: Bool = false) -> String? {
        let start = index
        while let c = current, ChallengeParser.isTokenChar(c) || (allowSlash && c == UInt8(ascii: "/")) {
            index += 1
        }
        return start == index ? nil : String(decoding: bytes[start..<index], as: UTF8.self)
    }

    mutating func readQuoted() -> String {
        index += 1  // opening quote
        var out: [UInt8] = []
        while let c = current {
            index += 1
            if c == UInt8(ascii: "\"") { break }
            if c == UInt8(ascii: "\\"), let next = current {
                out.append(next)
                index += 1
            } else {
                out.append(c)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    mutating func parseAll() -> [WWWAuthenticateChallenge] {
        var result: [WWWAuthenticateChallenge] = []
        while true {
            skipSpacesAndCommas()
            guard !atEnd else { break }
            guard let scheme = readToken() else {
                index += 1  // skip a stray byte
                continue
            }
            var challenge = WWWAuthenticateChallenge(scheme: scheme)
            parseParameters(into: &challenge)
            result.append(challenge)
        }
        return result
    }

    mutating func parseParameters(into challenge: inout WWWAuthenticateChallenge) {
        var first = true
        while true {
            skipSpaces()
            if !first {
                guard current == UInt8(ascii: ",") else { return }
                skipSpacesAndCommas()
            }
            let save = index
            guard let name = readToken(allowSlash: first) else { return }
            skipSpaces()
            if current == UInt8(ascii: "=") {
                // Either name=value or a token68 ending in '='.
                var afterEquals = index
                while afterEquals < bytes.count, bytes[afterEquals] == UInt8(ascii: "=") {
                    afterEquals += 1
                }
                var probe = afterEquals
                while probe < bytes.count, bytes[probe] == UInt8(ascii: " ") { probe += 1 }
                let next: UInt8? = probe < bytes.count ? bytes[probe] : nil
                if first, next == nil || next == UInt8(ascii: ",") || afterEquals - index > 1 {
                    challenge.token68 =
                        name + String(repeating: "=", count: afterEquals - index)
                    index = afterEquals
                    return
                }
                index += 1
                skipSpaces()
                let value: String
                if current == UInt8(ascii: "\"") {
                    value = readQuoted()
                } else {
                    value = readToken() ?? ""
                }
                // A parameter name is a token: a `/` (allowed only in a token68) makes this
                // part malformed, and it is skipped.
                if !name.utf8.contains(UInt8(ascii: "/")) {
                    challenge.parameters[name.lowercased()] = value
                }
                first = false
            } else {
                // A bare token: token68 when it ends the challenge, else the next scheme.
                let end = current
                if first, end == nil || end == UInt8(ascii: ",") {
                    challenge.token68 = name
                    return
                }
                index = save
                return
            }
        }
    }
}
