import AuthCore
import Foundation
import Logging
import PostgresNIO
import TestSupport
import Testing

@testable import PostgresStore

/// A write its caller was told failed (it outlasted the operation's bound) never lands
/// afterwards over a newer state: held up behind another connection's row lock past the
/// deadline, it is rolled back once the lock goes, whatever was written meanwhile.
@Suite(TestDatabase.required) struct LateWriteTests {
    /// The writes a caller can give up on.
    enum Write: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case login, logout, state, refresh
        var testDescription: String { rawValue }
    }

    let key = TokenStoreKey.random()
    let account = AccountID.default

    static func record(access: String, refresh: String) -> TokenRecord {
        TokenRecord(
            accessToken: access, refreshToken: refresh, scope: "api", expiresAt: Date(timeIntervalSince1970: 2_000_000_000),
            issuedAt: Date(timeIntervalSince1970: 1_900_000_000), generation: TokenGeneration(1), grantType: "password")
    }

    /// `body`, tried again after a store that did not answer in time, at most five times:
    /// only for what may run twice.
    static func retried<R>(_ body: () async throws -> R) async throws -> R {
        for _ in 0..<4 {
            do {
                return try await body()
            } catch let error as AuthError where error.code == .unavailable {
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
        return try await body()
    }

    @Test(arguments: Write.allCases)
    func aWriteThatTimedOutBehindARowLockNeverReplacesWhatWasWrittenAfterIt(_ write: Write) async throws {
        let app = try TestDatabase.app()
        let table = TestDatabase.uniqueTable()
        let configuration = try PostgresStoreConfiguration(url: app.storeURL, tlsMode: "disable", table: table)
        let logger = Logger(label: "test.store", factory: { _ in SwiftLogNoOpLogHandler() })
        let first = Self.record(access: "access-1", refresh: "refresh-1")
        // The session is written by a store with the default bound: on a loaded machine a new
        // pool's first connections can take longer than 0.5 s, which is not what this test is
        // about (and a write retried after its bound may have committed: generations would be off).
        let setUp = try await PostgresTokenStore.openRunning(configuration, password: app.password, key: key, logger: logger)
        try await setUp.save(first, for: account)
        try await setUp.save(SessionState(isLoggedIn: true, subject: "alice"), for: account)
        await setUp.close()
        let store = try await PostgresTokenStore.openRunning(
            configuration, password: app.password, key: key, logger: logger, operationTimeout: .milliseconds(500))
        // A take retried after its bound takes again: the same replica at the same generation.
        let lease = try await Self.retried { try await store.acquire(for: account, replacing: first.accessToken) }
        guard case .granted(let lease) = lease else {
            Issue.record("no lease: \(lease)")
            return
        }

        // What another replica writes after the caller below was told its write failed.
        let newer = Self.record(access: "access-3", refresh: "refresh-3")
        let newerSealed = Data(try TokenSealer(key: key).seal(newer, for: account))
        let newerState = SessionState(isLoggedIn: true, subject: "bob")
        let newerStateText = String(decoding: try PostgresTokenStore.stateEncoder.encode(newerState), as: UTF8.self)
        let stale = Self.record(access: "access-2", refresh: "refresh-2")

        try await TestDatabase.withConnection(app) { holder in
            let logger = Logger(label: "test.holder")
            try await holder.query("BEGIN", logger: logger)
            try await holder.query(
                "SELECT 1 FROM \(unescaped: table) WHERE account = \(account.rawValue) FOR UPDATE", logger: logger)
            // Held up behind the lock past its bound: the caller is told it failed.
            await #expect(throws: AuthError.self) {
                switch write {
                case .login: try await store.save(stale, for: account)
                case .logout: try await store.delete(for: account)
                case .state: try await store.save(SessionState(isLoggedIn: false), for: account)
                case .refresh: _ = try await store.commit(stale, for: account, lease: lease)
                }
            }
            // Nor does it wait on for the lock: its statement times out on the server too, and
            // the holder, idle in its transaction, is the only connection left busy.
            let stopped = await eventually(timeout: .seconds(30)) {
                (try? await Self.busyConnections(on: table, database: app.database)) == 1
            }
            #expect(stopped, "the held-up statement still waits for the lock")
            try await holder.query(
                """
                UPDATE \(unescaped: table) SET sealed = \(newerSealed), state = \(newerStateText), generation = generation + 1,
                session_epoch = session_epoch + 1, lease_owner = NULL, lease_until = NULL
                WHERE account = \(account.rawValue)
                """, logger: logger)
            try await holder.query("COMMIT", logger: logger)
        }
        // Whatever the write held up still had to do, it has done by now.
        let settled = await eventually(timeout: .seconds(30)) {
            (try? await Self.busyConnections(on: table, database: app.database)) == 0
        }
        #expect(settled)
        try await Task.sleep(for: .milliseconds(300))

        #expect(try await store.load(for: account) as TokenRecord? == newer)
        #expect(try await store.load(for: account) as SessionState? == newerState)
        let generations = try await TestDatabase.rawRows(table)
        #expect(generations.count == 1)
        // save (1), the lease's take (unchanged), the other replica's write (2): nothing after it.
        #expect(generations.first?.contains("\"generation\":2,") == true, "\(generations)")
        await store.close()
    }

    /// Connections to `database` in a transaction or running a statement on `table`, other
    /// than the one asking.
    static func busyConnections(on table: String, database: String) async throws -> Int {
        try await TestDatabase.withConnection(try TestDatabase.admin(), database: database) { c in
            let rows = try await c.query(
                """
                SELECT count(*)::int8 FROM pg_stat_activity
                WHERE datname = \(database) AND pid <> pg_backend_pid() AND backend_type = 'client backend' AND state <> 'idle'
                AND position(\(table) in query) > 0
                """, logger: Logger(label: "test.postgres"))
            for try await (n) in rows.decode(Int64.self) { return Int(n) }
            return 0
        }
    }
}
