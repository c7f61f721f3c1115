internal import Foundation

/// Where the PostgreSQL token store lives and how to reach it, checked before any connection.
///
/// Built from the `store` section of the configuration: `url` (without a password: that comes
/// from `passwordFile`), `tlsMode` and `table`. Every refusal is a ``PostgresStoreError``
/// naming the field.
///
/// ```swift
/// let c = try PostgresStoreConfiguration(url: "postgres://authgate@db:5432/authgate", tlsMode: "require")
/// ```
public struct PostgresStoreConfiguration: Sendable, Equatable {
    /// How the connection is protected.
    public enum TLSMode: String, Sendable, CaseIterable {
        /// Plain TCP (a loopback or Unix-socket-like private network only).
        case disable
        /// TLS when the server offers it, plain otherwise.
        case prefer
        /// TLS with the server's certificate verified against the system's trust store.
        case require
    }

    /// The server's host name or address.
    public var host: String
    /// The server's port (default 5432).
    public var port: Int
    /// The role to connect as.
    public var username: String
    /// The database.
    public var database: String
    /// How the connection is protected (default `require`).
    public var tlsMode: TLSMode
    /// The table holding one row per account (default `authgate_sessions`); its schema
    /// version lives in `<table>_schema`.
    public var table: String

    /// The default table name.
    public static let defaultTable = "authgate_sessions"

    /// Parses and checks the settings; `field` prefixes every error (`store`).
    ///
    /// The URL is `postgres://USER@HOST[:PORT]/DATABASE` (or `postgresql://`): no password
    /// (secrets are never inline), no query (TLS is `tlsMode`), no fragment.
    public init(url: String, tlsMode: String? = nil, table: String? = nil, field: String = "store") throws {
        guard let components = URLComponents(string: url),
            let scheme = components.scheme?.lowercased(), scheme == "postgres" || scheme == "postgresql"
        else {
            throw PostgresStoreError(.invalidConfiguration, field: "\(field).url", "must be a postgres:// URL")
        }
        if components.password != nil {
            throw PostgresStoreError(
                .invalidConfiguration, field: "\(field).url", "must not hold a password: put it in \(field).passwordFile")
        }
        if components.query != nil || components.fragment != nil {
            throw PostgresStoreError(
                .invalidConfiguration, field: "\(field).url", "must have no query or fragment (TLS is \(field).tlsMode)")
        }
        guard let host = components.host, !host.isEmpty else {
            throw PostgresStoreError(.invalidConfiguration, field: "\(field).url", "must name a host")
        }
        guard let user = components.user, !user.isEmpty else {
            throw PostgresStoreError(
                .invalidConfiguration, field: "\(field).url", "must name a user (postgres://USER@HOST/DATABASE)")
        }
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        guard !path.isEmpty, !path.contains("/") else {
            throw PostgresStoreError(
                .invalidConfiguration, field: "\(field).url", "must name one database (postgres://USER@HOST/DATABASE)")
        }
        if let port = components.port, !(1...65_535).contains(port) {
            throw PostgresStoreError(.invalidConfiguration, field: "\(field).url", "port must be 1…65535")
        }
        let mode: TLSMode
        if let tlsMode {
            guard let m = TLSMode(rawValue: tlsMode) else {
                throw PostgresStoreError(.invalidConfiguration, field: "\(field).tlsMode", "must be disable, prefer or require")
            }
            mode = m
        } else {
            mode = .require
        }
        let table = table ?? Self.defaultTable
        guard Self.isValidTableName(table) else {
            throw PostgresStoreError(
                .invalidConfiguration, field: "\(field).table",
                "must be 1–48 lower-case letters, digits or _, starting with a letter or _")
        }
        self.host = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        self.port = components.port ?? 5432
        self.username = user
        self.database = path
        self.tlsMode = mode
        self.table = table
    }

    /// Whether `name` may name the table: it is spliced into SQL, so only a plain identifier.
    public static func isValidTableName(_ name: String) -> Bool {
        guard let first = name.utf8.first, name.utf8.count <= 48 else { return false }
        guard first == UInt8(ascii: "_") || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first) else { return false }
        return name.utf8.allSatisfy {
            $0 == UInt8(ascii: "_") || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
        }
    }
}
