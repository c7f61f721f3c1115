import AuthCore
import Foundation
import Logging
import PostgresNIO
import Testing

@testable import PostgresStore

/// A table an earlier build created is brought to this build's version in place, by the
/// role that owns it: the sessions in it are kept, and the columns added since are usable.
@Suite(TestDatabase.required) struct SchemaUpgradeTests {
    let key = TokenStoreKey.random()
    let logger = Logger(label: "test.store")

    /// Creates `table` as version 1 wrote it, as the application's role, with one logged-in
    /// session in it.
    func createVersionOne(_ table: String, holding record: TokenRecord, state: String) async throws {
        let sealed = Data(try TokenSealer(key: key).seal(record, for: .default))
        try await TestDatabase.withConnection(try TestDatabase.app()) { c in
            for statement in PostgresSchema.migrations(table)[0] {
                try await c.query(PostgresQuery(unsafeSQL: statement), logger: logger)
            }
            try await c.query(
                PostgresQuery(
                    unsafeSQL: """
                        CREATE TABLE \(table)_schema (
                            id int PRIMARY KEY CHECK (id = 1),
                            version int NOT NULL,
                            migrated_at timestamptz NOT NULL DEFAULT now()
                        )
                        """), logger: logger)
            try await c.query(PostgresQuery(unsafeSQL: "INSERT INTO \(table)_schema (id, version) VALUES (1, 1)"), logger: logger)
            try await c.query(
                """
                INSERT INTO \(unescaped: table) (account, sealed, generation, session_epoch, state)
                VALUES ('default', \(sealed), 4, 2, \(state))
                """, logger: logger)
        }
    }

    @Test func aVersionOneTableUpgradesInPlaceAndKeepsItsSession() async throws {
        #expect(PostgresSchema.version == 2)
        let table = TestDatabase.uniqueTable()
        let record = TokenRecord(
            accessToken: "at-before-upgrade", refreshToken: "rt-before-upgrade", scope: "api",
            expiresAt: Date(timeIntervalSince1970: 2_000_000_000), issuedAt: Date(timeIntervalSince1970: 1_900_000_000),
            generation: TokenGeneration(4), grantType: "password")
        let state =
            #"{"isGuest":false,"isLoggedIn":true,"lastLogin":"2026-11-27T10:00:00Z","subject":"alice","updatedAt":"2026-11-27T10:00:00Z"}"#
        try await createVersionOne(table, holding: record, state: state)

        let app = try TestDatabase.app()
        let configuration = try PostgresStoreConfiguration(url: app.storeURL, tlsMode: "disable", table: table)
        let store = try await PostgresTokenStore.openRunning(configuration, password: app.password, key: key, logger: logger)
        let versions = try await TestDatabase.rawRows("\(table)_schema")
        #expect(versions.count == 1 && versions.first?.contains("\"version\":2") == true)
        let session = try await store.loadSession(for: .default)
        #expect(session.record == record, "the session stored before the upgrade is still there")
        #expect(session.state?.isLoggedIn == true && session.state?.subject == "alice")

        // The new columns hold a shared device login.
        let login = SharedDeviceLogin(
            id: "upgrade", deviceCode: "dc_after_upgrade",
            status: DeviceAuthorizationStatus(
                userCode: "BCDF-GHJK", verificationURI: "https://auth.example.test/device",
                expiresAt: Date(timeIntervalSince1970: 2_000_000_000), interval: .seconds(5)))
        #expect(try await store.shareDeviceLogin(login, replacing: nil, for: .default))
        #expect(try await store.sharedDeviceLogin(for: .default) == login)
        #expect(try await store.claimDevicePolling("upgrade", for: .default) == .poll(interval: .seconds(5)))
        #expect(try await store.load(for: .default) as TokenRecord? == record, "sharing a device login leaves the tokens")
        await store.close()

        // Opening again migrates nothing more.
        let again = try await PostgresTokenStore.openRunning(configuration, password: app.password, key: key, logger: logger)
        #expect(try await again.sharedDeviceLogin(for: .default) == login)
        await again.close()
    }
}
