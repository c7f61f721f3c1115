import Glibc
import Runtime
import Testing

/// The decision about what is at a Unix socket's path, without sockets.
@Suite struct StaleSocketRuleTests {
    @Test func aFreePathIsBound() {
        #expect(StaleSocketRule.action(found: .nothing, probe: nil) == .bind)
    }

    @Test func aSocketNobodyAnswersOnIsRemovedFirst() {
        #expect(StaleSocketRule.action(found: .socket, probe: .refused) == .removeThenBind)
    }

    @Test func aSocketThatVanishedMeanwhileLeavesThePathFree() {
        #expect(StaleSocketRule.action(found: .socket, probe: .vanished) == .bind)
    }

    @Test func aLiveSocketIsRefusedWithAddressInUse() {
        guard case .refuse(let code, let reason) = StaleSocketRule.action(found: .socket, probe: .answered) else {
            Issue.record("a live socket was not refused")
            return
        }
        #expect(code == -EADDRINUSE)
        #expect(reason.contains("another process"))
    }

    @Test func aSocketThatCannotBeProbedIsNotRemoved() {
        #expect(StaleSocketRule.action(found: .socket, probe: .failed(-EACCES)) != .removeThenBind)
        guard case .refuse(let code, _) = StaleSocketRule.action(found: .socket, probe: .failed(-EACCES)) else {
            Issue.record("an unprobed socket was not refused")
            return
        }
        #expect(code == -EACCES)
        #expect(StaleSocketRule.action(found: .socket, probe: nil) != .removeThenBind)
    }

    @Test(arguments: [StaleSocketRule.Probe?.none, .refused, .answered, .vanished, .failed(-EIO)])
    func aFileOfAnotherKindIsNeverRemovedWhateverTheProbeSays(_ probe: StaleSocketRule.Probe?) {
        guard case .refuse(let code, let reason) = StaleSocketRule.action(found: .notSocket, probe: probe) else {
            Issue.record("a file that is not a socket was not refused")
            return
        }
        #expect(code == -EEXIST)
        #expect(reason.contains("not a socket"))
    }
}
