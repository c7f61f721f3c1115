/// Polls `condition` until it holds (real time, bounded), for waiting on other tasks.
func eventually(timeout: Duration = .seconds(60), _ condition: () async -> Bool) async -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    while clock.now < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return false
}
