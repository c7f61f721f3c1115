import Testing

@testable import PostgresStore

/// The hub without a database: what anyone may send on the channel is bounded by what this
/// process asks about, never by what is sent, and wakes only whoever asks.
@Suite struct NotificationHubTests {
    typealias Change = NotificationHub.Change

    @Test func notificationsAboutAccountsNobodyAsksAboutAreForgotten() async {
        let hub = NotificationHub()
        for i in 0..<10_000 { hub.deliver(Change(kind: "logout", account: "stranger-\(i)", generation: UInt64(i))) }
        #expect(hub.trackedAccounts == 0)
        let followed = hub.changes(for: ["default"])
        for i in 0..<10_000 { hub.deliver(Change(kind: "login", account: "stranger-\(i)", generation: nil)) }
        #expect(hub.trackedAccounts == 1)
        _ = followed
    }

    @Test func anAccountIsForgottenWhenTheLastWatcherAndSubscriberGo() async {
        let hub = NotificationHub()
        var stream: AsyncStream<Change>? = hub.changes(for: ["default", "billing"])
        #expect(hub.trackedAccounts == 2)
        await hub.watching("default") {
            await hub.watching("reports") {
                #expect(hub.trackedAccounts == 3)
            }
            #expect(hub.trackedAccounts == 2)
        }
        hub.finish()
        stream = nil
        #expect(hub.trackedAccounts == 0)
        _ = stream
    }

    /// Not a timing bound: the wait's own timeout is an hour, so returning at all within the
    /// test's time limit is the wake-up.
    @Test(.timeLimit(.minutes(1)))
    func aWaiterWakesOnANotificationThatLandsBetweenItsReadAndItsWait() async {
        let hub = NotificationHub()
        await hub.watching("default") {
            let seen = hub.version(of: "default")
            hub.deliver(Change(kind: "released", account: "default", generation: 3))
            await hub.wait(for: "default", after: seen, timeout: .seconds(3600))
            #expect(hub.version(of: "default") > seen)
        }
    }

    @Test func aWaiterSleepsThroughNotificationsAboutOtherAccounts() async {
        let hub = NotificationHub()
        let clock = ContinuousClock()
        let other = hub.changes(for: ["billing"])
        await hub.watching("default") {
            let seen = hub.version(of: "default")
            let noise = Task {
                for i in 0..<200 {
                    hub.deliver(Change(kind: "released", account: i.isMultiple(of: 2) ? "billing" : "stranger", generation: nil))
                    try? await Task.sleep(for: .milliseconds(1))
                }
            }
            let started = clock.now
            await hub.wait(for: "default", after: seen, timeout: .milliseconds(300))
            #expect(clock.now - started >= .milliseconds(250), "woken by another account's notification")
            await noise.value
        }
        _ = other
    }

    @Test func aTimeoutShorterThanTheRegistrationStillEndsTheWait() async {
        let hub = NotificationHub()
        await hub.watching("default") {
            for _ in 0..<200 {
                await hub.wait(for: "default", after: hub.version(of: "default"), timeout: .zero)
            }
        }
    }

    @Test func aSubscriberHearsOnlyItsAccountsAndEveryResynchronisation() async {
        let hub = NotificationHub()
        let stream = hub.changes(for: ["default"])
        hub.deliver(Change(kind: "logout", account: "billing", generation: 4))
        hub.deliver(Change(kind: "refreshed", account: "default", generation: 5))
        hub.resynchronise()
        hub.finish()
        var heard: [String] = []
        for await change in stream { heard.append("\(change.kind) \(change.account)") }
        #expect(heard == ["refreshed default", "resync *"])
    }

    @Test func versionsOfAnAccountOnlyGrowWhileItIsFollowed() async {
        let hub = NotificationHub()
        let stream = hub.changes(for: ["default"])
        hub.deliver(Change(kind: "refreshed", account: "default", generation: 5))
        let first = hub.version(of: "default")
        hub.resynchronise()
        #expect(hub.version(of: "default") > first)
        hub.deliver(Change(kind: "refreshed", account: "default", generation: 6))
        hub.finish()
        var versions: [UInt64] = []
        for await change in stream { versions.append(change.version) }
        #expect(versions.count == 3)
        #expect(versions == versions.sorted() && Set(versions).count == 3)
    }

    @Test(arguments: [
        "", "logout", "logout  default", "logout default 7 extra", "drop default 7", "resync *", "logout default seven",
        "logout default -1", " default 7",
    ])
    func aPayloadThatIsNotTheStoresOwnIsIgnored(_ payload: String) {
        #expect(Change(payload: payload) == nil)
    }

    @Test func theStoresOwnPayloadsParse() {
        for kind in ["refreshed", "login", "logout", "released", "state"] {
            let change = Change(kind: kind, account: "default", generation: 9)
            #expect(Change(payload: change.payload) == change)
        }
        #expect(Change(payload: "state default")?.generation == nil)
    }
}
