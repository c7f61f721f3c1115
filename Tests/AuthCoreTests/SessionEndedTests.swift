import AuthCore
import AuthGateTesting
import Foundation
import Testing

/// Once a session has ended, every request for a token is told so, with the reason, until a
/// login, whichever process ended it; "login required" is for a process that has not seen a
/// session end since it started (or a guest).
struct SessionEndedTests {
    func expectEnded(_ actor: AuthActor, _ reason: LogoutReason, _ note: Comment) async {
        let viaToken = await #expect(throws: AuthError.self) { _ = try await actor.token() }
        #expect(viaToken?.code == .sessionEnded, note)
        #expect(viaToken?.logoutReason == reason, note)
        let viaRefresh = await #expect(throws: AuthError.self) { _ = try await actor.refresh(after: .zero) }
        #expect(viaRefresh?.code == .sessionEnded, note)
        #expect(viaRefresh?.logoutReason == reason, note)
    }

    @Test func aSessionEndedByAnotherProcessIsReportedAsEndedElsewhereUntilALogin() async throws {
        let h = Harness()
        try await h.login()
        let log = EventLog(h.actor.events)
        // Another process sharing the stores logs out: state first, then the tokens.
        h.stateStore.setStored(.loggedOut, for: .default)
        h.tokenStore.setRecord(nil, for: .default)
        try await h.actor.synchronize()
        for attempt in 1...3 {
            await expectEnded(h.actor, .endedElsewhere, "request \(attempt) after the logout elsewhere")
        }
        #expect(await h.actor.status.logoutReason == .endedElsewhere)
        try await h.actor.synchronize()  // nothing changed: no second logged_out
        let events = await log.drain(h.actor.events)
        #expect(events.filter { $0.event.name == "logged_out" }.count == 1)
        // A login (here or elsewhere) ends the "ended" answer.
        try await h.login()
        #expect(try await h.actor.token().value.isEmpty == false)
    }

    @Test func aLocalLogoutIsReportedWithItsReasonAndARestartAsLoginRequired() async throws {
        let h = Harness()
        try await h.login()
        try await h.actor.logout()
        await expectEnded(h.actor, .userInitiated, "after POST /auth/logout")
        let restarted = h.restarted()
        _ = try await restarted.restore()
        let fresh = await #expect(throws: AuthError.self) { _ = try await restarted.token() }
        #expect(fresh?.code == .loginRequired, "no session ended in this process")
    }

    @Test func aGuestAfterALogoutIsToldToLogIn() async throws {
        let h = Harness()
        try await h.login()
        try await h.actor.logout()
        try await h.actor.setGuestMode(true)
        let guest = await #expect(throws: AuthError.self) { _ = try await h.actor.token() }
        #expect(guest?.code == .loginRequired)
    }
}
