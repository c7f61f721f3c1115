import Foundation

/// Polls `condition` every `interval` until it holds or `timeout` has passed, and returns
/// whether it held. For waiting on a signal another thread or process gives (a request
/// arrived, a gauge moved), never as a stand-in for one. The timeout is generous on
/// purpose: the suite also runs under ThreadSanitizer on a loaded machine, and a condition
/// that holds returns at once anyway.
public func eventually(
    timeout: Duration = .seconds(60), interval: Duration = .milliseconds(10), _ condition: () async throws -> Bool
) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: interval)
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
