import AuthCore
import Logging

@testable import PostgresStore

extension PostgresTokenStore {
    /// Opens a store as ``open(_:password:key:logger:operationTimeout:replicaID:leaseTerms:)``
    /// does and runs its connections until its `close()`, which waits for them: a test has no
    /// service group to run them in.
    static func openRunning(
        _ configuration: PostgresStoreConfiguration, password: String?, key: TokenStoreKey, logger: Logger,
        operationTimeout: Duration = .seconds(5), replicaID: String? = nil, leaseTerms: LeaseRule.Terms = .init()
    ) async throws -> PostgresTokenStore {
        let store = try await open(
            configuration, password: password, key: key, logger: logger, operationTimeout: operationTimeout,
            replicaID: replicaID, leaseTerms: leaseTerms)
        Task { await store.run() }
        await store.untilRunning()
        return store
    }
}
