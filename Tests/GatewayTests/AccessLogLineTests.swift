import Foundation
import HTTPWire
import Logging
import Testing

@testable import Gateway

/// The access log's direct line (no metadata dictionary) is byte for byte the line
/// `JSONLogHandler` writes for the same record given as swift-log metadata.
@Suite struct AccessLogLineTests {
    static let time = Date(timeIntervalSince1970: 1_795_000_000.25)

    static func viaMetadata(_ record: AccessLogRecord) -> [UInt8] {
        let fields = record.metadata
        return JSONLogHandler.line(time: time, level: .info, label: "authgate.access", message: "access") { line in
            for key in fields.keys.sorted() {
                line.append(0x2C)
                Problem.appendQuoted(key, to: &line)
                line.append(0x3A)
                JSONLogHandler.append(fields[key]!, to: &line)
            }
        }
    }

    static func direct(_ record: AccessLogRecord) -> [UInt8] {
        JSONLogHandler.line(time: time, level: .info, label: "authgate.access", message: "access", members: record.appendMembers)
    }

    static let records: [AccessLogRecord] = [
        AccessLogRecord.make(
            method: "GET", target: "/api/x?page=2&access_token=abc", route: "/api/", status: 200, upstreamStatus: 200,
            bytesIn: 0, bytesOut: 12, duration: .microseconds(1_234_567), replays: 1, generation: 3,
            traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", includeQuery: true, time: time),
        AccessLogRecord.make(
            method: "POST", target: "/nowhere", route: nil, status: 404, upstreamStatus: nil, bytesIn: nil, bytesOut: 0,
            duration: .zero, replays: 0, generation: nil, traceparent: nil, includeQuery: false, time: time),
        AccessLogRecord.make(
            method: "PUT", target: #"/a/"quoted"\/π/%00?x=1"#, route: "/a/", status: 503, upstreamStatus: 401,
            bytesIn: 1 << 40, bytesOut: Int.max, duration: .seconds(86_400 * 365), replays: 10, generation: .max,
            traceparent: "garbage", includeQuery: false, time: Date(timeIntervalSince1970: 0)),
    ]

    @Test(arguments: records)
    func theDirectLineIsTheHandlersLine(_ record: AccessLogRecord) throws {
        let direct = Self.direct(record)
        #expect(String(decoding: direct, as: UTF8.self) == String(decoding: Self.viaMetadata(record), as: UTF8.self))
        let object = try #require(JSONSerialization.jsonObject(with: Data(direct.dropLast())) as? [String: Any])
        #expect(object["path"] as? String == record.path && object["status"] as? Int == record.status)
        #expect(object["ts"] as? String == "2026-11-18T11:06:40Z")
    }

    // MARK: The line built from the facts

    static let arrival = WallTime(seconds: 1_795_000_000, nanoseconds: 125_000_000)

    static func fields(
        _ method: String = "GET", _ target: String, route: String?, status: Int, upstreamStatus: Int?, bytesIn: Int?,
        bytesOut: Int, replays: Int = 0, generation: UInt64? = nil, traceparent: String? = nil, arrival: WallTime = arrival
    ) -> AccessLogLine.Fields {
        var f = AccessLogLine.Fields(
            method: method, target: target, route: route, bytesIn: bytesIn, traceparent: traceparent, arrival: arrival)
        f.status = status
        f.upstreamStatus = upstreamStatus
        f.bytesOut = bytesOut
        f.replays = replays
        f.generation = generation
        return f
    }

    static let facts: [(AccessLogLine.Fields, Duration, Bool)] = [
        (
            fields(
                "GET", "/api/x?page=2&access_token=abc", route: "/api/", status: 200, upstreamStatus: 200, bytesIn: 0,
                bytesOut: 12, replays: 1, generation: 3, traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
            .microseconds(1_234_567), true
        ),
        (
            fields(
                "GET", "/api/x?page=2&access_token=abc", route: "/api/", status: 200, upstreamStatus: 200, bytesIn: 0,
                bytesOut: 12), .microseconds(1_234_567), false
        ),
        (fields("POST", "/nowhere", route: nil, status: 404, upstreamStatus: nil, bytesIn: nil, bytesOut: 0), .zero, false),
        (fields("POST", "/q?", route: nil, status: 404, upstreamStatus: nil, bytesIn: nil, bytesOut: 0), .zero, true),
        (
            fields(
                "PUT", "/a/\"quoted\"\\/π/%00/\u{1}?x=1&code=z", route: #"/a/"#, status: 503, upstreamStatus: 401,
                bytesIn: 1 << 40, bytesOut: Int.max, replays: 10, generation: .max, traceparent: "garbage",
                arrival: WallTime(seconds: 0, nanoseconds: 0)), .seconds(86_400 * 365), true
        ),
        (
            fields(
                "GET", "/slow", route: "/", status: 504, upstreamStatus: nil, bytesIn: 5, bytesOut: 0,
                traceparent: " 01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
                arrival: WallTime(seconds: 946_684_799, nanoseconds: 875_000_000)), .seconds(40 * 365 * 86_400), false
        ),
        (
            fields(
                "GET", "http://alice:s3cret@api.example/x?page=1#frag", route: "/", status: 200, upstreamStatus: 200, bytesIn: 0,
                bytesOut: 1), .nanoseconds(1), true
        ),
        (
            fields(
                "GET", "HTTP://alice:s3cret@api.example#frag", route: "/", status: 200, upstreamStatus: 200, bytesIn: 0,
                bytesOut: 1), .nanoseconds(1), true
        ),
        (
            fields(
                "GET", "/" + String(repeating: "long/ü/", count: 1_500) + "?q=" + String(repeating: "x", count: 3_000),
                route: "/", status: 200, upstreamStatus: 200, bytesIn: 0, bytesOut: 1), .nanoseconds(1), true
        ),
    ]

    /// The line ``AccessLogLine`` builds is the handler's line for the record of the same facts,
    /// with one builder reused for every line (the buffer and the cached seconds carried over).
    @Test func theBuiltLineIsTheHandlersLineForTheRecord() throws {
        let builder = AccessLogLine()
        let header = try #require(AccessLog(nil, logger: Logger(label: "authgate.access") { JSONLogHandler(label: $0) })).header
        let nows = [
            WallTime(seconds: 1_795_000_000, nanoseconds: 250_000_000),
            WallTime(seconds: 1_795_000_000, nanoseconds: 500_000_000),
            WallTime(seconds: 1_795_000_001, nanoseconds: 0), WallTime(seconds: 1_795_046_399, nanoseconds: 999_000_000),
            WallTime(seconds: 1_795_046_400, nanoseconds: 0),
        ]
        for round in 0..<2 {
            for (i, (f, duration, includeQuery)) in Self.facts.enumerated() {
                let now = nows[(i + round) % nows.count]
                let nanoseconds = duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000
                builder.build(f, nanoseconds: nanoseconds, now: now, header: header, includeQuery: includeQuery)
                let record = AccessLogRecord.make(
                    method: f.method, target: f.target, route: f.route, status: f.status, upstreamStatus: f.upstreamStatus,
                    bytesIn: f.bytesIn, bytesOut: f.bytesOut, duration: duration, replays: f.replays, generation: f.generation,
                    traceparent: f.traceparent, includeQuery: includeQuery, time: f.arrival.date)
                let expected = JSONLogHandler.line(
                    time: now.date, level: .info, label: "authgate.access", message: "access", members: record.appendMembers)
                #expect(String(decoding: builder.bytes, as: UTF8.self) == String(decoding: expected, as: UTF8.self))
                _ = try #require(JSONSerialization.jsonObject(with: Data(builder.bytes.dropLast())) as? [String: Any])
            }
        }
    }

    @Test func aThreadKeepsOneBuilder() {
        #expect(AccessLogLine.forThisThread() === AccessLogLine.forThisThread())
    }

    @Test func onlyAuthGatesOwnHandlerWithoutMetadataIsWrittenDirectly() {
        let own = Logger(label: "authgate.access") { JSONLogHandler(label: $0) }
        #expect(AccessLog(nil, logger: own)?.direct == true)
        var withMetadata = own
        withMetadata[metadataKey: "pod"] = "a"
        #expect(AccessLog(nil, logger: withMetadata)?.direct == false)
        var quiet = own
        quiet.logLevel = .warning
        #expect(AccessLog(nil, logger: quiet)?.direct == false)
        #expect(AccessLog(nil, logger: Logger(label: "x") { _ in SwiftLogNoOpLogHandler() })?.direct == false)
    }
}
