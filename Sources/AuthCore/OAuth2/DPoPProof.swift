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
    /// The proof of `method` to `url` at `now`, signed with `key` and `algorithm`.
    public static func make(
        key: ClientKey, algorithm: ClientKey.Algorithm, method: String, url: String, now: Date, nonce: String? = nil,
        accessToken: String? = nil
    ) throws(AuthError) -> String {
        try make(
            key: key, algorithm: algorithm, header: try header(key: key, algorithm: algorithm), method: method, url: url,
            now: now, nonce: nonce, accessToken: accessToken)
    }

    /// The base64url header of every proof signed with `key` and `algorithm` (the same for
    /// all of them: a signer keeps it).
    public static func header(key: ClientKey, algorithm: ClientKey.Algorithm) throws(AuthError) -> String {
        guard key.supports(algorithm) else {
            throw AuthError.input(.unusableDPoPKey, "the DPoP key cannot sign \(algorithm.rawValue)")
        }
        let jwk: String
        do { jwk = try key.publicJWK() } catch {
            throw AuthError.input(.unusableDPoPKey, "the DPoP key has no usable public key")
        }
        return Base64URL.encode(Array(#"{"alg":"\#(algorithm.rawValue)","jwk":\#(jwk),"typ":"dpop+jwt"}"#.utf8))
    }

    /// The proof with `header`, made by ``header(key:algorithm:)`` for the same key and algorithm.
    public static func make(
        key: ClientKey, algorithm: ClientKey.Algorithm, header: String, method: String, url: String, now: Date,
        nonce: String? = nil, accessToken: String? = nil
    ) throws(AuthError) -> String {
        var jti = [UInt8](repeating: 0, count: 16)
        var generator = SystemRandomNumberGenerator()
        for i in stride(from: 0, to: 16, by: 8) {
            withUnsafeBytes(of: generator.next() as UInt64) { jti.replaceSubrange(i..<i + 8, with: $0) }
        }
        return try make(
            key: key, algorithm: algorithm, header: header, method: method, url: url, now: now, nonce: nonce,
            ath: accessToken.map(accessTokenHash), jti: jti)
    }

    /// The proof, written byte by byte into one buffer (a proxied request signs one): `ath`
    /// already hashed, `jti` 16 random bytes.
    static func make(
        key: ClientKey, algorithm: ClientKey.Algorithm, header: String, method: String, url: String, now: Date,
        nonce: String?, ath: String?, jti: [UInt8]
    ) throws(AuthError) -> String {
        var claims: [UInt8] = []
        claims.reserveCapacity(160 + url.utf8.count + (nonce?.utf8.count ?? 0))
        claims.append(UInt8(ascii: "{"))
        if let ath {
            claims.append(contentsOf: #""ath":""#.utf8)
            claims.append(contentsOf: ath.utf8)
            claims.append(contentsOf: #"","#.utf8)
        }
        claims.append(contentsOf: #""htm":"#.utf8)
        JSONText.append(method, to: &claims)
        claims.append(contentsOf: #","htu":"#.utf8)
        JSONText.append(targetURI(url), to: &claims)
        claims.append(contentsOf: #","iat":"#.utf8)
        claims.append(contentsOf: String(Int(now.timeIntervalSince1970)).utf8)
        claims.append(contentsOf: #","jti":""#.utf8)
        Base64URL.append(jti, to: &claims)
        claims.append(UInt8(ascii: "\""))
        if let nonce {
            claims.append(contentsOf: #","nonce":"#.utf8)
            JSONText.append(nonce, to: &claims)
        }
        claims.append(UInt8(ascii: "}"))

        var proof: [UInt8] = []
        proof.reserveCapacity(header.utf8.count + claims.count * 4 / 3 + 100)
        proof.append(contentsOf: header.utf8)
        proof.append(UInt8(ascii: "."))
        Base64URL.append(claims, to: &proof)
        let signature: [UInt8]
        do { signature = try key.sign(proof, with: algorithm) } catch {
            throw AuthError.input(.unusableDPoPKey, "the DPoP key could not sign the proof")
        }
        proof.append(UInt8(ascii: "."))
        Base64URL.append(signature, to: &proof)
        return String(decoding: proof, as: UTF8.self)
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
        var out: [UInt8] = []
        append(text, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends `text` as a JSON string to `out`: as it is when it holds no quote, backslash
    /// or control character (a method, a URL), escaped otherwise.
    static func append(_ text: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { bytes in
            if !bytes.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
                out.append(contentsOf: bytes)
                return
            }
            for byte in bytes {
                switch byte {
                case UInt8(ascii: "\""): out.append(contentsOf: #"\""#.utf8)
                case UInt8(ascii: "\\"): out.append(contentsOf: #"\\"#.utf8)
                case ..<0x20:
                    let hex = Array("0123456789abcdef".utf8)
                    out.append(contentsOf: #"\u00"#.utf8)
                    out.append(hex[Int(byte >> 4)])
                    out.append(hex[Int(byte & 15)])
                default: out.append(byte)
                }
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
