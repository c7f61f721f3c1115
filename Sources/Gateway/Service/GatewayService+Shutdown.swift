import AuthCore
import Foundation
import Runtime

extension GatewayService {
    /// Stops accepting, lets in-flight exchanges finish for up to `grace`, then stops the loops.
    /// The session's files are already durable (every change is written as it happens).
    ///
    /// The loops stop last: first the listeners close, the event streams end, and the
    /// tasks serving requests, the refreshes in flight and the logout revocations finish,
    /// so that none of them is left waiting on a loop that no longer runs.
    ///
    /// The whole drain takes at most `grace` + 3 s (13 s by default, inside the systemd unit's
    /// `TimeoutStopSec=15`): whatever is left of that after the exchanges, at least 1 s, goes
    /// to the refreshes and revocations in flight and to saving a rotated pair whose save
    /// had failed (``AuthCore/AuthActor/flushPendingCredentials()``). One thing outlasts the
    /// cap: a refresh the token endpoint has already answered is waited for until its pair is
    /// saved, for up to 10 s more, and the stores close only after it
    /// (``AuthCore/AuthActor/finishSavingIssuedTokens()``). The server has spent the previous
    /// refresh token by then, so a pair dropped there would end the session at the next start;
    /// a save takes milliseconds on a healthy store.
    public func shutdown(grace: Duration = .seconds(10)) async {
        await shutdown(grace: grace, issuedTokensSaveLimit: Self.issuedTokensSaveLimit)
    }

    /// ``shutdown(grace:)`` waiting up to `issuedTokensSaveLimit` past the cap for issued
    /// tokens to be saved (tests on a loaded machine give it longer than a healthy store needs).
    func shutdown(grace: Duration, issuedTokensSaveLimit: Duration) async {
        let clock = ContinuousClock()
        let deadline = clock.now + grace + .seconds(3)
        func left(atMost cap: Duration, atLeast floor: Duration = .zero) -> Duration {
            max(floor, min(cap, deadline - clock.now))
        }
        let group = group
        await listeners.close(grace: grace)
        // End every subscription to the sessions (SSE streams, the user-info followers),
        // and wait for the gateway's own subscribers to end.
        for s in sessions.values { s.actor.events.finish() }
        let followed = await followers.idle(timeout: left(atMost: .seconds(5)))
        let drained = await proxyTasks.idle(timeout: left(atMost: .seconds(5)))
        let adminDrained = await adminTasks.idle(timeout: left(atMost: .seconds(1)))
        // A refresh or revocation waits at most this long; past it, the loops stop anyway and
        // the upstream client cancels the transfer (logged: what waited on it is lost).
        let background = TaskTracker()
        for s in sessions.values {
            let actor = s.actor
            background.start(on: nil) { await actor.finishBackgroundWork() }
        }
        background.start(on: nil) { [keyFileCheck] in await keyFileCheck.finish() }
        let backgroundDone = await background.idle(timeout: left(atMost: .seconds(5), atLeast: .seconds(1)))
        if !followed || !drained || !adminDrained || !backgroundDone {
            logger.warning(
                "work still running at shutdown; stopping the loops anyway",
                metadata: [
                    "followers": "\(followers.count)", "proxy.tasks": "\(proxyTasks.count)", "admin.tasks": "\(adminTasks.count)",
                    "session.background": "\(background.count)",
                ])
        }
        if !backgroundDone {
            let saving = TaskTracker()
            for s in sessions.values {
                let actor = s.actor
                saving.start(on: nil) { await actor.finishSavingIssuedTokens() }
            }
            if await !saving.idle(timeout: issuedTokensSaveLimit) {
                logger.error(
                    "issued tokens still being saved at shutdown; stopping anyway",
                    metadata: ["session.saving": "\(saving.count)"])
            }
        }
        await stores.close()
        await group.close()
    }

    /// How long shutdown waits past its cap for a refresh the token endpoint has answered to
    /// be saved.
    static let issuedTokensSaveLimit = Duration.seconds(10)
}
