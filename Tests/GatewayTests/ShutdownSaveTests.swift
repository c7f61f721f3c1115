import AuthCore
import AuthGateTesting
import Foundation
import Locking
import TestSupport
import Testing

@testable import Gateway

/// Shutdown's cap does not cut off a refresh whose answer has arrived: the server has
/// already rotated the pair and spent the previous refresh token, so the new pair is saved,
/// and the stores close only after.
@Suite struct ShutdownSaveTests {
    @Test func aRefreshBeingSavedWhenShutdownsCapExpiresIsSavedBeforeTheStoresClose() async throws {
        try await Stack.run { stack in
            let held = HeldTokenSaves()
            let service = try await stack.startGateway(adaptStores: StoreAdapter { held.wrap($0) })
            #expect(try await stack.loginAlice().status == 200)
            let account = try #require(service.sessions.values.first?.actor.account)
            let before = try #require(try await held.inner?.load(for: account)?.refreshToken)

            held.hold()
            let refresh = Task { try? await stack.admin("POST", "/auth/refresh") }
            // The token endpoint has answered; the save of the new pair is under way.
            #expect(await eventually { held.waiting })

            // The save is released a second after the cap; on a machine as loaded as a
            // sanitizer run's, that second can stretch past the 10 s a healthy store gets.
            let stopping = Task { await service.shutdown(grace: .seconds(1), issuedTokensSaveLimit: .seconds(120)) }
            // Past the cap (grace + 3 s): shutdown has given up on the background work.
            #expect(await eventually { stack.logs.all.contains("work still running at shutdown") })
            try await Task.sleep(for: .seconds(1))
            held.release()
            await stopping.value
            _ = await refresh.value
            stack.gateway.withLock { $0 = nil }

            #expect(!held.failedByClose, "the stores closed while the rotated pair was being saved")
            let after = try await held.inner?.load(for: account)?.refreshToken
            #expect(after != nil && after != before, "the rotated pair was not saved")
        }
    }
}

/// Wraps a gateway's token store so that saves can be held, as a shared store's write waits
/// on a slow database; closing the stores fails a held save, as closing a database client
/// fails the query it has in flight.
final class HeldTokenSaves: Sendable {
    private struct State {
        var inner: (any TokenStore)?
        var holding = false
        var waiting = false
        var closed = false
        var failedByClose = false
    }
    private let state = Locked(State())

    var inner: (any TokenStore)? { state.withLock { $0.inner } }
    var waiting: Bool { state.withLock { $0.waiting } }
    var failedByClose: Bool { state.withLock { $0.failedByClose } }
    func hold() { state.withLock { $0.holding = true } }
    func release() { state.withLock { $0.holding = false } }

    func wrap(_ stores: GatewayStores) -> GatewayStores {
        state.withLock { $0.inner = stores.tokens }
        return GatewayStores(
            kind: stores.kind, tokens: Store(owner: self, inner: stores.tokens), states: stores.states,
            coordinator: stores.coordinator, isWritable: stores.isWritable, freeBytes: stores.freeBytes,
            close: {
                self.state.withLock { $0.closed = true }
                await stores.close()
            },
            follow: stores.follow, replica: stores.replica, leaseHolder: stores.leaseHolder)
    }

    /// Waits while saves are held; false when the stores closed meanwhile.
    fileprivate func waitWhileHeld() async -> Bool {
        guard state.withLock({ $0.holding }) else { return true }
        state.withLock { $0.waiting = true }
        defer { state.withLock { $0.waiting = false } }
        while true {
            let (holding, closed) = state.withLock { ($0.holding, $0.closed) }
            if closed {
                state.withLock { $0.failedByClose = true }
                return false
            }
            if !holding { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    private struct Store: TokenStore {
        let owner: HeldTokenSaves
        let inner: any TokenStore

        func save(_ record: TokenRecord, for account: AccountID) async throws {
            guard await owner.waitWhileHeld() else { throw AuthError.store(.unavailable, message: "the store closed") }
            try await inner.save(record, for: account)
        }
        func load(for account: AccountID) async throws -> TokenRecord? { try await inner.load(for: account) }
        func delete(for account: AccountID) async throws { try await inner.delete(for: account) }
    }
}
