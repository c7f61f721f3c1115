/// When `authgate events` reconnects after its stream ended: after the server's `retry`
/// (2 s by default) once it had connected, and twice as long after each attempt in a row
/// that did not get the stream, up to 30 s; never when the admin API refused the request
/// (a wrong token or session: trying again would not help), nor when the very first
/// attempt could not reach it (a wrong `--admin` is better told at once). Pure.
public struct EventStreamReconnect: Sendable, Equatable {
    /// What to do once a connection has ended.
    public enum Decision: Sendable, Equatable {
        /// Connect again after `delay`, sending the last event id seen.
        case reconnect(after: Duration)
        /// Stop: the admin API answered with a status that another try would get again.
        case stop(status: Int)
        /// Stop: the admin API could not be reached, and never was.
        case unreachable
    }

    /// The longest wait between two attempts.
    public static let maximumDelay = Duration.seconds(30)
    /// The wait when the server set no `retry`.
    public static let defaultRetry = Duration.milliseconds(2000)

    /// Attempts in a row that did not get the stream.
    public private(set) var failures = 0
    /// Whether a stream has begun since the start.
    public private(set) var everStreamed = false

    /// Creates the policy with no failure yet.
    public init() {}

    /// Decides after a connection ended. `status` is the answer's status (nil when none
    /// came: the admin API could not be reached); `streamed` whether the event stream had
    /// begun; `retryMilliseconds` the server's last `retry`.
    public mutating func decide(status: Int?, streamed: Bool, retryMilliseconds: Int?) -> Decision {
        if let status, !streamed, Self.isFinal(status) { return .stop(status: status) }
        if status == nil, !streamed, !everStreamed { return .unreachable }
        let retry = retryMilliseconds.map { Duration.milliseconds($0) } ?? Self.defaultRetry
        if streamed {
            everStreamed = true
            failures = 0
            return .reconnect(after: min(retry, Self.maximumDelay))
        }
        failures += 1
        var delay = retry
        for _ in 1..<min(failures, 16) { delay *= 2 }
        return .reconnect(after: min(delay, Self.maximumDelay))
    }

    /// A refusal that another try would meet again: 4xx but 408 and 429.
    static func isFinal(_ status: Int) -> Bool {
        (400..<500).contains(status) && status != 408 && status != 429
    }
}
