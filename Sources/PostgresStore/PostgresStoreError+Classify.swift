internal import NIOCore
internal import NIOSSL
internal import PostgresNIO

extension PostgresStoreError {
    /// What `error` (from postgres-nio or NIO) means for the store, with the field a person
    /// would fix. The server's own message is never copied (it can quote a value); the
    /// SQLSTATE is.
    static func classify(_ error: any Error, configuration c: PostgresStoreConfiguration, field: String = "store")
        -> PostgresStoreError
    {
        if let error = error as? PostgresStoreError { return error }
        if let transaction = error as? PostgresTransactionError,
            let inner = transaction.closureError ?? transaction.beginError ?? transaction.commitError
        {
            return classify(inner, configuration: c, field: field)
        }
        guard let psql = error as? PSQLError else {
            if error is NIOSSLError {
                return PostgresStoreError(.tlsFailed, field: "\(field).tlsMode", "TLS with \(c.host):\(c.port) failed")
            }
            return PostgresStoreError(
                .unreachable, field: "\(field).url", "cannot connect to \(c.host):\(c.port) (\(type(of: error)))")
        }
        switch psql.code {
        case .server:
            let state = psql.serverInfo?[.sqlState] ?? "?????"
            switch state {
            case "28P01", "28000":
                return PostgresStoreError(
                    .authenticationFailed, field: "\(field).passwordFile",
                    "PostgreSQL refused the role \(c.username) or its password (SQLSTATE \(state))")
            case "3D000":
                return PostgresStoreError(
                    .databaseMissing, field: "\(field).url", "the database \(c.database) does not exist (SQLSTATE \(state))")
            case "42501":
                return PostgresStoreError(
                    .permissionDenied, field: "\(field).table",
                    "the role \(c.username) lacks a right on \(c.table) or its schema (SQLSTATE \(state)); "
                        + "it needs CREATE on the schema the first time, then SELECT, INSERT, UPDATE on the tables")
            case "53300":
                return PostgresStoreError(.unavailable, field: "\(field).url", "too many connections (SQLSTATE \(state))")
            default:
                return PostgresStoreError(.unavailable, field: "\(field).url", "the server answered SQLSTATE \(state)")
            }
        case .authMechanismRequiresPassword:
            return PostgresStoreError(
                .authenticationFailed, field: "\(field).passwordFile",
                "PostgreSQL asks the role \(c.username) for a password: set \(field).passwordFile")
        case .unsupportedAuthMechanism, .saslError:
            return PostgresStoreError(
                .authenticationFailed, field: "\(field).passwordFile", "authentication as \(c.username) failed (\(psql.code))")
        case .sslUnsupported:
            return PostgresStoreError(
                .tlsFailed, field: "\(field).tlsMode", "the server at \(c.host):\(c.port) does not offer TLS (tlsMode is require)"
            )
        case .failedToAddSSLHandler, .receivedUnencryptedDataAfterSSLRequest:
            return PostgresStoreError(.tlsFailed, field: "\(field).tlsMode", "TLS with \(c.host):\(c.port) failed")
        case .connectionError:
            if psql.underlying is NIOSSLError {
                return PostgresStoreError(
                    .tlsFailed, field: "\(field).tlsMode", "TLS with \(c.host):\(c.port) failed (certificate or handshake)")
            }
            let what = psql.underlying.map { "\(type(of: $0))" } ?? "connection error"
            return PostgresStoreError(.unreachable, field: "\(field).url", "cannot connect to \(c.host):\(c.port) (\(what))")
        default:
            return PostgresStoreError(.unavailable, field: "\(field).url", "the connection failed (\(psql.code))")
        }
    }
}
