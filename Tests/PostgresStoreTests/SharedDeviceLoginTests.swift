import AuthCore
import AuthGateTesting
import Foundation
import Logging
import TestSupport
import Testing

@testable import PostgresStore

/// Device logins (RFC 8628) on replicas sharing one session: one device login per session,
/// whichever replica started it. Every replica shows its user code, exactly one polls the
/// token endpoint at a time (a polling lease in the row), another takes over when that one
/// dies, and its device code is kept sealed in the row. The fake authorization server
/// answers as RFC 8628 says: `authorization_pending` until someone decides, `slow_down` for
/// a poll sooner than the interval after the previous one (whoever sent it).
@Suite(TestDatabase.required, .serialized) struct SharedDeviceLoginTests {
    static let interval = Duration.seconds(5)
    /// The polling lease's term: short, so that a takeover comes within seconds.
    static let leaseTerms = LeaseRule.Terms(term: .seconds(1), maximumWait: .seconds(5))

    let key = TokenStoreKey.random()
    let clock = TestClock()
    let server: FakeAuthorizationServer
    let table = TestDatabase.uniqueTable()

    init() {
        var configuration = FakeAuthorizationServer.Configuration()
        configuration.deviceCodeLifetime = .seconds(600)
        configuration.deviceInterval = Self.interval
        server = FakeAuthorizationServer(configuration: configuration, clock: clock)
    }

    /// A replica: its own pool on the shared table, its actor, and the task that follows
    /// the other replicas' changes.
    struct Replica {
        let actor: AuthActor
        let store: PostgresTokenStore

        /// Stops it as a process that dies would: its connections close, its leases lapse.
        func kill() async {
            await store.close()
            await actor.cancelDeviceLogin()
        }
    }

    func replica(_ name: String) async throws -> Replica {
        let app = try TestDatabase.app()
        let store = try await PostgresTokenStore.openRunning(
            try PostgresStoreConfiguration(url: app.storeURL, tlsMode: "disable", table: table), password: app.password,
            key: key, logger: Logger(label: "test.store"), replicaID: name, leaseTerms: Self.leaseTerms)
        let client = OAuth2Client.Configuration(
            tokenEndpoint: SharedSessionTests.tokenEndpoint, clientID: "authgate", clientSecret: "s3cret",
            deviceAuthorizationEndpoint: "https://auth.example.test/oauth/device_authorization")
        let actor = AuthActor(
            client: OAuth2Client(configuration: client, transport: server, clock: clock), tokenStore: store, stateStore: store,
            clock: clock, configuration: .init(skew: .seconds(30), jitter: .zero),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), refreshCoordinator: store)
        try await actor.restore()
        store.follow([.default: actor])
        return Replica(actor: actor, store: store)
    }

    /// The device login ends `actor` published after `mark`.
    func ends(_ actor: AuthActor, after mark: UInt64) async -> [DeviceLoginEnd] {
        var ends: [DeviceLoginEnd] = []
        guard actor.events.lastEventID > mark else { return ends }
        for await record in actor.events.subscribe(resumingAfter: mark) {
            if case .deviceLoginEnded(let end) = record.event { ends.append(end) }
            if record.id >= actor.events.lastEventID { break }
        }
        return ends
    }

    /// Moves the clock on by one interval once every replica's polling task sleeps on it,
    /// and waits for the polls that follows to be answered.
    func tick(sleepers: Int) async -> Bool {
        guard await eventually(timeout: .seconds(15), { clock.sleeperCount >= sleepers }) else { return false }
        clock.advance(by: Self.interval)
        return true
    }

    @Test func aReplicaStartingADeviceLoginShowsTheOneAnotherStarted() async throws {
        let a = try await replica("a")
        let b = try await replica("b")
        let started = try await a.actor.startDeviceLogin(scope: "read")
        let joined = try await b.actor.startDeviceLogin()
        #expect(joined == started, "the same user code, verification URI and expiry")
        #expect(await b.actor.status.deviceAuthorization?.userCode == started.userCode)
        #expect(await server.statistics.deviceAuthorizations == 1, "no second code asked for")
        let deviceCode = try #require(await server.issuedSecrets.deviceCodes.first)
        let rows = try await TestDatabase.rawRows(table).joined()
        #expect(rows.contains("device_sealed") && !rows.contains(deviceCode), "the device code is sealed")
        #expect(!rows.contains(started.userCode), "and so is the user code")
        for r in [a, b] {
            await r.actor.cancelDeviceLogin()
            await r.kill()
        }
    }

    /// Each replica reads no login; one claims the start and asks for codes, the others
    /// wait for them and adopt them.
    /// A replica that could not start a device login (its device endpoint failed) gives
    /// its claim up at once: another replica asks now, not after the claim's term.
    /// A device authorization endpoint slower than the claim's term: the claim is renewed
    /// while the codes are asked for, so no other replica asks for codes of its own, and it
    /// ends when the codes are shared.
    @Test func aClaimToStartOutlivesItsTermWhileTheCodesAreAskedFor() async throws {
        let a = try await replica("a")
        let b = try await replica("b")
        #expect(try await a.store.claimDeviceStart(replacing: nil, for: .default) == .start)
        // Three terms; without renewal the claim would have lapsed two terms ago.
        try await Task.sleep(for: Self.leaseTerms.term * 3)
        guard case .wait = try await b.store.claimDeviceStart(replacing: nil, for: .default) else {
            Issue.record("b claimed the start while a still asked for codes")
            for r in [a, b] { await r.kill() }
            return
        }
        #expect(await startingOwner() == "a")
        let login = SharedDeviceLogin(
            id: "slow", deviceCode: "dc_slow",
            status: DeviceAuthorizationStatus(
                userCode: "BCDF-GHJK", verificationURI: "https://auth.example.test/device",
                expiresAt: Date().addingTimeInterval(600), interval: Self.interval))
        #expect(try await a.store.shareDeviceLogin(login, replacing: nil, for: .default))
        #expect(await startingOwner() == nil, "sharing the codes ends the claim")
        try await Task.sleep(for: Self.leaseTerms.term)
        #expect(await startingOwner() == nil, "and it is not renewed after")
        for r in [a, b] { await r.kill() }
    }

    @Test func aClaimToStartThatIsGivenUpLetsAnotherReplicaStartAtOnce() async throws {
        let a = try await replica("a")
        let b = try await replica("b")
        #expect(try await a.store.claimDeviceStart(replacing: nil, for: .default) == .start)
        #expect(await startingOwner() == "a")
        guard case .wait = try await b.store.claimDeviceStart(replacing: nil, for: .default) else {
            Issue.record("b claimed a start a holds")
            return
        }
        await a.store.releaseDeviceStart(for: .default)
        #expect(await startingOwner() == nil)
        #expect(try await b.store.claimDeviceStart(replacing: nil, for: .default) == .start)
        // Only the holder's claim is given up.
        await a.store.releaseDeviceStart(for: .default)
        #expect(await startingOwner() == "b")
        for r in [a, b] { await r.kill() }
    }

    @Test func replicasStartingTogetherShowOneUserCode() async throws {
        let replicas = [try await replica("a"), try await replica("b"), try await replica("c")]
        let shown = try await withThrowingTaskGroup(of: DeviceAuthorizationStatus.self) { group in
            for r in replicas { group.addTask { try await r.actor.startDeviceLogin() } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(shown.map(\.userCode)).count == 1, "whoever shared first, everyone shows that one")
        #expect(await server.statistics.deviceAuthorizations == 1, "one replica asked")
        #expect(await server.pendingUserCodes.contains(shown[0].userCode))
        for r in replicas { #expect(await r.actor.status.deviceAuthorization?.userCode == shown[0].userCode) }
        for r in replicas {
            await r.actor.cancelDeviceLogin()
            await r.kill()
        }
    }

    /// Replicas "a" and "b" showing one device login, after its first poll: whoever polled
    /// holds the polling lease (`poller`).
    func twoReplicasAfterTheFirstPoll() async throws -> (
        a: Replica, b: Replica, status: DeviceAuthorizationStatus, poller: String
    ) {
        let a = try await replica("a")
        let b = try await replica("b")
        let status = try await a.actor.startDeviceLogin()
        #expect(try await b.actor.startDeviceLogin() == status)
        #expect(await tick(sleepers: 2))
        #expect(await eventually(timeout: .seconds(15)) { await server.statistics.devicePolls == 1 })
        return (a, b, status, try #require(await pollingOwner()))
    }

    @Test func exactlyOneReplicaPollsAtTheIntervalAndTheApprovalLogsEveryReplicaIn() async throws {
        let replicas = [try await replica("a"), try await replica("b"), try await replica("c")]
        let status = try await replicas[0].actor.startDeviceLogin()
        for r in replicas.dropFirst() { #expect(try await r.actor.startDeviceLogin() == status) }
        let marks = replicas.map { $0.actor.events.lastEventID }
        for round in 1...4 {
            #expect(await tick(sleepers: 3), "every replica waits on the clock (round \(round))")
            #expect(await eventually(timeout: .seconds(15)) { await server.statistics.devicePolls == round })
        }
        #expect(await server.statistics.devicePolls == 4, "one poll per interval, whichever replica sent it")
        #expect(await server.statistics.slowDowns == 0, "no poll sooner than the interval")
        #expect(await server.approveDevice(userCode: status.userCode))
        #expect(await tick(sleepers: 3))
        for r in replicas { #expect(await eventually(timeout: .seconds(15)) { await r.actor.status.isLoggedIn }) }
        for r in replicas {
            #expect(await eventually(timeout: .seconds(15)) { await r.actor.status.deviceAuthorization == nil })
        }
        #expect(await server.statistics.grants[Grant.deviceCodeType] == 1)
        for (r, mark) in zip(replicas, marks) {
            #expect(await ends(r.actor, after: mark) == [], "approved: no device login ended")
        }
        let token = try await replicas[0].actor.token()
        for r in replicas.dropFirst() { #expect(try await r.actor.token().value == token.value) }
        for r in replicas { await r.kill() }
    }

    @Test func anotherReplicaTakesOverPollingWhenThePollerDies() async throws {
        let (a, b, status, poller) = try await twoReplicasAfterTheFirstPoll()
        let (dead, survivor) = poller == "a" ? (a, b) : (b, a)
        await dead.kill()
        // The survivor takes over once the lease lapses (a term), and polls on at the interval.
        var polls = 1
        for _ in 0..<20 where polls < 3 {
            guard await tick(sleepers: 1) else { break }
            _ = await eventually(timeout: .seconds(3)) { await server.statistics.devicePolls > polls }
            polls = await server.statistics.devicePolls
        }
        #expect(polls >= 3, "the survivor polls the same device code")
        #expect(await pollingOwner() == (poller == "a" ? "b" : "a"))
        #expect(await server.statistics.slowDowns == 0)
        #expect(await server.statistics.deviceAuthorizations == 1)
        #expect(await server.approveDevice(userCode: status.userCode))
        for _ in 0..<10 {
            if await survivor.actor.status.isLoggedIn { break }
            guard await tick(sleepers: 1) else { break }
            _ = await eventually(timeout: .seconds(3)) { await survivor.actor.status.isLoggedIn }
        }
        #expect(await survivor.actor.status.isLoggedIn, "the approval reaches the survivor's polls")
        await survivor.kill()
    }

    @Test func aTakeoverPollsNoSoonerThanTheIntervalAfterTheLastPoll() async throws {
        let (a, b, _, poller) = try await twoReplicasAfterTheFirstPoll()
        let (dead, survivor) = poller == "a" ? (a, b) : (b, a)
        // Both sleep until the next interval (the survivor after its wait for the lease).
        #expect(await eventually(timeout: .seconds(15)) { clock.sleeperCount >= 2 })
        await dead.kill()
        try await Task.sleep(for: .milliseconds(1_500))  // the lease lapses (a term)
        // The last poll comes as the survivor wakes: the replica that died polled just
        // before; the survivor takes the lapsed lease over at once.
        clock.advance(by: Self.interval)
        let code = try #require(await server.issuedSecrets.deviceCodes.first)
        let client = OAuth2Client(
            configuration: .init(tokenEndpoint: SharedSessionTests.tokenEndpoint, clientID: "authgate", clientSecret: "s3cret"),
            transport: server, clock: clock)
        _ = try? await client.requestToken(.deviceCode(code))
        #expect(await eventually(timeout: .seconds(15)) { await pollingOwner() == (poller == "a" ? "b" : "a") })
        var polls = await server.statistics.devicePolls
        for _ in 0..<4 where polls < 3 {
            guard await tick(sleepers: 1) else { break }
            _ = await eventually(timeout: .seconds(3)) { await server.statistics.devicePolls > polls }
            polls = await server.statistics.devicePolls
        }
        #expect(polls >= 3, "the survivor polls on")
        #expect(await server.statistics.slowDowns == 0, "no poll sooner than the interval after the last")
        await survivor.kill()
    }

    @Test func thePollerRenewsItsLeaseWhileItWaitsForTheNextPoll() async throws {
        let (a, b, _, poller) = try await twoReplicasAfterTheFirstPoll()
        let until = try #require(await rowValue("device_until"))
        // An interval can be far longer than the lease's term (1 s here): the lease is
        // renewed every third of a term meanwhile, so nobody takes the polling over.
        #expect(
            await eventually(timeout: .seconds(5)) { await rowValue("device_until").map { $0 > until } == true },
            "the lease's expiry moves on while its holder waits")
        try await Task.sleep(for: .seconds(2))
        #expect(await tick(sleepers: 2))
        #expect(await eventually(timeout: .seconds(15)) { await server.statistics.devicePolls == 2 })
        #expect(await pollingOwner() == poller, "two terms later, the same replica polls")
        for r in [a, b] { await r.kill() }
    }

    @Test func aReplicaThatStopsGivesThePollingLeaseUpAndAnotherPollsOn() async throws {
        let (a, b, status, poller) = try await twoReplicasAfterTheFirstPoll()
        let (stopping, other) = poller == "a" ? (a, b) : (b, a)
        await stopping.actor.finishBackgroundWork()
        #expect(await pollingOwner() == nil, "the lease is given up, not left to lapse")
        #expect(await other.actor.status.deviceAuthorization == status, "the login waits on")
        var polls = 1
        for _ in 0..<10 where polls < 2 {
            guard await tick(sleepers: 1) else { break }
            _ = await eventually(timeout: .seconds(3)) { await server.statistics.devicePolls > polls }
            polls = await server.statistics.devicePolls
        }
        #expect(polls == 2)
        let owner = await pollingOwner()
        #expect(owner == (poller == "a" ? "b" : "a"))
        #expect(await server.statistics.slowDowns == 0)
        await other.actor.cancelDeviceLogin()
        for r in [a, b] { await r.kill() }
    }

    @Test func aDenialEndsTheDeviceLoginOnEveryReplica() async throws {
        let a = try await replica("a")
        let b = try await replica("b")
        let status = try await a.actor.startDeviceLogin()
        #expect(try await b.actor.startDeviceLogin() == status)
        let marks = [a, b].map { $0.actor.events.lastEventID }
        #expect(await server.denyDevice(userCode: status.userCode))
        for _ in 0..<10 {
            if await a.actor.status.deviceAuthorization == nil, await b.actor.status.deviceAuthorization == nil { break }
            guard await tick(sleepers: 1) else { break }
            try? await Task.sleep(for: .milliseconds(300))
        }
        for (r, mark) in zip([a, b], marks) {
            #expect(await r.actor.status.deviceAuthorization == nil)
            #expect(await ends(r.actor, after: mark) == [.denied])
        }
        #expect(await server.statistics.devicePolls == 1, "one poll learnt it for both")
        // A new device login asks for a new code: the denied one is not adopted.
        let next = try await b.actor.startDeviceLogin()
        #expect(next.userCode != status.userCode)
        #expect(try await a.actor.startDeviceLogin() == next)
        for r in [a, b] {
            await r.actor.cancelDeviceLogin()
            await r.kill()
        }
    }

    @Test func aLogoutSomeoneAskedForCancelsTheSharedDeviceLoginEverywhere() async throws {
        let a = try await replica("a")
        let b = try await replica("b")
        let status = try await a.actor.startDeviceLogin()
        #expect(try await b.actor.startDeviceLogin() == status)
        let mark = b.actor.events.lastEventID
        try await a.actor.logout()
        for _ in 0..<10 {
            if await b.actor.status.deviceAuthorization == nil { break }
            guard await tick(sleepers: 1) else { break }
            try? await Task.sleep(for: .milliseconds(300))
        }
        #expect(await b.actor.status.deviceAuthorization == nil)
        #expect(await ends(b.actor, after: mark) == [.cancelled])
        #expect(await server.statistics.devicePolls == 0)
        for r in [a, b] { await r.kill() }
    }

    @Test func aLogoutOnAReplicaThatNeverShowedTheLoginCancelsItToo() async throws {
        // b has no device login of its own (no autoLogin: device there, say): a logout
        // someone asks it for still ends the one a shows, so that approving the code later
        // logs nobody in after the logout.
        let a = try await replica("a")
        let b = try await replica("b")
        _ = try await a.actor.startDeviceLogin()
        let mark = a.actor.events.lastEventID
        try await b.actor.logout()
        for _ in 0..<10 {
            if await a.actor.status.deviceAuthorization == nil { break }
            guard await tick(sleepers: 1) else { break }
            try? await Task.sleep(for: .milliseconds(300))
        }
        #expect(await a.actor.status.deviceAuthorization == nil)
        #expect(await ends(a.actor, after: mark) == [.cancelled])
        for r in [a, b] { await r.kill() }
    }

    /// The replica holding the polling lease, as the row says.
    func pollingOwner() async -> String? { await rowValue("device_owner") }

    /// The replica that holds the claim to start a device login, if one does.
    func startingOwner() async -> String? { await rowValue("device_starting") }

    func rowValue(_ column: String) async -> String? {
        let rows = (try? await TestDatabase.rawRows(table)) ?? []
        for row in rows {
            guard let data = row.data(using: .utf8),
                let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
            else { continue }
            return object[column] as? String
        }
        return nil
    }
}
