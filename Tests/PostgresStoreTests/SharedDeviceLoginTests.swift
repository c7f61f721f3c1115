import AuthCore
import AuthGateTesting
import Foundation
import Testing

@testable import PostgresStore

/// Device logins (RFC 8628) on replicas sharing one session: each replica's waiting login
/// is its own (its device code never leaves it), and a login on any replica ends the ones
/// waiting on the others, as a login on the same replica does: their approval could only
/// replace the session everyone now serves.
@Suite(TestDatabase.required) struct SharedDeviceLoginTests {
    @Test func aLoginOnAnotherReplicaEndsTheDeviceLoginWaitingHere() async throws {
        let clock = TestClock()
        var configuration = FakeAuthorizationServer.Configuration()
        configuration.deviceCodeLifetime = .seconds(600)
        configuration.deviceInterval = .seconds(5)
        let server = FakeAuthorizationServer(configuration: configuration, clock: clock)
        let client = OAuth2Client.Configuration(
            tokenEndpoint: SharedSessionTests.tokenEndpoint, clientID: "authgate", clientSecret: "s3cret",
            deviceAuthorizationEndpoint: "https://auth.example.test/oauth/device_authorization")
        let shared = SharedSessionTests()
        let table = TestDatabase.uniqueTable()
        let (a, storeA) = try await shared.replica(table: table, server: server, clock: clock, client: client)
        let (b, storeB) = try await shared.replica(table: table, server: server, clock: clock, client: client)
        for actor in [a, b] { try await actor.restore() }
        let followers = [(storeA, a), (storeB, b)].map { store, actor in Task { await store.follow([.default: actor]) } }

        // Both replicas wait for a person, as `autoLogin: device` makes each do at start.
        let waitingA = try await a.startDeviceLogin()
        let waitingB = try await b.startDeviceLogin()
        #expect(waitingA.userCode != waitingB.userCode)
        let mark = b.events.lastEventID
        #expect(await server.approveDevice(userCode: waitingA.userCode))
        #expect(await eventually { clock.sleeperCount == 2 }, "both replicas poll")
        clock.advance(by: .seconds(5))
        #expect(await eventually { await a.status.isLoggedIn })
        #expect(await eventually { await b.status.isLoggedIn }, "the login reaches the other replica")
        #expect(await b.status.deviceAuthorization == nil, "and ends the device login waiting there")
        #expect(await eventually { clock.sleeperCount == 0 }, "no replica polls any more")
        var ends: [DeviceLoginEnd] = []
        for await record in b.events.subscribe(resumingAfter: mark) {
            if case .deviceLoginEnded(let end) = record.event { ends.append(end) }
            if record.id >= b.events.lastEventID { break }
        }
        #expect(ends == [.replaced])

        // Approving the other code now logs nobody in again: the session stays the one both serve.
        let token = try await a.token()
        #expect(await server.approveDevice(userCode: waitingB.userCode))
        clock.advance(by: .seconds(30))
        #expect(try await b.token().value == token.value)
        #expect(await server.statistics.grants[Grant.deviceCodeType] == 1)
        for s in [storeA, storeB] { await s.close() }
        for f in followers { await f.value }
    }
}
