import AuthCore
import AuthGateTesting
import Foundation
import Testing

@testable import PostgresStore

/// A login on another replica while this one is logged in is a login here too, however soon
/// after the previous one it comes: a new session (its epoch, its `logged_in` event), not a
/// refresh of the old one.
@Suite(TestDatabase.required, .serialized) struct LoginElsewhereTests {
    @Test func aLoginOnAnotherReplicaWhileLoggedInHereBeginsANewSessionHere() async throws {
        let clock = TestClock()
        let server = FakeAuthorizationServer(clock: clock)
        let shared = SharedSessionTests()
        let table = TestDatabase.uniqueTable()
        let (a, storeA) = try await shared.replica(table: table, server: server, clock: clock)
        let (b, storeB) = try await shared.replica(table: table, server: server, clock: clock)
        for actor in [a, b] { try await actor.restore() }
        _ = try await a.login(.password(username: "alice", password: "wonderland"))
        try await b.synchronize()
        let before = await b.status
        #expect(before.isLoggedIn)
        let mark = b.events.lastEventID

        // Within the same second: the previous session's logout and the new login are read
        // back at once (notifications about one account are read once), as a pair replaced.
        let again = try await a.login(.password(username: "alice", password: "wonderland"))
        try await b.synchronize()
        #expect(try await b.token().value == again.value)
        let after = await b.status
        #expect(after.epoch > before.epoch, "a new session here")
        var loggedIn = 0
        for await record in b.events.subscribe(resumingAfter: mark) {
            if case .loggedIn = record.event { loggedIn += 1 }
            if record.id >= b.events.lastEventID { break }
        }
        #expect(loggedIn == 1, "announced as a login")
        // What was decided about the previous session no longer ends this one.
        try await b.logout(reason: .userInfoRejected(status: 401), ifEpoch: before.epoch)
        #expect(await b.status.isLoggedIn)
        // A refresh elsewhere stays a refresh here.
        clock.advance(by: .seconds(3600))
        let refreshed = try await a.token()
        let epoch = await b.status.epoch
        try await b.synchronize()
        #expect(try await b.token().value == refreshed.value)
        #expect(await b.status.epoch == epoch)
        for s in [storeA, storeB] { await s.close() }
    }

    @Test func aLoginElsewhereReadBetweenItsTokensAndItsStateIsALoginOnceItsStateIsRead() async throws {
        let clock = TestClock()
        let server = FakeAuthorizationServer(clock: clock)
        let shared = SharedSessionTests()
        let table = TestDatabase.uniqueTable()
        let (a, storeA) = try await shared.replica(table: table, server: server, clock: clock)
        let (b, storeB) = try await shared.replica(table: table, server: server, clock: clock)
        for actor in [a, b] { try await actor.restore() }
        _ = try await a.login(.password(username: "alice", password: "wonderland"))
        try await b.synchronize()
        let before = await b.status

        // Another replica's login, written as a login writes: the tokens, then the state.
        let record = TokenRecord(
            accessToken: "at-elsewhere", refreshToken: "rt-elsewhere", scope: "api",
            expiresAt: clock.wallNow.addingTimeInterval(3600), issuedAt: clock.wallNow, generation: TokenGeneration(1),
            grantType: "password")
        try await storeA.save(record, for: .default)
        try await b.synchronize()
        #expect(try await b.token().value == "at-elsewhere")
        #expect(await b.status.epoch == before.epoch, "a refresh, as far as the row tells yet")
        try await storeA.save(
            SessionState(isLoggedIn: true, subject: "alice", lastLogin: before.lastLogin, loginID: "elsewhere"),
            for: .default)
        try await b.synchronize()
        #expect(await b.status.epoch > before.epoch, "a login, once its state is read")
        try await b.synchronize()
        #expect(await b.status.epoch == before.epoch + 1, "and only once")
        for s in [storeA, storeB] { await s.close() }
    }
}
