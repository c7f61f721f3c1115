public import AuthCore
import Foundation
import Locking
public import Logging
public import Runtime

/// The access log: for each sampled proxied request, one ``AccessLogRecord`` logged at `info`
/// through the logger it was given (label `authgate.access` in `serve`), as metadata under the
/// record's field names, with the message `access`.
///
/// ```swift
/// let log = AccessLog(GatewayConfiguration.AccessLogSettings(sample: 10), logger: Logger(label: "authgate.access"))
/// let facts = log.begin(request, route: "/api/")   // nil: not sampled
/// facts?.end(status: 200)                          // logs the line
/// ```
public final class AccessLog: Sendable {
    /// The percentage of requests logged.
    public let sample: Int
    /// Whether the query is logged (credentials redacted).
    public let includeQuery: Bool
    let logger: Logger
    /// Whether lines go straight to AuthGate's own ``JSONLogHandler`` (the logger's handler,
    /// with no metadata of its own, at `info` or below), skipping swift-log's metadata
    /// dictionary; any other handler gets each record as metadata.
    let direct: Bool

    /// Creates the log from its settings; nil when they turn it off (or sample nothing).
    public init?(_ configuration: GatewayConfiguration.AccessLogSettings?, logger: Logger) {
        let sample = configuration?.effectiveSample ?? 100
        guard sample > 0 else { return nil }
        self.sample = sample
        self.includeQuery = configuration?.includeQuery ?? false
        self.logger = logger
        direct = (logger.handler as? JSONLogHandler).map { $0.metadata.isEmpty && $0.logLevel <= .info } ?? false
    }

    /// The facts of `request` to fill in as it is served, when it is sampled; nil otherwise.
    public func begin(_ request: HTTPRequest, route: String?) -> AccessFacts? {
        guard sample >= 100 || Int.random(in: 0..<100) < sample else { return nil }
        let bytesIn: Int?
        switch request.body {
        case .buffered(let bytes): bytesIn = bytes.count
        case .stream:
            switch request.head.framing {
            case .none: bytesIn = 0
            case .length(let n): bytesIn = Int(clamping: n)
            case .chunked: bytesIn = nil
            }
        }
        return AccessFacts(
            log: self, method: request.head.method, target: request.head.target, route: route, bytesIn: bytesIn,
            traceparent: request.head.headers[first: "traceparent"])
    }

    func write(_ record: AccessLogRecord) {
        if direct {
            JSONLogHandler.write(level: .info, label: logger.label, message: "access", members: record.appendMembers)
        } else {
            logger.info("access", metadata: record.metadata)
        }
    }
}

/// What the proxy learns about one sampled request as it serves it; ``end(status:)`` logs it.
/// Filled in from the request's loop and the task serving it, under a lock.
public final class AccessFacts: Sendable {
    private struct Learned {
        var upstreamStatus: Int?
        var bytesOut = 0
        var replays = 0
        var generation: UInt64?
        var ended = false
    }

    private let log: AccessLog
    private let started = ContinuousClock.now
    private let time = Date()
    private let method: String
    private let target: String
    private let route: String?
    private let bytesIn: Int?
    private let traceparent: String?
    private let learned = Locked(Learned())

    init(log: AccessLog, method: String, target: String, route: String?, bytesIn: Int?, traceparent: String?) {
        self.log = log
        self.method = method
        self.target = target
        self.route = route
        self.bytesIn = bytesIn
        self.traceparent = traceparent
    }

    /// An attempt with a token is about to be sent (authenticated routes).
    public func attempt(_ attempt: ReplayRule.Attempt) {
        learned.withLock {
            $0.replays = attempt.replaysSoFar
            $0.generation = attempt.generation.rawValue
        }
    }

    /// An upstream answered with `status`, and `bytes` of its body reached the client.
    public func upstreamAnswered(status: Int, bytes: Int) {
        learned.withLock {
            $0.upstreamStatus = status
            $0.bytesOut = bytes
        }
    }

    /// The client got `status`: the line is logged (once).
    public func end(status: Int) {
        let facts = learned.withLock { l -> Learned? in
            guard !l.ended else { return nil }
            l.ended = true
            return l
        }
        guard let facts else { return }
        log.write(
            AccessLogRecord.make(
                method: method, target: target, route: route, status: status, upstreamStatus: facts.upstreamStatus,
                bytesIn: bytesIn, bytesOut: facts.bytesOut, duration: ContinuousClock.now - started, replays: facts.replays,
                generation: facts.generation, traceparent: traceparent, includeQuery: log.includeQuery, time: time))
    }
}
