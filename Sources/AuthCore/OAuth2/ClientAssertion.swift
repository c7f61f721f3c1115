public import Crypto
public import Foundation

/// The JWT a client proves its identity with at the token endpoint (RFC 7523 §2.2 and §3,
/// OpenID Connect Core §9): sent as `client_assertion` with `client_assertion_type`
/// `urn:ietf:params:oauth:client-assertion-type:jwt-bearer`, in place of a secret.
///
/// Made fresh for every token request, so a key or assertion file replaced on disk is used
/// by the next request without a restart:
/// - ``Source/privateKey(path:algorithm:keyID:)`` (`private_key_jwt`): signed with a key read
///   from a PEM file (``ClientKey``);
/// - ``Source/secret`` (`client_secret_jwt`): HS256 with the client secret;
/// - ``Source/file(path:)``: a JWT someone else made (a Kubernetes projected service-account
///   token, a SPIFFE JWT-SVID), read as it is; one that is not a compact JWT or has expired is
///   refused before anything is sent.
///
/// The claims of a signed assertion: `iss` and `sub` the client id, `aud` ``audience``, a
/// random `jti`, `iat` now and `exp` ``lifetime`` seconds later.
public struct ClientAssertion: Sendable, Equatable {
    /// Where the assertion comes from.
    public enum Source: Sendable, Equatable {
        /// Signed with the private key in the PEM file at `path`; `algorithm` nil: the key's
        /// default; `keyID` nil: the key's JWK thumbprint.
        case privateKey(path: String, algorithm: ClientKey.Algorithm?, keyID: String?)
        /// Signed with HS256 and the client secret.
        case secret
        /// Read from the file at `path`, made by someone else.
        case file(path: String)
    }

    /// The assertion type (RFC 7523 §2.2).
    public static let type = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

    /// Where the assertion comes from.
    public var source: Source
    /// The `aud` claim: the token endpoint or the issuer, as the server wants.
    public var audience: String
    /// Seconds from `iat` to `exp` (at most 60 is the norm servers enforce).
    public var lifetime: Int

    /// An assertion from `source` for `audience`.
    public init(source: Source, audience: String, lifetime: Int = 60) {
        self.source = source
        self.audience = audience
        self.lifetime = lifetime
    }

    /// Makes the assertion for `clientID` at `now`; `read` reads a file (injected for tests).
    public func make(
        clientID: String, secret: String?, now: Date,
        read: (String) throws -> Data = { try Data(contentsOf: URL(fileURLWithPath: $0)) }
    ) throws(AuthError) -> String {
        switch source {
        case .file(let path):
            let data: Data
            do { data = try read(path) } catch {
                throw AuthError.input(.unusableAssertion, "the client assertion file \(path) cannot be read")
            }
            return try Self.checkedAssertion(data, path: path, now: now)
        case .secret:
            guard let secret, !secret.isEmpty else {
                throw AuthError.input(.unusableAssertion, "client_secret_jwt needs the client secret, and there is none")
            }
            let input = signingInput(header: #"{"alg":"HS256","typ":"JWT"}"#, clientID: clientID, now: now)
            let mac = HMAC<SHA256>.authenticationCode(for: input, using: SymmetricKey(data: Array(secret.utf8)))
            return String(decoding: input, as: UTF8.self) + "." + Base64URL.encode(Array(mac))
        case .privateKey(let path, let configured, let keyID):
            let pem: Data
            do { pem = try read(path) } catch {
                throw AuthError.input(.unusableAssertion, "the client key file \(path) cannot be read")
            }
            let key: ClientKey
            do { key = try ClientKey(pem: String(decoding: pem, as: UTF8.self)) } catch {
                throw AuthError.input(.unusableAssertion, "the client key file \(path) \(error.message)")
            }
            let algorithm = configured ?? key.defaultAlgorithm
            guard key.supports(algorithm) else {
                throw AuthError(
                    .unusableAssertion, message: "the client key file \(path) holds a key that cannot sign \(algorithm.rawValue)")
            }
            let kid: String
            do { kid = try keyID ?? key.thumbprint() } catch {
                throw AuthError.input(.unusableAssertion, "the client key file \(path) has no usable public key")
            }
            let header = #"{"alg":"\#(algorithm.rawValue)","kid":\#(Self.json(kid)),"typ":"JWT"}"#
            let input = signingInput(header: header, clientID: clientID, now: now)
            do {
                let signature = try key.sign(input, with: algorithm)
                return String(decoding: input, as: UTF8.self) + "." + Base64URL.encode(signature)
            } catch {
                throw AuthError.input(.unusableAssertion, "the client key file \(path) could not sign the assertion")
            }
        }
    }

    /// `base64url(header).base64url(claims)` for `clientID` at `now`.
    private func signingInput(header: String, clientID: String, now: Date) -> [UInt8] {
        let iat = Int(now.timeIntervalSince1970)
        let jti = Base64URL.encode(SymmetricKey(size: .bits128).withUnsafeBytes { Array($0) })
        let claims =
            #"{"aud":\#(Self.json(audience)),"exp":\#(iat + lifetime),"iat":\#(iat),"iss":\#(Self.json(clientID)),"#
            + #""jti":"\#(jti)","sub":\#(Self.json(clientID))}"#
        return Array((Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))).utf8)
    }

    /// The assertion in `data` (surrounding whitespace dropped) when it is one compact JWT
    /// (three base64url parts, a JSON header naming an algorithm) whose `exp`, if any, has
    /// not passed.
    /// `what` names the file in errors (`client assertion`, `JWT bearer assertion`, …).
    public static func checkedAssertion(_ data: Data, path: String, now: Date, what: String = "client assertion")
        throws(AuthError) -> String
    {
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        let alphabet = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(alphabet.contains) }),
            let headerData = Base64URL.decode(parts[0]),
            let header = try? JSONSerialization.jsonObject(with: headerData) as? [String: Any], header["alg"] is String,
            let claimsData = Base64URL.decode(parts[1]),
            let claims = try? JSONSerialization.jsonObject(with: claimsData) as? [String: Any]
        else {
            throw AuthError.input(.unusableAssertion, "the \(what) file \(path) does not hold one compact JWT")
        }
        if let exp = claims["exp"] as? Double, exp <= now.timeIntervalSince1970 {
            throw AuthError(
                .unusableAssertion, message: "the \(what) in \(path) expired at \(Int(exp)) (it is not being renewed)")
        }
        return text
    }

    /// `text` as a JSON string.
    private static func json(_ text: String) -> String { JSONText.string(text) }
}
