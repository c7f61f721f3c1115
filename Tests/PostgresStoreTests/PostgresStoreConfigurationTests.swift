import Testing

@testable import PostgresStore

/// The `store` settings are refused before any connection, each naming its field.
struct PostgresStoreConfigurationTests {
    @Test func aFullURLIsReadIntoItsParts() throws {
        let c = try PostgresStoreConfiguration(url: "postgres://gate@db.internal:6543/tokens", tlsMode: "disable", table: "ag_1")
        #expect(c.host == "db.internal")
        #expect(c.port == 6543)
        #expect(c.username == "gate")
        #expect(c.database == "tokens")
        #expect(c.tlsMode == .disable)
        #expect(c.table == "ag_1")
    }

    @Test func defaultsAreTLSRequiredPort5432AndTheDefaultTable() throws {
        let c = try PostgresStoreConfiguration(url: "postgresql://gate@[::1]/tokens")
        #expect(c.host == "::1")
        #expect(c.port == 5432)
        #expect(c.tlsMode == .require)
        #expect(c.table == PostgresStoreConfiguration.defaultTable)
    }

    @Test(
        arguments: [
            ("mysql://gate@db/tokens", nil, nil, "store.url: must be a postgres:// URL"),
            ("not a url", nil, nil, "store.url: must be a postgres:// URL"),
            ("postgres://gate:hunter2@db/tokens", nil, nil, "store.url: must not hold a password"),
            ("postgres://gate@db/tokens?sslmode=require", nil, nil, "store.url: must have no query"),
            ("postgres://db/tokens", nil, nil, "store.url: must name a user"),
            ("postgres://gate@db/", nil, nil, "store.url: must name one database"),
            ("postgres://gate@db/a/b", nil, nil, "store.url: must name one database"),
            ("postgres://gate@db/tokens", "verify-full", nil, "store.tlsMode: must be disable, prefer or require"),
            ("postgres://gate@db/tokens", nil, "Sessions", "store.table: must be 1–48"),
            ("postgres://gate@db/tokens", nil, "x; DROP TABLE y", "store.table: must be 1–48"),
            ("postgres://gate@db/tokens", nil, "9lives", "store.table: must be 1–48"),
            ("postgres://gate@db/tokens", nil, String(repeating: "a", count: 49), "store.table: must be 1–48"),
        ] as [(String, String?, String?, String)])
    func aBadSettingIsRefusedNamingItsField(url: String, tlsMode: String?, table: String?, expected: String) {
        do {
            _ = try PostgresStoreConfiguration(url: url, tlsMode: tlsMode, table: table)
            Issue.record("accepted \(url)")
        } catch let error as PostgresStoreError {
            #expect(error.code == .invalidConfiguration)
            #expect(error.description.hasPrefix(expected), "\(error)")
            #expect(!error.description.contains("hunter2"))
        } catch {
            Issue.record("unexpected \(error)")
        }
    }
}
