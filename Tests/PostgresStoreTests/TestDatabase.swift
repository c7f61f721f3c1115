import Foundation
import Logging
import PostgresNIO
import Testing

/// The PostgreSQL server `scripts/with-postgres` started for this run, read from its
/// environment. Tests that need it carry ``TestDatabase/required``: without the server they
/// are skipped, and the skip says why.
struct TestDatabase {
    /// `AUTHGATE_TEST_POSTGRES_URL` (the application role) and `…_ADMIN_URL` (the superuser).
    static let url = ProcessInfo.processInfo.environment["AUTHGATE_TEST_POSTGRES_URL"]
    static let adminURL = ProcessInfo.processInfo.environment["AUTHGATE_TEST_POSTGRES_ADMIN_URL"]

    /// The trait of every test that needs the server.
    static let required: ConditionTrait = .enabled(
        if: url != nil && adminURL != nil,
        "needs PostgreSQL: run under scripts/with-postgres (make postgres does)")

    /// The parts of a `postgres://user:password@host:port/db` URL.
    struct Parts {
        var host: String
        var port: Int
        var user: String
        var password: String?
        var database: String

        init(_ url: String) throws {
            let c = try #require(URLComponents(string: url))
            host = try #require(c.host)
            port = c.port ?? 5432
            user = try #require(c.user)
            password = c.password
            database = String(c.path.dropFirst())
        }

        /// The URL the store accepts (no password).
        var storeURL: String { "postgres://\(user)@\(host):\(port)/\(database)" }
    }

    static func app() throws -> Parts { try Parts(try #require(url)) }
    static func admin() throws -> Parts { try Parts(try #require(adminURL)) }

    /// A table name no other test uses.
    static func uniqueTable() -> String {
        "t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
    }

    /// Runs `body` on a connection as `parts` (to `database` when given).
    static func withConnection<R>(
        _ parts: Parts, database: String? = nil, _ body: (PostgresConnection) async throws -> R
    ) async throws -> R {
        let configuration = PostgresConnection.Configuration(
            host: parts.host, port: parts.port, username: parts.user, password: parts.password,
            database: database ?? parts.database, tls: .disable)
        let connection = try await PostgresConnection.connect(
            configuration: configuration, id: 1, logger: Logger(label: "test.postgres"))
        do {
            let result = try await body(connection)
            try await connection.close()
            return result
        } catch {
            try? await connection.close()
            throw error
        }
    }

    /// Runs SQL as the superuser in the application's database.
    static func adminExecute(_ sql: String) async throws {
        let app = try app()
        _ = try await withConnection(try admin(), database: app.database) { c in
            try await c.query(PostgresQuery(unsafeSQL: sql), logger: Logger(label: "test.postgres"))
        }
    }

    /// Every row of `table`, each as the text PostgreSQL gives for the whole row.
    static func rawRows(_ table: String) async throws -> [String] {
        let app = try app()
        return try await withConnection(try admin(), database: app.database) { c in
            let rows = try await c.query(
                PostgresQuery(unsafeSQL: "SELECT row_to_json(t)::text FROM \(table) t"), logger: Logger(label: "test.postgres"))
            var out: [String] = []
            for try await (text) in rows.decode(String.self) { out.append(text) }
            return out
        }
    }
}
