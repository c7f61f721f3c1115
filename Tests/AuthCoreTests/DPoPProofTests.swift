import AuthCore
import AuthGateTesting
import Crypto
import Foundation
import Testing

/// DPoP proofs (RFC 9449 §4) and the token client that sends them: each proof verifies with
/// the key in its own header, names the request, and carries the server's nonce once asked.
@Suite struct DPoPProofTests {
    let key = P256.Signing.PrivateKey()
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// The header and claims of `proof`, after checking its ES256 signature with the `jwk`
    /// of its own header (as a server does).
    func verified(_ proof: String) throws -> (header: [String: Any], claims: [String: Any]) {
        let parts = proof.split(separator: ".", omittingEmptySubsequences: false)
        try #require(parts.count == 3)
        func decoded(_ part: Substring) throws -> Data { try #require(Base64URL.decode(part)) }
        func object(_ part: Substring) throws -> [String: Any] {
            let value = try JSONSerialization.jsonObject(with: try decoded(part))
            return try #require(value as? [String: Any])
        }
        let header = try object(parts[0])
        let claims = try object(parts[1])
        let jwk = try #require(header["jwk"] as? [String: String])
        #expect(jwk["kty"] == "EC" && jwk["crv"] == "P-256")
        let x = try decoded(Substring(jwk["x"] ?? ""))
        let y = try decoded(Substring(jwk["y"] ?? ""))
        let publicKey = try P256.Signing.PublicKey(x963Representation: [4] + Array(x) + Array(y))
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: try decoded(parts[2]))
        #expect(publicKey.isValidSignature(signature, for: Array("\(parts[0]).\(parts[1])".utf8)), "the signature")
        #expect(jwk["d"] == nil, "never the private key")
        return (header, claims)
    }

    @Test func aProofNamesTheRequestAndVerifiesWithTheKeyInItsHeader() throws {
        let proof = try DPoPProof.make(
            key: .p256(key), algorithm: .es256, method: "POST", url: "https://id.example.test/token?x=1#f", now: now,
            nonce: "n-1", accessToken: "Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU")
        let (header, claims) = try verified(proof)
        #expect(header["typ"] as? String == "dpop+jwt")
        #expect(header["alg"] as? String == "ES256")
        #expect(claims["htm"] as? String == "POST")
        #expect(claims["htu"] as? String == "https://id.example.test/token", "without query or fragment")
        #expect(claims["iat"] as? Int == 1_800_000_000)
        #expect(claims["nonce"] as? String == "n-1")
        // RFC 9449 §7.1's example: this token's hash.
        #expect(claims["ath"] as? String == "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo")
        let other = try verified(
            try DPoPProof.make(key: .p256(key), algorithm: .es256, method: "GET", url: "https://a/", now: now))
        #expect((other.claims["jti"] as? String)?.count ?? 0 >= 22)
        #expect(other.claims["jti"] as? String != claims["jti"] as? String, "a fresh jti each")
        #expect(other.claims["nonce"] == nil && other.claims["ath"] == nil)
    }

    /// The proofs a session's key makes per proxied request: a fresh `jti` each (drawn from
    /// a block of random bytes, across its refills), the `ath` of the token each carries
    /// (hashed once per token, never a previous token's), and a nonce with characters JSON
    /// must escape still read back as sent.
    @Test func aSessionKeysProofsEachHaveTheirOwnJTIAndTheirOwnTokensHash() throws {
        let session = try DPoPSessionKey.generate(algorithm: .es256)
        var seen = Set<String>()
        for i in 0..<600 {
            // 600 × 16 bytes spans three blocks of random bytes.
            let token = i % 3 == 2 ? "token-b" : "token-a"
            let proof = try #require(session.proof(method: "GET", url: "https://api.example.test/v1?q=1", accessToken: token))
            let parts = proof.split(separator: ".")
            let json = try #require(Base64URL.decode(parts[1]))
            let claims = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
            let jti = try #require(claims["jti"] as? String)
            #expect(jti.count == 22)
            seen.insert(jti)
            #expect(claims["ath"] as? String == DPoPProof.accessTokenHash(token), "proof \(i)")
            #expect(claims["htu"] as? String == "https://api.example.test/v1")
        }
        #expect(seen.count == 600, "no jti twice")
        session.nonces.remember("n\"1\\\u{1}", for: "https://api.example.test/")
        let proof = try #require(session.proof(method: "GET", url: "https://api.example.test/v1"))
        let (_, claims) = try verified(proof)
        #expect(claims["nonce"] as? String == "n\"1\\\u{1}")
        #expect(claims["ath"] == nil)
    }

    @Test func aKeyThatCannotSignTheAlgorithmIsRefused() {
        let error = #expect(throws: AuthError.self) {
            _ = try DPoPProof.make(key: .p256(key), algorithm: .ps256, method: "GET", url: "https://a/", now: now)
        }
        #expect(error?.code == .unusableDPoPKey && error?.message == "the DPoP key cannot sign PS256")
    }

    @Test func noncesAreKeptPerOrigin() {
        let nonces = DPoPNonces()
        nonces.remember("a", for: "https://ID.example.test:443/token?x")
        #expect(nonces.nonce(for: "https://id.example.test:443/other") == "a")
        #expect(nonces.nonce(for: "https://id.example.test/token") == nil, "another authority")
        nonces.remember("b", for: "https://id.example.test:443/")
        #expect(nonces.nonce(for: "https://id.example.test:443/token") == "b", "replaced")
    }

    /// A transport that answers from a list, recording the requests.
    actor Sequence: HTTPTransport {
        var answers: [HTTPResponseValue]
        var requests: [HTTPRequestValue] = []
        init(_ answers: [HTTPResponseValue]) { self.answers = answers }
        func send(_ request: HTTPRequestValue) async throws -> HTTPResponseValue {
            requests.append(request)
            return answers.removeFirst()
        }
    }

    func client(_ transport: Sequence) -> OAuth2Client {
        OAuth2Client(
            configuration: .init(tokenEndpoint: "https://id.example.test/token", clientID: "gate", authentication: .none),
            transport: transport, clock: TestClock(wallStart: now))
    }

    func keyFile() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("dpop-\(UUID().uuidString).pem").path
        #expect(
            FileManager.default.createFile(
                atPath: path, contents: Data(key.pemRepresentation.utf8), attributes: [.posixPermissions: 0o600]))
        return path
    }

    static let nonceError = HTTPResponseValue(
        status: 400, headers: [("Content-Type", "application/json"), ("DPoP-Nonce", "server-nonce")],
        body: Array(#"{"error":"use_dpop_nonce","error_description":"Authorization server requires nonce in DPoP proof"}"#.utf8))
    static let tokens = HTTPResponseValue(
        status: 200, headers: [("Content-Type", "application/json")],
        body: Array(#"{"access_token":"at","token_type":"DPoP","expires_in":60,"refresh_token":"rt"}"#.utf8))

    @Test func aNonceAskedForIsSentOnceInANewProofAndTheTokenTypeIsKept() async throws {
        let path = try keyFile()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let transport = Sequence([Self.nonceError, Self.tokens])
        let response = try await client(transport).requestToken(
            .refreshToken("rt0"), dpop: try DPoPSessionKey(file: DPoPKey(path: path)))
        #expect(response.tokenType == "DPoP")
        let requests = await transport.requests
        #expect(requests.count == 2)
        let first = try verified(try #require(requests[0].header("DPoP")))
        let second = try verified(try #require(requests[1].header("DPoP")))
        #expect(first.claims["nonce"] == nil)
        #expect(second.claims["nonce"] as? String == "server-nonce")
        #expect(first.claims["jti"] as? String != second.claims["jti"] as? String)
        #expect(second.claims["htm"] as? String == "POST" && second.claims["htu"] as? String == "https://id.example.test/token")
    }

    @Test func aSecondNonceErrorIsTheServersAnswerNotALoop() async throws {
        let path = try keyFile()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let transport = Sequence([Self.nonceError, Self.nonceError, Self.tokens])
        await #expect(throws: AuthError.self) {
            _ = try await client(transport).requestToken(
                .refreshToken("rt0"), dpop: try DPoPSessionKey(file: DPoPKey(path: path)))
        }
        #expect(await transport.requests.count == 2)
    }

    @Test func anUnreadableKeyFileIsNamedNeverRead() {
        let error = #expect(throws: AuthError.self) { try DPoPSessionKey(file: DPoPKey(path: "/nonexistent/dpop.pem")) }
        #expect(error?.code == .unusableDPoPKey)
        #expect(error?.message == "the DPoP key file /nonexistent/dpop.pem cannot be read")
    }
}
