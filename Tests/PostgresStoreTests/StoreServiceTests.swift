import AuthCore
import Foundation
import Logging
import ServiceLifecycle
import Testing

@testable import PostgresStore

/// The store as a service: usable while a service group runs it, and its `run()` ends at
/// the group's graceful shutdown, or at `close()`, which waits for it.
@Suite(TestDatabase.required) struct StoreServiceTests {
    let logger = Logger(label: "test.store", factory: { _ in SwiftLogNoOpLogHandler() })

    func open() async throws -> PostgresTokenStore {
        let app = try TestDatabase.app()
        let c = try PostgresStoreConfiguration(url: app.storeURL, tlsMode: "disable", table: TestDatabase.uniqueTable())
        return try await PostgresTokenStore.open(c, password: app.password, key: TokenStoreKey.random(), logger: logger)
    }

    @Test func aGroupRunsTheStoreUntilItsGracefulShutdown() async throws {
        let store = try await open()
        let group = ServiceGroup(configuration: .init(services: [.init(service: store)], logger: logger))
        let running = Task { try await group.run() }
        let state = SessionState(isLoggedIn: true, subject: "alice")
        try await store.save(state, for: .default)
        #expect(try await store.load(for: .default) as SessionState? == state)
        await group.triggerGracefulShutdown()
        try await withThrowingTaskGroup(of: Bool.self) { bound in
            bound.addTask {
                try await running.value
                return true
            }
            bound.addTask {
                try await Task.sleep(for: .seconds(10))
                return false
            }
            let ended = try await bound.next() ?? false
            bound.cancelAll()
            if !ended { running.cancel() }
            #expect(ended, "the store's run ended at the graceful shutdown")
        }
        // Stopped for good: an operation fails as unavailable rather than waiting for ever.
        await #expect(throws: AuthError.self) { _ = try await store.load(for: .default) as SessionState? }
    }

    @Test func closeEndsTheRunAndWaitsForIt() async throws {
        let store = try await open()
        let ended = Task {
            await store.run()
            return ContinuousClock.now
        }
        try await store.save(SessionState(isLoggedIn: false), for: .default)
        await store.close()
        let closedAt = ContinuousClock.now
        #expect(await ended.value <= closedAt, "the run had ended when close() returned")
    }
}
