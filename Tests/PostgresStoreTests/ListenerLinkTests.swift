import Testing

@testable import PostgresStore

/// When the listening connection reconnects and what a new connection catches up on.
@Suite struct ListenerLinkTests {
    @Test func anUnansweredPingDropsTheConnectionAndTheNextOneRenewsThePool() {
        var link = ListenerLink()
        #expect(link.connected() == .init(renewPool: false))
        #expect(link.pinged(answered: true) == .keep)
        #expect(link.pinged(answered: false) == .drop)
        // Dropped after a ping that ran out its time: connect again at once.
        #expect(link.disconnected(timedOut: true) == .zero)
        // Attempts that time out during the cut follow one another without a pause.
        #expect(link.disconnected(timedOut: true) == .zero)
        #expect(link.connected() == .init(renewPool: true), "the pool's connections are as dead as the listener's was")
        #expect(link.connected() == .init(renewPool: false), "only once")
    }

    @Test func aConnectionThatEndsOrIsRefusedRetriesWithABackoffOfAtMostASecond() {
        var link = ListenerLink()
        let delays = (0..<10).map { _ in link.disconnected(timedOut: false) }
        #expect(delays.first == ListenerLink.firstDelay)
        #expect(delays == delays.sorted())
        #expect(delays.allSatisfy { $0 <= ListenerLink.maximumDelay })
        #expect(delays.last == ListenerLink.maximumDelay)
        #expect(link.connected() == .init(renewPool: false), "a loss that was not silent closed the pool's connections too")
        #expect(link.failures == 0)
        #expect(link.disconnected(timedOut: false) == ListenerLink.firstDelay, "the backoff starts over")
    }

    @Test func aCutIsNoticedWithinAFewSeconds() {
        #expect(ListenerLink.pingInterval + ListenerLink.pingTimeout <= .seconds(5))
        // After the heal, a new attempt starts within a hedge interval (a second at most
        // between reconnections), and each may take long enough for a distant database.
        #expect(ListenerLink.hedgeInterval <= .milliseconds(250))
        #expect(ListenerLink.maximumDelay <= .seconds(1))
        #expect(ListenerLink.connectTimeout >= .seconds(5))
        #expect(ListenerLink.hedgeInterval * ListenerLink.attempts >= .seconds(2))
    }
}
