import AuthCore
import AuthGateTesting
import Foundation
import Locking
import Logging
import Testing

/// A stored record whose tokens break their syntax (written by an older version, or tampered
/// with) is treated as no tokens at restore: logged out, deleted, a log line naming the
/// field and never the value, no crash, nothing sent anywhere.
@Suite struct RestoreSyntaxTests {
    /// Every log line, message and metadata, as text.
    final class Lines: Sendable {
        let lines = Locked<[String]>([])
        var all: String { lines.withLock { $0.joined(separator: "\n") } }
        var logger: Logger { Logger(label: "test") { _ in Handler(sink: self) } }

        struct Handler: LogHandler {
            let sink: Lines
            var metadata: Logger.Metadata = [:]
            var logLevel: Logger.Level = .trace
            subscript(metadataKey key: String) -> Logger.Metadata.Value? {
                get { metadata[key] }
                set { metadata[key] = newValue }
            }
            func log(event: LogEvent) {
                let meta = (event.metadata ?? [:]).map { "\($0)=\($1)" }.sorted().joined(separator: " ")
                sink.lines.withLock { $0.append("\(event.message) \(meta)") }
            }
        }
    }

    static let evil = "abc\r\nX-Evil: 1"

    /// (field, record): one field broken in each.
    static let poisoned: [(String, TokenRecord)] = [
        ("access_token", record(access: evil)),
        ("access_token", record(access: "a b")),
        ("access_token", record(access: "")),
        ("token_type", record(type: "Bearer\r\nX-Evil: 1")),
        ("token_type", record(type: "Bearer x")),
        ("refresh_token", record(refresh: evil)),
        ("refresh_token", record(refresh: "r\u{0}")),
    ]

    static func record(access: String = "good-access", type: String = "Bearer", refresh: String? = "good-refresh") -> TokenRecord
    {
        TokenRecord(
            accessToken: access, refreshToken: refresh, tokenType: type, expiresAt: Date() + 3600, issuedAt: Date(),
            generation: TokenGeneration(7))
    }

    func actor(_ h: Harness, _ log: Lines) -> AuthActor {
        AuthActor(
            client: h.client, tokenStore: h.tokenStore, stateStore: h.stateStore, clock: h.clock, configuration: h.configuration,
            logger: log.logger, randomFraction: { 0 })
    }

    @Test(arguments: 0..<poisoned.count)
    func aStoredTokenThatBreaksItsSyntaxRestoresAsLoggedOut(_ index: Int) async throws {
        let (field, bad) = Self.poisoned[index]
        let h = Harness()
        h.tokenStore.setRecord(bad, for: .default)
        h.stateStore.setStored(SessionState(isLoggedIn: true, subject: "alice"), for: .default)
        let log = Lines()
        let restarted = actor(h, log)
        let status = try await restarted.restore()
        #expect(!status.isLoggedIn, "\(field)")
        #expect(status.logoutReason == .tokensMissing)
        #expect(h.tokenStore.record(for: .default) == nil, "the unusable record is deleted")
        #expect(h.stateStore.stored(for: .default)?.isLoggedIn == false, "the state is corrected on disk")
        let error = await #expect(throws: AuthError.self) { try await restarted.token() }
        #expect(error?.code == .loginRequired)
        #expect(await h.server.statistics.requests == 0, "nothing is sent with it")
        let text = log.all
        #expect(text.contains("auth.store.invalid_field=\(field)"), "\(text)")
        #expect(!text.contains("X-Evil") && !text.contains("abc") && !text.contains("a b"), "\(text)")
        // A login afterwards works as on a fresh store.
        #expect(try await restarted.login(.password(username: "alice", password: "wonderland")).generation > bad.generation)
    }

    @Test func aPoisonedRecordWithoutLoggedInStateIsDeletedToo() async throws {
        let h = Harness()
        h.tokenStore.setRecord(Self.record(access: Self.evil), for: .default)
        #expect(try await h.actor.restore().isLoggedIn == false)
        #expect(h.tokenStore.record(for: .default) == nil)
    }

    @Test func aValidRecordStillRestores() async throws {
        let h = Harness()
        var valid = Self.record()
        valid.expiresAt = h.clock.wallNow + 3600
        h.tokenStore.setRecord(valid, for: .default)
        h.stateStore.setStored(SessionState(isLoggedIn: true, subject: "alice"), for: .default)
        #expect(try await h.actor.restore().isLoggedIn)
        #expect(try await h.actor.token().value == "good-access")
    }

    /// Through the encrypted file store's own API, as an older AuthGate would have written it.
    @Test func aPoisonedRecordInTheEncryptedStoreRestoresAsLoggedOut() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ag-restore-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let key = TokenStoreKey.random()
        let tokens = try EncryptedFileTokenStore(directory: directory, key: key)
        let states = try FileSessionStateStore(directory: directory)
        try await tokens.save(Self.record(access: Self.evil), for: .default)
        try await states.save(SessionState(isLoggedIn: true, subject: "alice"), for: .default)
        let h = Harness()
        let log = Lines()
        let restarted = AuthActor(
            client: h.client, tokenStore: tokens, stateStore: states, clock: h.clock, configuration: h.configuration,
            logger: log.logger, randomFraction: { 0 })
        #expect(try await restarted.restore().isLoggedIn == false)
        #expect(try await tokens.load(for: .default) == nil)
        #expect(try await states.load(for: .default)?.isLoggedIn == false)
        #expect(log.all.contains("access_token") && !log.all.contains("X-Evil"), "\(log.all)")
    }
}
