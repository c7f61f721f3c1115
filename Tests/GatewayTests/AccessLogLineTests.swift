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
