public import AuthCore
import Glibc
import Runtime

/// What the proxy learns about one sampled request as it serves it; ``end(status:)`` logs it.
///
/// No lock: every call is made on the request's loop thread, one after another.
/// ``ReverseProxy`` calls ``AccessLog/begin(_:route:)`` from `respond` (on the loop), and the
/// request's runner (``ProxiedRequest``, loop-confined) the rest as its exchange goes on; a
/// request that waits for a slot, a token or a refresh does so in a task started with the
/// loop as its executor preference (`TaskTracker.start(on:)`), whose nonisolated code, where
/// the runner goes on, runs on the loop. Debug builds check the thread on every call.
public final class AccessFacts: @unchecked Sendable {
    private let log: AccessLog
    private let started = AccessFacts.monotonicNanoseconds()
    private var fields: AccessLogLine.Fields
    private var ended = false
    #if DEBUG
        private let loop: EventLoop
    #endif

    init(log: AccessLog, fields: AccessLogLine.Fields, loop: EventLoop) {
        self.log = log
        self.fields = fields
        #if DEBUG
            self.loop = loop
            precondition(loop.inEventLoop, "access facts begun off their request's loop")
        #endif
    }

    /// An attempt with a token is about to be sent (authenticated routes).
    public func attempt(_ attempt: ReplayRule.Attempt) {
        checkThread()
        fields.replays = attempt.replaysSoFar
        fields.generation = attempt.generation.rawValue
    }

    /// An upstream answered with `status`, and `bytes` of its body reached the client.
    public func upstreamAnswered(status: Int, bytes: Int) {
        checkThread()
        fields.upstreamStatus = status
        fields.bytesOut = bytes
    }

    /// The client got `status`: the line is logged (once).
    public func end(status: Int) {
        checkThread()
        guard !ended else { return }
        ended = true
        fields.status = status
        log.write(fields, nanoseconds: Self.monotonicNanoseconds() - started)
    }

    /// `CLOCK_MONOTONIC` in nanoseconds (what `ContinuousClock` reads, without its 128-bit
    /// arithmetic).
    private static func monotonicNanoseconds() -> Int64 {
        var t = timespec()
        // CLOCK_MONOTONIC always exists; should it fail, the duration shows as 0.
        guard clock_gettime(CLOCK_MONOTONIC, &t) == 0 else { return 0 }
        return Int64(t.tv_sec) * 1_000_000_000 + Int64(t.tv_nsec)
    }

    @inline(__always)
    private func checkThread() {
        #if DEBUG
            precondition(loop.inEventLoop, "access facts touched off their request's loop")
        #endif
    }
}
