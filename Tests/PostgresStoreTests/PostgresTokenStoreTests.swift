import AuthCore
import Foundation
import Logging
import TestSupport
import Testing

@testable import PostgresStore

/// The store against the real PostgreSQL of `scripts/with-postgres`: what it writes, what a
/// dump of it shows, its schema, and how it refuses a bad setting at start.
@Suite(TestDatabase.required) struct PostgresTokenStoreTests {
    let key = TokenStoreKey.random()
    let logger = Logger(label: "test.store")

    func open(table: String, key: TokenStoreKey? = nil, tlsMode: String = "disable") async throws -> PostgresTokenStore {
        let app = try TestDatabase.app()
        let c = try PostgresStoreConfiguration(url: app.storeURL, tlsMode: tlsMode, table: table)
        return try await PostgresTokenStore.openRunning(c, password: app.password, key: key ?? self.key, logger: logger)
    }

    static func record(_ generation: UInt64, access: String, refresh: String) -> TokenRecord {
        TokenRecord(
            accessToken: access, refreshToken: refresh, scope: "api", expiresAt: Date(timeIntervalSince1970: 2_000_000_000),
            issuedAt: Date(timeIntervalSince1970: 1_900_000_000), generation: TokenGeneration(generation), grantType: "password")
    }

    @Test func savedTokensAndStateReadBackAndDeleteLeavesTheState() async throws {
        let table = TestDatabase.uniqueTable()
        let store = try await open(table: table)
        let account = AccountID("default")
        #expect(try await store.load(for: account) as TokenRecord? == nil)
        #expect(try await store.load(for: account) as SessionState? == nil)
        let first = Self.record(1, access: "access-1", refresh: "refresh-1")
        try await store.save(first, for: account)
        let state = SessionState(isLoggedIn: true, subject: "alice", lastLogin: Date(timeIntervalSince1970: 1_900_000_000))
        try await store.save(state, for: account)
        #expect(try await store.load(for: account) as TokenRecord? == first)
        let second = Self.record(2, access: "access-2", refresh: "refresh-2")
        try await store.save(second, for: account)
        #expect(try await store.load(for: account) as TokenRecord? == second)
        #expect(try await store.load(for: account) as SessionState? == state)
        try await store.delete(for: account)
        #expect(try await store.load(for: account) as TokenRecord? == nil)
        #expect(try await store.load(for: account) as SessionState? == state)
        // Another account's row is its own.
        #expect(try await store.load(for: AccountID("billing")) as TokenRecord? == nil)
        await store.close()
    }

    @Test func neitherTheTableNorADumpShowsAToken() async throws {
        let table = TestDatabase.uniqueTable()
        let store = try await open(table: table)
        let access = "AT-\(UUID().uuidString)"
        let refresh = "RT-\(UUID().uuidString)"
        try await store.save(Self.record(7, access: access, refresh: refresh), for: AccountID("default"))
        try await store.save(SessionState(isLoggedIn: true, subject: "alice"), for: AccountID("default"))
        await store.close()
        let rows = try await TestDatabase.rawRows(table)
        #expect(rows.count == 1)
        let hex = { (s: String) in s.utf8.map { String(format: "%02x", $0) }.joined() }
        for row in rows {
            #expect(row.contains("alice"))  // the row was read whole
            for secret in [access, refresh] {
                #expect(!row.contains(secret))
                #expect(!row.contains(hex(secret)))
                #expect(!row.contains(Data(secret.utf8).base64EncodedString()))
            }
        }
        // And pg_dump, the way a backup sees it.
        let bin = try #require(ProcessInfo.processInfo.environment["AUTHGATE_TEST_POSTGRES_BIN"])
        let dump = Subprocess()
        dump.executableURL = URL(fileURLWithPath: bin + "/pg_dump")
        dump.arguments = ["--dbname=\(try #require(TestDatabase.url))", "--table=\(table)", "--data-only", "--inserts"]
        let out = Pipe()
        dump.standardOutput = out
        try dump.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        dump.waitUntilExit()
        #expect(dump.terminationStatus == 0)
        #expect(text.contains("INSERT INTO"))
        for secret in [access, refresh] {
            #expect(!text.contains(secret))
            #expect(!text.contains(hex(secret)))
        }
    }

    /// What a token exchange issued (RFC 8693 §2.2.1) is kept with the tokens, in the sealed
    /// box: read back whole, never in the row in the clear.
    @Test func theIssuedTokenTypeOfAnExchangeIsKeptSealed() async throws {
        let table = TestDatabase.uniqueTable()
        let store = try await open(table: table)
        var exchanged = Self.record(1, access: "access-1", refresh: "refresh-1")
        exchanged.grantType = "urn:ietf:params:oauth:grant-type:token-exchange"
        exchanged.issuedTokenType = "urn:example:token-type:\(UUID().uuidString)"
        try await store.save(exchanged, for: AccountID("default"))
        #expect(try await store.load(for: AccountID("default")) as TokenRecord? == exchanged)
        await store.close()
        let type = try #require(exchanged.issuedTokenType)
        for row in try await TestDatabase.rawRows(table) {
            #expect(!row.contains(type) && !row.contains(type.utf8.map { String(format: "%02x", $0) }.joined()))
        }
    }

    @Test func aRecordSealedWithAnotherKeyIsAWrongKeyErrorNotAnEmptySession() async throws {
        let table = TestDatabase.uniqueTable()
        let store = try await open(table: table)
        try await store.save(Self.record(1, access: "a", refresh: "r"), for: AccountID("default"))
        await store.close()
        let other = try await open(table: table, key: TokenStoreKey.random())
        await #expect(throws: AuthError.self) { _ = try await other.load(for: AccountID("default")) as TokenRecord? }
        do {
            _ = try await other.load(for: AccountID("default")) as TokenRecord?
        } catch let error as AuthError {
            #expect(error.code == .wrongKey)
        }
        // The lease reads the record too: the same error there, not "database unavailable".
        do {
            _ = try await other.acquire(for: AccountID("default"), replacing: "a")
            Issue.record("acquired on a record sealed with another key")
        } catch let error as AuthError {
            #expect(error.code == .wrongKey)
        }
        await other.close()
    }

    @Test func replicasStartingTogetherMigrateOnceAndAgainIsANoOp() async throws {
        let table = TestDatabase.uniqueTable()
        let stores = try await withThrowingTaskGroup(of: PostgresTokenStore.self) { group in
            for _ in 0..<4 { group.addTask { try await open(table: table) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(stores.count == 4)
        try await stores[0].save(Self.record(3, access: "a", refresh: "r"), for: AccountID("default"))
        for s in stores { await s.close() }
        let again = try await open(table: table)
        #expect(try await again.load(for: AccountID("default")) as TokenRecord? != nil)  // nothing dropped
        await again.close()
        let versions = try await TestDatabase.rawRows("\(table)_schema")
        #expect(versions.count == 1)
        #expect(versions.first?.contains("\"version\":\(PostgresSchema.version)") == true)
    }

    @Test func aSchemaNewerThanThisBuildIsRefusedNamingTheTable() async throws {
        let table = TestDatabase.uniqueTable()
        await (try await open(table: table)).close()
        try await TestDatabase.adminExecute("UPDATE \(table)_schema SET version = 99")
        await #expect {
            _ = try await open(table: table)
        } throws: { error in
            let e = error as? PostgresStoreError
            return e?.code == .schemaTooNew && e?.field == "store.table" && "\(error)".contains("99")
        }
    }

    @Test func aWrongPasswordNamesThePasswordFile() async throws {
        let app = try TestDatabase.app()
        let c = try PostgresStoreConfiguration(url: app.storeURL, tlsMode: "disable", table: TestDatabase.uniqueTable())
        let wrong = "wrong-\(UUID().uuidString)"
        await #expect {
            _ = try await PostgresTokenStore.open(c, password: wrong, key: key, logger: logger)
        } throws: { error in
            let e = error as? PostgresStoreError
            return e?.code == .authenticationFailed && e?.field == "store.passwordFile" && !"\(error)".contains(wrong)
        }
        await #expect {
            _ = try await PostgresTokenStore.open(c, password: nil, key: key, logger: logger)
        } throws: { ($0 as? PostgresStoreError)?.field == "store.passwordFile" }
    }

    @Test func anUnreachableServerOrAMissingDatabaseNamesTheURL() async throws {
        let app = try TestDatabase.app()
        // A port nothing listens on: bind one, note it, close it.
        let closedPort = try ClosedPort.find()
        let unreachable = try PostgresStoreConfiguration(
            url: "postgres://\(app.user)@127.0.0.1:\(closedPort)/\(app.database)", tlsMode: "disable")
        await #expect {
            _ = try await PostgresTokenStore.open(unreachable, password: app.password, key: key, logger: logger)
        } throws: { ($0 as? PostgresStoreError)?.code == .unreachable && ($0 as? PostgresStoreError)?.field == "store.url" }
        let missing = try PostgresStoreConfiguration(
            url: "postgres://\(app.user)@\(app.host):\(app.port)/nosuchdb", tlsMode: "disable")
        await #expect {
            _ = try await PostgresTokenStore.open(missing, password: app.password, key: key, logger: logger)
        } throws: { ($0 as? PostgresStoreError)?.code == .databaseMissing && "\($0)".contains("nosuchdb") }
        let tls = try PostgresStoreConfiguration(url: app.storeURL, tlsMode: "require")
        await #expect {
            _ = try await PostgresTokenStore.open(tls, password: app.password, key: key, logger: logger)
        } throws: { ($0 as? PostgresStoreError)?.field == "store.tlsMode" }
    }

    @Test func aRoleWithoutRightsIsRefusedAtStartNamingTheTable() async throws {
        let app = try TestDatabase.app()
        let role = "ro_" + TestDatabase.uniqueTable()
        let password = UUID().uuidString
        try await TestDatabase.adminExecute("CREATE ROLE \(role) LOGIN PASSWORD '\(password)'")
        let table = TestDatabase.uniqueTable()
        let c = try PostgresStoreConfiguration(
            url: "postgres://\(role)@\(app.host):\(app.port)/\(app.database)", tlsMode: "disable", table: table)
        // No CREATE on the schema: the table cannot be made.
        await #expect {
            _ = try await PostgresTokenStore.open(c, password: password, key: key, logger: logger)
        } throws: {
            ($0 as? PostgresStoreError)?.code == .permissionDenied && ($0 as? PostgresStoreError)?.field == "store.table"
        }
        // The table exists (made by the owner) and the role may only read it.
        await (try await open(table: table)).close()
        try await TestDatabase.adminExecute("GRANT SELECT ON \(table), \(table)_schema TO \(role)")
        await #expect {
            _ = try await PostgresTokenStore.open(c, password: password, key: key, logger: logger)
        } throws: { ($0 as? PostgresStoreError)?.code == .permissionDenied }
        try await TestDatabase.adminExecute("GRANT INSERT, UPDATE ON \(table) TO \(role)")
        await (try await PostgresTokenStore.open(c, password: password, key: key, logger: logger)).close()
    }
}
