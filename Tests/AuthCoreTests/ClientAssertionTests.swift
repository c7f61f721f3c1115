import AuthCore
import AuthGateTesting
import Crypto
import Foundation
import TestSupport
import Testing
import _CryptoExtras

/// Client assertions (RFC 7523 §2.2, OpenID Connect Core §9) checked as a server checks
/// them: the signature with the client's public key, the claims, the header.
@Suite struct ClientAssertionTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let endpoint = "https://auth.example.test/oauth/token"

    /// The parts of a compact JWT: header and claims as JSON, the signing input and the signature.
    static func parts(_ jwt: String) throws -> (header: [String: Any], claims: [String: Any], input: [UInt8], signature: Data) {
        let p = jwt.split(separator: ".", omittingEmptySubsequences: false)
        try #require(p.count == 3)
        let headerData = try #require(Base64URL.decode(p[0]))
        let claimsData = try #require(Base64URL.decode(p[1]))
        let signature = try #require(Base64URL.decode(p[2]))
        let header = try #require(try JSONSerialization.jsonObject(with: headerData) as? [String: Any])
        let claims = try #require(try JSONSerialization.jsonObject(with: claimsData) as? [String: Any])
        return (header, claims, Array("\(p[0]).\(p[1])".utf8), signature)
    }

    /// A fresh RSA key of `bits` from `openssl genpkey`: swift-crypto's own RSA key generation
    /// leaks the public exponent's bignum (LeakSanitizer in the ASan run), and AuthGate only
    /// ever parses keys.
    static func rsaKey(bits: Int = 2048) throws -> _RSA.Signing.PrivateKey {
        let p = Subprocess()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        p.arguments = ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:\(bits)"]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let pem = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        return try _RSA.Signing.PrivateKey(unsafePEMRepresentation: pem)
    }

    static func checkClaims(_ claims: [String: Any]) {
        #expect(claims["iss"] as? String == "client-1")
        #expect(claims["sub"] as? String == "client-1")
        #expect(claims["aud"] as? String == endpoint)
        #expect(claims["iat"] as? Int == 1_800_000_000)
        #expect(claims["exp"] as? Int == 1_800_000_060, "expires 60 s after issue")
        #expect((claims["jti"] as? String)?.count ?? 0 >= 20)
    }

    func assertion(_ source: ClientAssertion.Source, files: [String: String], secret: String? = nil) throws -> String {
        try ClientAssertion(source: source, audience: Self.endpoint).make(
            clientID: "client-1", secret: secret, now: Self.now,
            read: { path in
                guard let text = files[path] else { throw CocoaError(.fileNoSuchFile) }
                return Data(text.utf8)
            })
    }

    @Test func anES256AssertionVerifiesWithTheClientsPublicKey() throws {
        let key = P256.Signing.PrivateKey()
        let jwt = try assertion(.privateKey(path: "/k", algorithm: nil, keyID: nil), files: ["/k": key.pemRepresentation])
        let (header, claims, input, signature) = try Self.parts(jwt)
        #expect(header["alg"] as? String == "ES256")
        #expect(header["typ"] as? String == "JWT")
        #expect(header["kid"] as? String == (try ClientKey(pem: key.pemRepresentation).thumbprint()))
        let sig = try P256.Signing.ECDSASignature(rawRepresentation: signature)
        #expect(key.publicKey.isValidSignature(sig, for: input))
        Self.checkClaims(claims)
        let again = try assertion(.privateKey(path: "/k", algorithm: nil, keyID: nil), files: ["/k": key.pemRepresentation])
        #expect(try Self.parts(again).claims["jti"] as? String != claims["jti"] as? String, "a fresh jti each time")
    }

    @Test(arguments: [ClientKey.Algorithm.rs256, .ps256])
    func anRSAAssertionVerifiesWithTheClientsPublicKey(_ algorithm: ClientKey.Algorithm) throws {
        let key = try Self.rsaKey()
        let jwt = try assertion(
            .privateKey(path: "/k", algorithm: algorithm, keyID: "key-7"), files: ["/k": key.pemRepresentation])
        let (header, claims, input, signature) = try Self.parts(jwt)
        #expect(header["alg"] as? String == algorithm.rawValue)
        #expect(header["kid"] as? String == "key-7", "a configured kid wins over the thumbprint")
        let padding: _RSA.Signing.Padding = algorithm == .ps256 ? .PSS : .insecurePKCS1v1_5
        #expect(
            key.publicKey.isValidSignature(_RSA.Signing.RSASignature(rawRepresentation: signature), for: input, padding: padding))
        Self.checkClaims(claims)
    }

    @Test func anRSAKeyDefaultsToRS256AndItsThumbprintIsTheKid() throws {
        let key = try Self.rsaKey()
        let (header, _, _, _) = try Self.parts(
            try assertion(.privateKey(path: "/k", algorithm: nil, keyID: nil), files: ["/k": key.pemRepresentation]))
        #expect(header["alg"] as? String == "RS256")
        let primitives = try key.publicKey.getKeyPrimitives()
        let jwk =
            #"{"e":"\#(Base64URL.encode(primitives.publicExponent))","kty":"RSA","n":"\#(Base64URL.encode(primitives.modulus))"}"#
        #expect(header["kid"] as? String == Base64URL.encode(SHA256.hash(data: Array(jwk.utf8))), "RFC 7638")
    }

    @Test func aReplacedKeyFileSignsTheNextAssertion() throws {
        let (first, second) = (P256.Signing.PrivateKey(), P256.Signing.PrivateKey())
        var files = ["/k": first.pemRepresentation]
        let a = try Self.parts(try assertion(.privateKey(path: "/k", algorithm: nil, keyID: nil), files: files))
        files["/k"] = second.pemRepresentation
        let b = try Self.parts(try assertion(.privateKey(path: "/k", algorithm: nil, keyID: nil), files: files))
        #expect(first.publicKey.isValidSignature(try .init(rawRepresentation: a.signature), for: a.input))
        #expect(second.publicKey.isValidSignature(try .init(rawRepresentation: b.signature), for: b.input))
        #expect(!first.publicKey.isValidSignature(try .init(rawRepresentation: b.signature), for: b.input))
    }

    @Test func anHS256AssertionVerifiesWithTheClientSecret() throws {
        let (header, claims, input, signature) = try Self.parts(try assertion(.secret, files: [:], secret: "s3cret"))
        #expect(header["alg"] as? String == "HS256")
        #expect(
            HMAC<SHA256>.isValidAuthenticationCode(
                signature, authenticating: input, using: SymmetricKey(data: Array("s3cret".utf8))))
        Self.checkClaims(claims)
        #expect(throws: AuthError.self) { try assertion(.secret, files: [:], secret: nil) }
    }

    @Test func anAssertionFileIsSentAsItIsWhileItHasNotExpired() throws {
        func jwt(exp: Int) -> String {
            Base64URL.encode(Array(#"{"alg":"RS256","kid":"k"}"#.utf8)) + "."
                + Base64URL.encode(Array(#"{"iss":"https://kubernetes.default.svc","exp":\#(exp)}"#.utf8)) + ".c2ln"
        }
        let valid = jwt(exp: 1_800_000_600)
        #expect(try assertion(.file(path: "/t"), files: ["/t": valid + "\n"]) == valid)
        let expired = #expect(throws: AuthError.self) {
            try assertion(.file(path: "/t"), files: ["/t": jwt(exp: 1_799_999_000)])
        }
        #expect(expired?.code == .unusableAssertion && expired?.message.contains("expired") == true)
        for bad in ["not a jwt", "a.b", "a.b.c.d", "eyJhbGciOiJub25lIn0..sig", valid + " " + valid] {
            let error = #expect(throws: AuthError.self) { try assertion(.file(path: "/t"), files: ["/t": bad]) }
            #expect(error?.message == "the client assertion file /t does not hold one compact JWT", "\(bad)")
        }
        let missing = #expect(throws: AuthError.self) { try assertion(.file(path: "/none"), files: [:]) }
        #expect(missing?.message == "the client assertion file /none cannot be read")
    }

    @Test func weakOrUnsupportedKeysAreRefusedWithoutQuotingThem() throws {
        let weak = try Self.rsaKey(bits: 1024)
        let p384 = P384.Signing.PrivateKey()
        for (pem, reason) in [
            (weak.pemRepresentation, "is an RSA key of 1024 bits; at least 2048 are needed"),
            (p384.pemRepresentation, "is an EC key on a curve other than P-256 (ES256 needs P-256)"),
            ("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", "holds no EC P-256 or RSA private key in PEM"),
        ] {
            let error = #expect(throws: AuthError.self) {
                try assertion(.privateKey(path: "/k", algorithm: nil, keyID: nil), files: ["/k": pem])
            }
            #expect(error?.message == "the client key file /k \(reason)")
        }
        let ec = P256.Signing.PrivateKey()
        let wrong = #expect(throws: AuthError.self) {
            try assertion(.privateKey(path: "/k", algorithm: .rs256, keyID: nil), files: ["/k": ec.pemRepresentation])
        }
        #expect(wrong?.message == "the client key file /k holds a key that cannot sign RS256")
    }

    @Test func theTokenRequestCarriesTheAssertionAndNoSecret() async throws {
        let key = P256.Signing.PrivateKey()
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ag-assert-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("key.pem").path
        try key.pemRepresentation.write(toFile: path, atomically: true, encoding: .utf8)
        let transport = ScriptedTransport(json(200, #"{"access_token":"at","token_type":"Bearer","expires_in":60}"#))
        let client = OAuth2Client(
            configuration: .init(
                tokenEndpoint: Self.endpoint, clientID: "client-1", clientSecret: "never-sent", authentication: .privateKeyJWT,
                assertion: ClientAssertion(source: .privateKey(path: path, algorithm: nil, keyID: nil), audience: Self.endpoint)),
            transport: transport, clock: TestClock())
        _ = try await client.requestToken(.clientCredentials(scope: nil))
        let request = try #require(await transport.requests.first)
        let body = String(decoding: request.body, as: UTF8.self)
        #expect(body.contains("client_assertion_type=urn%3Aietf%3Aparams%3Aoauth%3Aclient-assertion-type%3Ajwt-bearer"))
        #expect(body.contains("client_assertion=ey"))
        #expect(body.contains("client_id=client-1"))
        #expect(!body.contains("never-sent") && !request.headers.contains { $0.name == "Authorization" })

        try FileManager.default.removeItem(atPath: path)
        let error = await #expect(throws: AuthError.self) { _ = try await client.requestToken(.clientCredentials(scope: nil)) }
        #expect(error?.code == .clientCredentialsUnusable)
        #expect(error?.disposition == .transient, "the session keeps its token and tries again")
        #expect(await transport.requests.count == 1, "nothing is sent without an assertion")
    }
}
