import Glibc
import HTTPWire
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
    /// with no metadata of its own, at `info` or below), built as bytes by ``AccessLogLine``;
    /// any other handler gets each record as metadata.
    let direct: Bool
    /// What follows the `ts` value in a direct line: `","level":"info","logger":<label>,"msg":"access"`.
    let header: [UInt8]

    /// Creates the log from its settings; nil when they turn it off (or sample nothing).
    public init?(_ configuration: GatewayConfiguration.AccessLogSettings?, logger: Logger) {
        let sample = configuration?.effectiveSample ?? 100
        guard sample > 0 else { return nil }
        self.sample = sample
        self.includeQuery = configuration?.includeQuery ?? false
        self.logger = logger
        direct = (logger.handler as? JSONLogHandler).map { $0.metadata.isEmpty && $0.logLevel <= .info } ?? false
        var header = Array(#"","level":"#.utf8)
        Problem.appendQuoted(Logger.Level.info.rawValue, to: &header)
        header.append(contentsOf: #","logger":"#.utf8)
        Problem.appendQuoted(logger.label, to: &header)
        header.append(contentsOf: #","msg":"#.utf8)
        Problem.appendQuoted("access", to: &header)
        self.header = header
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
        let fields = AccessLogLine.Fields(
            method: request.head.method, target: request.head.target, route: route, bytesIn: bytesIn,
            traceparent: request.head.headers[first: "traceparent"], arrival: .now)
        return AccessFacts(log: self, fields: fields, loop: request.loop)
    }

    /// Writes the line of a request that ended `nanoseconds` after it arrived. On an event
    /// loop's thread the line joins what the loop writes after the I/O of its turn
    /// (``Runtime/EventLoop/appendOutput(_:to:)``, one `write(2)` for the lines of a turn);
    /// elsewhere it is written at once.
    func write(_ fields: AccessLogLine.Fields, nanoseconds: Int64) {
        guard direct else {
            let record = AccessLogRecord.make(
                method: fields.method, target: fields.target, route: fields.route, status: fields.status,
                upstreamStatus: fields.upstreamStatus, bytesIn: fields.bytesIn, bytesOut: fields.bytesOut,
                duration: .nanoseconds(nanoseconds), replays: fields.replays, generation: fields.generation,
                traceparent: fields.traceparent, includeQuery: includeQuery, time: fields.arrival.date)
            logger.info("access", metadata: record.metadata)
            return
        }
        let line = AccessLogLine.forThisThread()
        line.build(fields, nanoseconds: nanoseconds, now: .now, header: header, includeQuery: includeQuery)
        if let loop = EventLoop.current {
            loop.appendOutput(line.bytes, to: 2)
        } else {
            Self.writeAll(line.bytes)
        }
    }

    /// Writes `bytes` to standard error, retrying after signals and short writes; gives up
    /// on any other error (a closed standard error has no one to tell).
    private static func writeAll(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = Glibc.write(2, buffer.baseAddress! + offset, buffer.count - offset)
                if n > 0 {
                    offset += n
                } else if n < 0 && errno == EINTR {
                    continue
                } else {
                    return
                }
            }
        }
    }
}
