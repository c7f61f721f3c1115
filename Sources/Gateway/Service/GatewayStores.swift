public import AuthCore
import Foundation
public import Logging
import PostgresStore

/// The token store and session state store every session of a gateway shares, opened from
/// the configuration's `store`: the encrypted files of `stateDirectory` (the default) or one
/// PostgreSQL table that replicas share.
///
/// A PostgreSQL store that cannot be used at start (unreachable, refused password, missing
/// database or rights, a schema newer than this build) is a ``GatewayError`` naming
/// the field (`store.url`, `store.passwordFile`, `store.table`, `store.tlsMode`): `serve`
/// exits 78 on it.
public struct GatewayStores: Sendable {
    /// `file` or `postgres`.
    public let kind: String
    /// Where tokens go.
    public let tokens: any TokenStore
    /// Where the session state goes.
    public let states: any SessionStateStore
    /// Who may refresh when replicas share the store (`nil`: this process alone).
    public let coordinator: (any RefreshCoordinator)?
    /// Whether the store can take a write now (for `/readyz`).
    public let isWritable: @Sendable () -> Bool
    /// Free bytes where the store writes, when that means anything (files only).
    public let freeBytes: @Sendable () -> Int?
    /// Releases connections (at shutdown, after the sessions' last writes).
    public let close: @Sendable () async -> Void
    /// Starts keeping the sessions in line with what other replicas write (postgres only;
    /// it stops at ``close``).
    public let follow: @Sendable ([AccountID: AuthActor]) -> Void
    /// This replica's name in the shared store's lease column (postgres only).
    public let replica: String?
    /// The replica refreshing an account now and how long its lease still runs (postgres
    /// only; nil when no refresh is in flight). Throws when the database does not answer.
    public let leaseHolder: @Sendable (AccountID) async throws -> (owner: String, remaining: Duration)?

    /// Opens the stores `c` names, sealing with `key`. A PostgreSQL store's connections run
    /// in `runner` (the gateway's service group) from the moment it is open; without one,
    /// in a task of their own until ``close``.
    public static func open(
        _ c: GatewayConfiguration, key: TokenStoreKey, logger: Logger, runner: BackgroundRunner? = nil
    ) async throws -> GatewayStores {
        guard let store = c.store, store.isPostgres else {
            try StateDirectory.prepare(c.stateDirectory)
            if let keyFile = c.keyFile { try StateDirectory.checkKeyFile(keyFile) }
            let directory = c.stateDirectory
            return GatewayStores(
                kind: "file", tokens: try EncryptedFileTokenStore(directory: directory, key: key),
                states: try FileSessionStateStore(directory: directory), coordinator: nil,
                isWritable: { access(directory, W_OK) == 0 },
                freeBytes: { StateDirectory.freeBytes(directory) }, close: {}, follow: { _ in }, replica: nil,
                leaseHolder: { _ in nil })
        }
        let password = try store.passwordFile.map { try SecretSources.readFile($0, field: "store.passwordFile") }
        let postgres: PostgresTokenStore
        do {
            let settings = try PostgresStoreConfiguration(url: store.url ?? "", tlsMode: store.tlsMode, table: store.table)
            let lease = store.leaseTerm
            postgres = try await PostgresTokenStore.open(
                settings, password: password, key: key, logger: logger,
                leaseTerms: LeaseRule.Terms(term: lease.term, maximumWait: lease.maximumWait))
        } catch let error as PostgresStoreError {
            throw GatewayError(.storeUnavailable, field: error.field ?? "store", "\(error)", underlying: error)
        }
        // Before any operation: until the store runs, its operations wait.
        let running: Task<Void, Never>?
        if let runner {
            runner.run(postgres)
            running = nil
        } else {
            running = Task { await postgres.run() }
        }
        await postgres.untilRunning()
        return GatewayStores(
            kind: "postgres", tokens: postgres, states: postgres, coordinator: postgres, isWritable: { postgres.isReachable },
            freeBytes: { nil },
            close: {
                // Ends the store's run too, wherever it runs.
                await postgres.close()
                await running?.value
            },
            follow: { sessions in postgres.follow(sessions) },
            replica: postgres.replicaID,
            leaseHolder: { account in
                try await postgres.leaseHolder(for: account).map { (owner: $0.owner, remaining: $0.remaining) }
            })
    }
}
