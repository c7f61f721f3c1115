import AuthCore
import AuthGateTesting
import Crypto
import Foundation
import Testing

/// Which key stored tokens are proved with, decided without a server: the key file's when
/// the tokens are bound to it, the stored key when it was generated, and `keyChanged`
/// otherwise.
struct DPoPKeySourceTests {
    static func keyFile(_ pem: String = P256.Signing.PrivateKey().pemRepresentation) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("dpop-src-\(UUID().uuidString).pem").path
        #expect(FileManager.default.createFile(atPath: path, contents: Data(pem.utf8), attributes: [.posixPermissions: 0o600]))
        return path
    }

    @Test func aKeyFileProvesTokensBoundToItsKeyOnly() throws {
        let path = try Self.keyFile()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let source = DPoPKeySource.file(DPoPKey(path: path))
        let key = try source.keyForNewSession()
        #expect(!key.isGenerated && key.binding.generatedKey == nil)
        #expect(try source.key(for: key.binding).get() == key)
        #expect(try source.key(for: nil).get() == key, "tokens stored before bindings were kept take the file's key")
        let other = DPoPBinding(thumbprint: try DPoPSessionKey.generate(algorithm: .es256).thumbprint, generatedKey: nil)
        #expect(source.key(for: other) == .failure(.dpopKeyChanged))
        let generated = try DPoPSessionKey.generate(algorithm: .es256).binding
        #expect(source.key(for: generated) == .failure(.dpopKeyChanged), "a generated key is not the file's")
        #expect(DPoPKeySource.file(DPoPKey(path: path + ".missing")).key(for: key.binding) == .failure(.dpopKeyUnreadable))
    }

    @Test(arguments: [ClientKey.Algorithm.es256, .ps256])
    func aGeneratedKeyComesBackFromItsBindingAndNothingElse(algorithm: ClientKey.Algorithm) throws {
        let source = DPoPKeySource.generated(algorithm)
        let key = try source.keyForNewSession()
        #expect(key.isGenerated && key.algorithm == algorithm)
        let back = try source.key(for: key.binding).get()
        #expect(back == key && back.isGenerated)
        #expect(try source.keyForNewSession() != key, "each session its own key")
        #expect(source.key(for: nil) == .failure(.dpopKeyChanged))
        #expect(source.key(for: DPoPBinding(thumbprint: key.thumbprint, generatedKey: nil)) == .failure(.dpopKeyChanged))
        var forged = key.binding
        forged.thumbprint = try DPoPSessionKey.generate(algorithm: .es256).thumbprint
        #expect(source.key(for: forged) == .failure(.dpopKeyChanged), "a key that is not the one the tokens are bound to")
        let other: ClientKey.Algorithm = algorithm == .es256 ? .ps256 : .es256
        #expect(DPoPKeySource.generated(other).key(for: key.binding) == .failure(.dpopKeyChanged), "another algorithm")
    }

    @Test func theBindingTravelsSealedInTheRecordAndIsNeverPrinted() throws {
        let key = try DPoPSessionKey.generate(algorithm: .es256)
        let record = TokenRecord(
            accessToken: "at", refreshToken: "rt", tokenType: "DPoP", expiresAt: nil, issuedAt: Date(timeIntervalSince1970: 0),
            generation: TokenGeneration(1), dpop: key.binding)
        let decoded = try JSONDecoder().decode(TokenRecord.self, from: try JSONEncoder().encode(record))
        #expect(decoded == record && decoded.dpop?.generatedKey != nil)
        let old = try JSONDecoder().decode(
            TokenRecord.self, from: Data(#"{"accessToken":"at","tokenType":"DPoP","issuedAt":0,"generation":1}"#.utf8))
        #expect(old.dpop == nil, "a record written before bindings reads as unbound")
        #expect(!"\(key.binding)".contains("PRIVATE") && !"\(key)".contains("PRIVATE"))
        #expect("\(key.binding)".contains(key.thumbprint))
    }
}

/// A clock far from the servers' is told apart from a bad proof by the `Date` of the answer
/// refusing it.
struct ClockSkewWatchTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func anOffsetBeyondTheThresholdIsKeptUntilAProofIsAccepted() {
        let watch = ClockSkewWatch()
        #expect(watch.proofRefused(serverDate: HTTPDate.format(now + 20), now: now) == nil, "within the threshold")
        #expect(!watch.isSkewed)
        #expect(watch.proofRefused(serverDate: "not a date", now: now) == nil)
        #expect(watch.proofRefused(serverDate: nil, now: now) == nil)
        #expect(watch.proofRefused(serverDate: HTTPDate.format(now - 600), now: now) == .seconds(-600))
        #expect(watch.isSkewed && watch.skew == .seconds(-600))
        watch.proofAccepted()
        #expect(!watch.isSkewed && watch.skew == nil)
        watch.proofRefused(offset: .seconds(45))
        #expect(watch.skew == .seconds(45))
    }

    @Test func aTokenEndpointRefusingAProofTellsItsClock() async throws {
        let key = try DPoPSessionKey.generate(algorithm: .es256)
        let refusal = HTTPResponseValue(
            status: 400,
            headers: [("Content-Type", "application/json"), ("Date", HTTPDate.format(now + 600))],
            body: Array(#"{"error":"invalid_dpop_proof","error_description":"iat out of range"}"#.utf8))
        let transport = DPoPProofTests.Sequence([refusal])
        let client = OAuth2Client(
            configuration: .init(tokenEndpoint: "https://id.example.test/token", clientID: "gate", authentication: .none),
            transport: transport, clock: TestClock(wallStart: now))
        let error = await #expect(throws: AuthError.self) { try await client.requestToken(.refreshToken("rt"), dpop: key) }
        #expect(error?.oauthError?.error == "invalid_dpop_proof")
        #expect(error?.disposition == .transient, "the session keeps its tokens while the clock is put right")
        #expect(error?.serverClockOffset == .seconds(600))
    }
}
