import Foundation

/// Polls `condition` every `interval` until it holds or `timeout` has passed, and returns
/// whether it held. For waiting on a signal another thread or process gives (a request
/// arrived, a gauge moved), never as a stand-in for one.
///
/// The timeout counts only the time this poller had the chance to look (``PollDeadline``):
/// the suite runs its tests side by side, under the sanitizers too, on a two-core pool that
/// blocking tests can hold for a minute, and a poller that was not run meanwhile has not
/// seen the condition fail. A condition that holds returns at once anyway.
public func eventually(
    timeout: Duration = .seconds(60), interval: Duration = .milliseconds(10), _ condition: () async throws -> Bool
) async rethrows -> Bool {
    let clock = ContinuousClock()
    var deadline = PollDeadline(timeout: timeout, start: clock.now)
    while !deadline.expired(at: clock.now) {
        let start = clock.now
        if try await condition() { return true }
        try? await Task.sleep(for: interval)
        deadline.looked(from: start, to: clock.now, expected: interval)
    }
    return try await condition()
}

/// ``eventually(timeout:interval:_:)`` for code on its own thread (``onThread(_:)``): a
/// conversation that must keep to a server's timeouts cannot wait on the cooperative pool,
/// which the rest of the suite may hold for longer than those timeouts.
public func eventuallyOnThisThread(
    timeout: Duration = .seconds(60), interval: Duration = .milliseconds(10), _ condition: () -> Bool
) -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    while clock.now < deadline {
        if condition() { return true }
        Thread.sleep(forTimeInterval: Double(interval.components.attoseconds) / 1e18 + Double(interval.components.seconds))
    }
    return condition()
}
