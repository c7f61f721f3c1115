import AuthCore
import Foundation
import TestSupport
import Testing

@Suite struct EventBroadcasterTests {
    let account = AccountID.default

    func make(buffer: Int = 64, replay: Int = 256) -> EventBroadcaster {
        EventBroadcaster(
            initialStatus: SessionStatus(account: account, isLoggedIn: false), bufferSize: buffer,
            replayCapacity: replay)
    }

    func loggedIn(_ epoch: UInt64) -> SessionStatus {
        SessionStatus(account: account, isLoggedIn: true, epoch: epoch)
    }

    @Test func newSubscriberReceivesTheCurrentStateFirst() async {
        let broadcaster = make()
        broadcaster.publish(.loggedIn(loggedIn(1)), status: loggedIn(1))
        var iterator = broadcaster.subscribe().makeAsyncIterator()
        let first = await iterator.next()
        #expect(first?.event == .state(loggedIn(1)))
        #expect(first?.id == 1)
        broadcaster.publish(.refreshed(generation: TokenGeneration(2), persisted: true), status: loggedIn(1))
        let second = await iterator.next()
        #expect(second?.id == 2)
        #expect(second?.event == .refreshed(generation: TokenGeneration(2), persisted: true))
    }

    @Test func everySubscriberReceivesEveryEventInOrder() async {
        let broadcaster = make()
        let streams = (0..<10).map { _ in broadcaster.subscribe() }
        for index in 1...5 {
            broadcaster.publish(.refreshed(generation: TokenGeneration(UInt64(index)), persisted: true), status: loggedIn(1))
        }
        broadcaster.finish()
        for stream in streams {
            var ids: [UInt64] = []
            for await record in stream { ids.append(record.id) }
            #expect(ids == [0, 1, 2, 3, 4, 5])
        }
    }

    @Test func cancelledSubscriberIsRemovedAndReleasesWhatItHeld() async throws {
        final class Owner: Sendable {}
        let broadcaster = make()
        weak var weakOwner: Owner?
        var task: Task<Void, Never>?
        do {
            let owner = Owner()
            weakOwner = owner
            let stream = broadcaster.subscribe()
            task = Task {
                for await _ in stream { _ = owner }
            }
        }
        #expect(broadcaster.subscriberCount == 1)
        #expect(weakOwner != nil)
        task?.cancel()
        await task?.value
        task = nil
        #expect(await eventually { broadcaster.subscriberCount == 0 })
        #expect(await eventually { weakOwner == nil })
    }

    @Test func droppedStreamIsRemoved() async {
        let broadcaster = make()
        do {
            _ = broadcaster.subscribe()
        }
        #expect(await eventually { broadcaster.subscriberCount == 0 })
    }

    @Test func subscriberResumesFromLastEventIDThroughTheReplayBuffer() async {
        let broadcaster = make(replay: 3)
        for index in 1...5 {
            broadcaster.publish(.refreshed(generation: TokenGeneration(UInt64(index)), persisted: true), status: loggedIn(1))
        }
        // Events 3, 4, 5 are in the replay buffer.
        var resumed = broadcaster.subscribe(resumingAfter: 3).makeAsyncIterator()
        #expect(await resumed.next()?.id == 4)
        #expect(await resumed.next()?.id == 5)
        var current = broadcaster.subscribe(resumingAfter: 5).makeAsyncIterator()
        broadcaster.publish(
            .loggedOut(reason: .userInitiated, epoch: 1), status: SessionStatus(account: account, isLoggedIn: false))
        #expect(await current.next()?.id == 6)
        // Too old: the buffer no longer holds event 2, so the current state comes instead.
        var tooOld = broadcaster.subscribe(resumingAfter: 1).makeAsyncIterator()
        let first = await tooOld.next()
        #expect(first?.event == .state(SessionStatus(account: account, isLoggedIn: false)))
        #expect(first?.id == 6)
    }

    @Test func slowSubscriberKeepsOnlyTheNewestEvents() async {
        let broadcaster = make(buffer: 2)
        let stream = broadcaster.subscribe()
        for index in 1...10 {
            broadcaster.publish(.refreshed(generation: TokenGeneration(UInt64(index)), persisted: true), status: loggedIn(1))
        }
        broadcaster.finish()
        var ids: [UInt64] = []
        for await record in stream { ids.append(record.id) }
        #expect(ids == [9, 10])
    }

    @Test func actorEventsCarryMonotonicIdsAndOneLoggedOutPerEpoch() async throws {
        let h = Harness()
        let log = EventLog(h.actor.events)
        try await h.actor.restore()
        try await h.login()
        let token = try await h.actor.token()
        _ = try await h.actor.refresh(after: token.generation)
        try await h.actor.logout()
        try await h.actor.logout()
        let records = await log.drain(h.actor.events)
        #expect(records.map(\.event.name) == ["state", "restored", "logged_in", "refreshed", "logged_out"])
        #expect(zip(records, records.dropFirst()).allSatisfy { $0.id < $1.id }, "ids increase: \(records.map(\.id))")
        if records.count == 5 {
            #expect(
                records.dropFirst().map(\.id) == Array(records[1].id..<records[1].id + 4), "no id skipped after the current state"
            )
        }
    }
}
