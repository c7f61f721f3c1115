import Foundation
import Testing

@testable import AuthCore

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct TokenStoreTests {
    let account = AccountID("alice@example")
    let record = TokenRecord(
        accessToken: "ACCESS-SECRET", refreshToken: "REFRESH-SECRET", scope: "read",
        expiresAt: Date(timeIntervalSince1970: 1_900_000_000), issuedAt: Date(timeIntervalSince1970: 1_800_000_000),
        generation: TokenGeneration(7), grantType: "password")

    func temporaryDirectory() -> String {
        let path = NSTemporaryDirectory() + "authcore-\(UUID().uuidString)"
        return path
    }

    func mode(of path: String) -> UInt32 {
        var info = stat()
        stat(path, &info)
        return UInt32(info.st_mode) & 0o777
    }

    /// The record is stored as one flat JSON object, as before the fields were shared with
    /// `Credentials`: a file written by an earlier release still opens.
    @Test func theStoredRecordIsOneFlatObjectAndAnEarlierFileStillReads() throws {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        let object = try #require(
            try JSONSerialization.jsonObject(with: encoder.encode(record)) as? [String: Any])
        #expect(
            Set(object.keys)
                == ["accessToken", "refreshToken", "tokenType", "scope", "expiresAt", "issuedAt", "generation", "grantType"])
        #expect(object["generation"] as? Int == 7)
        let earlier = #"""
            {"accessToken":"ACCESS-SECRET","refreshToken":"REFRESH-SECRET","tokenType":"Bearer","scope":"read",
             "expiresAt":1900000000,"issuedAt":1800000000,"generation":7,"grantType":"password"}
            """#
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        #expect(try decoder.decode(TokenRecord.self, from: Data(earlier.utf8)) == record)
        var withoutGrant = record
        withoutGrant.grantType = nil
        let noGrant =
            #"{"accessToken":"ACCESS-SECRET","refreshToken":"REFRESH-SECRET","tokenType":"Bearer","scope":"read","expiresAt":1900000000,"issuedAt":1800000000,"generation":7}"#
        #expect(try decoder.decode(TokenRecord.self, from: Data(noGrant.utf8)) == withoutGrant)
    }

    /// What a token exchange issued is one more member of the record, sealed with the tokens;
    /// a record written without it reads as before.
    @Test func theIssuedTokenTypeOfAnExchangeIsSealedWithTheTokens() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try EncryptedFileTokenStore(directory: directory, key: .random())
        var exchanged = record
        exchanged.issuedTokenType = "urn:ietf:params:oauth:token-type:access_token"
        try await store.save(exchanged, for: account)
        #expect(try await store.load(for: account) == exchanged)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: store.path(for: account)))
        #expect(bytes.range(of: Data("token-type".utf8)) == nil, "sealed like the tokens")
        let object = try #require(
            try JSONSerialization.jsonObject(with: JSONEncoder().encode(exchanged)) as? [String: Any])
        #expect(object["issuedTokenType"] as? String == exchanged.issuedTokenType)
        try await store.save(record, for: account)
        #expect(try await store.load(for: account)?.issuedTokenType == nil)
    }

    @Test func saveLoadDeleteFollowTheKeychainVerbs() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try EncryptedFileTokenStore(directory: directory, key: .random())
        #expect(try await store.load(for: account) == nil, "absent is nil")
        try await store.delete(for: account)  // absent is fine
        try await store.save(record, for: account)
        #expect(try await store.load(for: account) == record)
        var updated = record
        updated.accessToken = "NEW"
        try await store.save(updated, for: account)  // update on duplicate
        #expect(try await store.load(for: account) == updated)
        try await store.delete(for: account)
        #expect(try await store.load(for: account) == nil)
    }

    @Test func filesAreMode0600InA0700DirectoryAndHoldNoPlaintext() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try EncryptedFileTokenStore(directory: directory, key: .random())
        try await store.save(record, for: account)
        let path = store.path(for: account)
        #expect(mode(of: path) == 0o600)
        #expect(mode(of: directory) == 0o700)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(bytes.range(of: Data("SECRET".utf8)) == nil)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.contains(".tmp") }
        #expect(leftovers.isEmpty)
    }

    @Test func wrongKeyIsReportedAsWrongKey() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await EncryptedFileTokenStore(directory: directory, key: .random()).save(record, for: account)
        let other = try EncryptedFileTokenStore(directory: directory, key: .random())
        let error = await #expect(throws: AuthError.self) { try await other.load(for: self.account) }
        #expect(error?.code == .wrongKey)
        #expect(error?.description.contains("SECRET") == false)
    }

    @Test(arguments: ["flip", "truncate", "garbage", "empty"])
    func corruptOrTamperedFileIsACorruptError(damage: String) async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try EncryptedFileTokenStore(directory: directory, key: .random())
        try await store.save(record, for: account)
        let url = URL(fileURLWithPath: store.path(for: account))
        var bytes = try Data(contentsOf: url)
        switch damage {
        case "flip": bytes[bytes.count - 5] ^= 0x01
        case "truncate": bytes = bytes.prefix(bytes.count - 20)
        case "garbage": bytes = Data("{\"access_token\":\"x\"}".utf8)
        default: bytes = Data()
        }
        try bytes.write(to: url)
        let error = await #expect(throws: AuthError.self) { try await store.load(for: self.account) }
        #expect(error?.code == .corrupt)
    }

    @Test func recordCopiedToAnotherAccountDoesNotOpen() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try EncryptedFileTokenStore(directory: directory, key: .random())
        try await store.save(record, for: account)
        let bob = AccountID("bob")
        try FileManager.default.copyItem(atPath: store.path(for: account), toPath: store.path(for: bob))
        let error = await #expect(throws: AuthError.self) { try await store.load(for: bob) }
        #expect(error?.code == .corrupt)
    }

    @Test(arguments: [AtomicFile.Step.write, .fsync, .rename])
    func diskFullDuringSaveKeepsThePreviousRecord(step: AtomicFile.Step) async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let key = TokenStoreKey.random()
        try await EncryptedFileTokenStore(directory: directory, key: key).save(record, for: account)
        let failing = try EncryptedFileTokenStore(
            directory: directory, key: key, faults: { candidate, _ in candidate == step ? ENOSPC : nil })
        var updated = record
        updated.accessToken = "NEW"
        let error = await #expect(throws: AuthError.self) { try await failing.save(updated, for: self.account) }
        #expect(error?.code == .io)
        #expect(error?.errno == ENOSPC)
        #expect(try await failing.load(for: account) == record, "the old record is intact")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.contains(".tmp") }
        #expect(leftovers.isEmpty, "the temporary file is removed")
    }

    @Test func readOnlyDirectoryFailsWithAnIOError() async throws {
        let directory = temporaryDirectory()
        defer {
            chmod(directory, 0o700)
            try? FileManager.default.removeItem(atPath: directory)
        }
        let store = try EncryptedFileTokenStore(directory: directory, key: .random())
        chmod(directory, 0o500)
        // Root ignores directory permissions; then the read-only file system is simulated
        // by failing open() with EROFS instead.
        let store2: EncryptedFileTokenStore
        if geteuid() == 0 {
            store2 = try EncryptedFileTokenStore(
                directory: directory, key: .random(), faults: { step, _ in step == .open ? EROFS : nil })
        } else {
            store2 = store
        }
        let error = await #expect(throws: AuthError.self) { try await store2.save(self.record, for: self.account) }
        #expect(error?.code == .io)
        #expect(error?.errno == (geteuid() == 0 ? EROFS : EACCES))
    }

    @Test func keyFileIsCreatedWithMode0600AndReloaded() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/token.key"
        let missing = #expect(throws: AuthError.self) { try TokenStoreKey.load(fromFile: path, createIfMissing: false) }
        #expect(missing?.code == .keyUnavailable)
        let created = try TokenStoreKey.load(fromFile: path, createIfMissing: true)
        #expect(mode(of: path) == 0o600)
        let loaded = try TokenStoreKey.load(fromFile: path, createIfMissing: false)
        #expect(created.identifier == loaded.identifier)
        #expect(
            !created.description.contains(
                try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
    }

    @Test func keyFromEnvironmentValueMustBe32Bytes() throws {
        let good = Data(repeating: 7, count: 32).base64EncodedString()
        #expect(throws: Never.self) { try TokenStoreKey(base64: good) }
        let short = #expect(throws: AuthError.self) {
            try TokenStoreKey(base64: Data(repeating: 7, count: 16).base64EncodedString())
        }
        #expect(short?.code == .keyUnavailable)
    }

    @Test func sessionStateFileIsPlainJSONWrittenAtomically() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try FileSessionStateStore(directory: directory)
        #expect(try await store.load(for: account) == nil)
        let state = SessionState(isLoggedIn: true, subject: "alice", lastLogin: Date(timeIntervalSince1970: 1_800_000_000))
        try await store.save(state, for: account)
        #expect(try await store.load(for: account) == state)
        #expect(mode(of: store.path(for: account)) == 0o600)
        let text = try String(contentsOfFile: store.path(for: account), encoding: .utf8)
        #expect(text.contains("\"isLoggedIn\" : true"))
        try "not json".write(toFile: store.path(for: account), atomically: false, encoding: .utf8)
        let error = await #expect(throws: AuthError.self) { try await store.load(for: self.account) }
        #expect(error?.code == .corrupt)
    }

    @Test func fileStoresBackAnActorAcrossARestart() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let key = TokenStoreKey.random()
        let h = Harness()
        let clock = h.clock
        let client = h.client
        func makeActor() throws -> AuthActor {
            AuthActor(
                client: client, tokenStore: try EncryptedFileTokenStore(directory: directory, key: key),
                stateStore: try FileSessionStateStore(directory: directory), clock: clock,
                configuration: .init(skew: .seconds(30), jitter: .zero))
        }
        let first = try makeActor()
        let token = try await first.login(.password(username: "alice", password: "wonderland"))
        let second = try makeActor()
        #expect(try await second.restore().isLoggedIn)
        #expect(try await second.token() == token)
        try await second.logout()
        let third = try makeActor()
        #expect(try await !third.restore().isLoggedIn)
    }
}
