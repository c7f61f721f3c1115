import AuthCore
import Foundation
import Testing

/// Another process's login told from a refresh by the state's login id, never by the time
/// of the last login (kept to the second).
struct SessionStateLoginTests {
    let mine = SessionState(
        isLoggedIn: true, subject: "alice", lastLogin: Date(timeIntervalSince1970: 1_800_000_000), loginID: "a1")

    @Test func aStateOfTheSameLoginIsNotAnotherLogin() {
        #expect(!mine.isAnotherLogin(than: mine))
    }

    @Test func anotherLoginInTheSameSecondIsAnotherLogin() {
        var theirs = mine
        theirs.loginID = "b2"
        #expect(theirs.isAnotherLogin(than: mine))
        #expect(theirs.isAnotherLogin(than: .loggedOut))
    }

    @Test func aLoggedOutStateOrOneWithoutALoginIDIsNotALogin() {
        var out = mine
        out.isLoggedIn = false
        out.loginID = "b2"
        #expect(!out.isAnotherLogin(than: mine))
        var older = mine
        older.loginID = nil
        #expect(!older.isAnotherLogin(than: mine), "written by an earlier version: not told apart")
    }

    @Test func theLoginIDSurvivesTheStateEncodingAndAnEarlierStateStillDecodes() throws {
        let decoded = try JSONDecoder().decode(SessionState.self, from: try JSONEncoder().encode(mine))
        #expect(decoded.loginID == "a1")
        let earlier = try JSONDecoder().decode(SessionState.self, from: Data(#"{"isLoggedIn":true,"isGuest":false}"#.utf8))
        #expect(earlier.loginID == nil && earlier.isLoggedIn)
        #expect(SessionState.newLoginID() != SessionState.newLoginID())
    }
}
