public import Crypto
public import Foundation

/// A DPoP proof (RFC 9449 §4): a JWT signed with the client's key, sent in the `DPoP` header
/// of one request, that binds the request to the key (and, with ``accessTokenHash(_:)``, to
/// the access token it carries).
///
/// The header is `{"typ":"dpop+jwt","alg":…,"jwk":…}` with the public key; the claims are a
/// fresh random `jti`, `htm` the method, `htu` the target URI without query or fragment,
/// `iat`, and when given the server's `nonce` and the access token's `ath`.
public enum DPoPProof {
    /// Why no proof could be made.
    public struct Unusable: Error, Sendable, Equatable, CustomStringConvertible {
        /// What is wrong; never the key.
        public let description: String
    }

    /// The proof of `method` to `url` at `now`, signed with `key` and `algorithm`.
    public static func make(
        key: ClientKey, algorithm: ClientKey.Algorithm, method: String, url: String, now: Date, nonce: String? = nil,
        accessToken: String? = nil
    ) throws(Unusable) -> String {
        try make(
            key: key, algorithm: algorithm, header: try header(key: key, algorithm: algorithm), method: method, url: url,
            now: now, nonce: nonce, accessToken: accessToken)
    }

    /// The base64url header of every proof signed with `key` and `algorithm` (the same for
    /// all of them: a signer keeps it).
    public static func header(key: ClientKey, algorithm: ClientKey.Algorithm) throws(Unusable) -> String {
        guard key.supports(algorithm) else {
            throw Unusable(description: "the DPoP key cannot sign \(algorithm.rawValue)")
        }
        let jwk: String
        do { jwk = try key.publicJWK() } catch { throw Unusable(description: "the DPoP key has no usable public key") }
        return Base64URL.encode(Array(#"{"alg":"\#(algorithm.rawValue)","jwk":\#(jwk),"typ":"dpop+jwt"}"#.utf8))
    }

    /// The proof with `header`, made by ``header(key:algorithm:)`` for the same key and algorithm.
    public static func make(
        key: ClientKey, algorithm: ClientKey.Algorithm, header: String, method: String, url: String, now: Date,
        nonce: String? = nil, accessToken: String? = nil
    ) throws(Unusable) -> String {
        let jti = Base64URL.encode(SymmetricKey(size: .bits128).withUnsafeBytes { Array($0) })
        var claims = ""
        if let accessToken { claims += #""ath":"\#(accessTokenHash(accessToken))","# }
        claims += #""htm":\#(JSONText.string(method)),"htu":\#(JSONText.string(targetURI(url))),"#
        claims += #""iat":\#(Int(now.timeIntervalSince1970)),"jti":"\#(jti)""#
        if let nonce { claims += #","nonce":\#(JSONText.string(nonce))"# }
        let input = Array((header + "." + Base64URL.encode(Array("{\(claims)}".utf8))).utf8)
        do {
            return String(decoding: input, as: UTF8.self) + "." + Base64URL.encode(try key.sign(input, with: algorithm))
        } catch {
            throw Unusable(description: "the DPoP key could not sign the proof")
        }
    }

    /// `htu`: `url` without its query and fragment (RFC 9449 §4.2).
    public static func targetURI(_ url: String) -> String {
        guard let cut = url.firstIndex(where: { $0 == "?" || $0 == "#" }) else { return url }
        return String(url[..<cut])
    }

    /// `ath`: the base64url SHA-256 of the access token's ASCII bytes (RFC 9449 §4.2).
    public static func accessTokenHash(_ accessToken: String) -> String {
        Base64URL.encode(Array(SHA256.hash(data: Array(accessToken.utf8))))
    }
}

/// JSON text for values written by hand into a JWT.
enum JSONText {
    /// `text` as a JSON string.
    static func string(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
