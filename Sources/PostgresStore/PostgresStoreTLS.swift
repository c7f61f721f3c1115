internal import NIOSSL
internal import PostgresNIO

/// The TLS settings of ``PostgresStoreConfiguration/TLSMode`` for postgres-nio's two
/// configuration types (the pool's and a single connection's).
struct PostgresStoreTLS: Sendable {
    let client: PostgresClient.Configuration.TLS
    let connection: PostgresConnection.Configuration.TLS

    init(_ mode: PostgresStoreConfiguration.TLSMode) throws {
        switch mode {
        case .disable:
            client = .disable
            connection = .disable
        case .prefer, .require:
            // Certificates are verified against the system's trust store in both modes.
            let tls = TLSConfiguration.makeClientConfiguration()
            let context: NIOSSLContext
            do {
                context = try NIOSSLContext(configuration: tls)
            } catch {
                throw PostgresStoreError(.tlsFailed, field: "store.tlsMode", "the TLS context could not be made")
            }
            client = mode == .require ? .require(tls) : .prefer(tls)
            connection = mode == .require ? .require(context) : .prefer(context)
        }
    }
}
