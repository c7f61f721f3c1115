internal import AuthCore
internal import PostgresNIO

extension PostgresTokenStore {
    /// Runs `body` against the pool within ``operationTimeout``; any failure becomes an
    /// ``AuthCore/AuthError`` of the store domain (`unavailable`) naming the SQLSTATE or the
    /// connection failure, never a value.
    func run<Result: Sendable>(
        _ account: AccountID, _ store: AuthError.Store,
        _ body: @escaping @Sendable (PostgresClient, String) async throws -> Result
    ) async throws -> Result {
        let client = self.client
        let table = self.table
        let timeout = operationTimeout
        do {
            return try await withThrowingTaskGroup(of: Result?.self) { group in
                group.addTask { try await body(client, table) }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    return nil
                }
                defer { group.cancelAll() }
                guard let first = try await group.next(), let result = first else {
                    throw AuthError.store(
                        .unavailable, store, account: account, message: "PostgreSQL did not answer within \(timeout)")
                }
                recordReachable(true)
                return result
            }
        } catch let error as AuthError {
            recordReachable(false)
            logger.info("token store operation failed", metadata: ["store.error": "\(error)"])
            throw error
        } catch {
            recordReachable(false)
            let reason = PostgresStoreError.classify(error, configuration: configuration)
            logger.info("token store operation failed", metadata: ["store.error": "\(reason.code)"])
            throw AuthError.store(.unavailable, store, account: account, message: "PostgreSQL: \(reason.message)")
        }
    }
}
