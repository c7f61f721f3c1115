public import Foundation

/// The JWT bearer authorization grant (RFC 7523 §2.1) as a client is set up for it: the
/// assertion is a JWT someone else made (a Kubernetes projected service-account token, a
/// SPIFFE JWT-SVID, a CI provider's OIDC token), read from ``assertionFile`` before every
/// token request, so a rotated file is used at once.
public struct JWTBearerGrantSettings: Sendable, Equatable {
    /// The file the assertion is read from.
    public var assertionFile: String
    /// The `scope` to ask for when the login names none.
    public var scope: String?

    /// Settings reading the assertion from `assertionFile`.
    public init(assertionFile: String, scope: String? = nil) {
        self.assertionFile = assertionFile
        self.scope = scope
    }

    /// The assertion in the file now: one compact JWT whose `exp`, if any, has not passed.
    /// The error names the file, never its contents.
    public func assertion(
        now: Date, read: (String) throws -> Data = { try Data(contentsOf: URL(fileURLWithPath: $0)) }
    ) throws(AuthError) -> String {
        let data: Data
        do { data = try read(assertionFile) } catch {
            throw AuthError.input(.unusableAssertion, "the JWT-bearer assertion file \(assertionFile) cannot be read")
        }
        return try ClientAssertion.checkedAssertion(data, path: assertionFile, now: now, what: "JWT-bearer assertion")
    }
}

/// Token exchange (RFC 8693 §2.1) as a client is set up for it: the subject token is read
/// from ``subjectTokenFile`` before every exchange, so a rotated file is used at once.
public struct TokenExchangeSettings: Sendable, Equatable {
    /// `urn:ietf:params:oauth:token-type:jwt`, the default subject token type.
    public static let jwtTokenType = "urn:ietf:params:oauth:token-type:jwt"
    /// `urn:ietf:params:oauth:token-type:id_token`.
    public static let idTokenType = "urn:ietf:params:oauth:token-type:id_token"
    /// `urn:ietf:params:oauth:token-type:access_token`.
    public static let accessTokenType = "urn:ietf:params:oauth:token-type:access_token"

    /// The file the subject token is read from.
    public var subjectTokenFile: String
    /// `subject_token_type`: an absolute URI such as ``jwtTokenType``.
    public var subjectTokenType: String
    /// `audience`: the logical names of the services the token is for, when the server needs
    /// them; each is sent as a field of its own (RFC 8693 §2.1 lets the parameter repeat).
    public var audiences: [String]
    /// `resource`: the absolute URIs of the services the token is for, when the server needs
    /// them; each is sent as a field of its own, like ``audiences``.
    public var resources: [String]
    /// The `scope` to ask for when the login names none.
    public var scope: String?
    /// `requested_token_type`, when a particular kind of token is wanted.
    public var requestedTokenType: String?

    /// Settings reading the subject token from `subjectTokenFile`.
    public init(
        subjectTokenFile: String, subjectTokenType: String = TokenExchangeSettings.jwtTokenType, audiences: [String] = [],
        resources: [String] = [], scope: String? = nil, requestedTokenType: String? = nil
    ) {
        self.subjectTokenFile = subjectTokenFile
        self.subjectTokenType = subjectTokenType
        self.audiences = audiences
        self.resources = resources
        self.scope = scope
        self.requestedTokenType = requestedTokenType
    }

    /// Whether the subject token type says the token is a JWT (`jwt`, `id_token`), whose
    /// form and `exp` can be checked before it is sent.
    public var subjectIsJWT: Bool { subjectTokenType == Self.jwtTokenType || subjectTokenType == Self.idTokenType }

    /// The subject token in the file now: for a JWT type one compact JWT that has not
    /// expired; for any other type one line of visible ASCII. The error names the file,
    /// never its contents.
    public func subjectToken(
        now: Date, read: (String) throws -> Data = { try Data(contentsOf: URL(fileURLWithPath: $0)) }
    ) throws(AuthError) -> String {
        let data: Data
        do { data = try read(subjectTokenFile) } catch {
            throw AuthError.input(.unusableAssertion, "the subject token file \(subjectTokenFile) cannot be read")
        }
        if subjectIsJWT {
            return try ClientAssertion.checkedAssertion(data, path: subjectTokenFile, now: now, what: "subject token")
        }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty, text.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw AuthError(
                .unusableAssertion,
                message: "the subject token file \(subjectTokenFile) must hold one token of visible ASCII on one line")
        }
        return text
    }
}
