import Foundation
import Gateway
import Locking
import Logging
import TestSupport
import Testing

/// The access log: one record per proxied request with what the proxy knew at its end, and
/// never a token or a query secret; sampling 0 or `enabled: false` logs nothing.
@Suite struct AccessLogTests {
    /// Keeps each log event's message and metadata, for the records' fields.
    final class Records: Sendable {
        let events = Locked<[(message: String, metadata: Logger.Metadata)]>([])
        var logger: Logger { Logger(label: "authgate.access") { _ in Handler(sink: self) } }
        var access: [Logger.Metadata] { events.withLock { $0.filter { $0.message == "access" }.map(\.metadata) } }

        struct Handler: LogHandler {
            let sink: Records
            var logLevel: Logger.Level = .trace
            var metadata: Logger.Metadata = [:]
            subscript(metadataKey key: String) -> Logger.Metadata.Value? {
                get { metadata[key] }
                set { metadata[key] = newValue }
            }
            func log(event: LogEvent) {
                sink.events.withLock { $0.append(("\(event.message)", metadata.merging(event.metadata ?? [:]) { $1 })) }
            }
        }
    }

    static let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    // MARK: The record, without sockets

    static func record(_ target: String, includeQuery: Bool = false, traceparent: String? = nil) -> AccessLogRecord {
        AccessLogRecord.make(
            method: "GET", target: target, route: "/api/", status: 200, upstreamStatus: 200, bytesIn: 0, bytesOut: 12,
            duration: .milliseconds(1500), replays: 1, generation: 3, traceparent: traceparent, includeQuery: includeQuery,
            time: Date(timeIntervalSince1970: 0))
    }

    @Test func thePathIsLoggedWithoutTheQueryUnlessAskedFor() {
        let r = Self.record("/api/x?access_token=abc&page=2")
        #expect(r.path == "/api/x" && r.query == nil)
        #expect(r.durationMs == 1500 && r.replayed == 1 && r.tokenGeneration == 3)
        #expect(r.time == "1970-01-01T00:00:00.000Z")
    }

    /// An absolute-form target's user-info (`user:password@`) and any fragment never reach the
    /// log: only the path and, when asked for, the query.
    @Test(
        arguments: [
            ("http://alice:s3cret@api.example/x#frag", "/x", nil),
            ("http://alice:s3cret@api.example/x?page=1#frag", "/x", "page=1"),
            ("https://alice:s3cret@api.example", "/", nil),
            ("HTTP://alice:s3cret@api.example?page=1", "/", "page=1"),
            ("http://alice:s3cret@api.example#s3cret", "/", nil),
            ("/x#frag?no", "/x", nil),
            ("/x?a=1#s3cret", "/x", "a=1"),
            ("/http://alice:s3cret@x", "/http://alice:s3cret@x", nil),
        ] as [(String, String, String?)])
    func anAbsoluteTargetsUserInfoAndAFragmentAreNeverLogged(target: String, path: String, query: String?) {
        let r = Self.record(target, includeQuery: true)
        #expect(r.path == path && r.query == query, "\(target)")
    }

    @Test func anIncludedQueryHasItsCredentialsRedacted() {
        let r = Self.record("/api/x?access_token=abc&page=2&Client_Secret=s&code=c&codec=mp3&token", includeQuery: true)
        #expect(r.query == "access_token=REDACTED&page=2&Client_Secret=REDACTED&code=REDACTED&codec=mp3&token")
    }

    @Test(
        arguments: [
            (traceparent, "4bf92f3577b34da6a3ce929d0e0e4736"),
            ("00-00000000000000000000000000000000-00f067aa0ba902b7-01", nil),  // all-zero trace id
            ("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", nil),  // all-zero parent id
            ("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", nil),  // upper case
            ("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", nil),  // version ff
            ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x", nil),  // version 00 with more
            ("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x", "4bf92f3577b34da6a3ce929d0e0e4736"),
            ("garbage", nil),
        ] as [(String, String?)])
    func theTraceIDComesFromAValidTraceparentOnly(_ header: String, _ id: String?) {
        #expect(Self.record("/", traceparent: header).traceID == id)
    }

    @Test func samplingZeroOrDisabledMakesNoLog() {
        let logger = Records().logger
        #expect(AccessLog(.init(sample: 0), logger: logger) == nil)
        #expect(AccessLog(.init(enabled: false, sample: 100), logger: logger) == nil)
        #expect(AccessLog(nil, logger: logger)?.sample == 100)
    }

    // MARK: Through a real gateway

    @Test func aProxiedRequestGivesOneRecordWithItsFieldsAndNoSecret() async throws {
        try await Stack.run { stack in
            let records = Records()
            try await stack.startGateway(accessLogger: records.logger)
            #expect(try await stack.loginAlice().status == 200)
            let r = try await stack.proxy(
                "GET", "/data/items?access_token=leaked&page=2",
                headers: ["traceparent: \(Self.traceparent)", "Authorization: Bearer client-own-token"])
            #expect(r.status == 200)
            let p = try await stack.proxy("POST", "/public/echo", body: "hello")
            #expect(p.status == 200)
            #expect(await eventually { records.access.count == 2 })
            // Every value as text, as a handler prints it.
            let lines = records.access.map { $0.mapValues { "\($0)" } }
            #expect(lines.count == 2)
            let a = lines.first { $0["path"] == "/data/items" } ?? [:]
            #expect(a["method"] == "GET" && a["route"] == "/" && a["status"] == "200" && a["upstreamStatus"] == "200")
            #expect(a["query"] == nil && a["replayed"] == "0" && a["bytesIn"] == "0")
            #expect(a["traceID"] == "4bf92f3577b34da6a3ce929d0e0e4736")
            #expect(a["tokenGeneration"] != nil && a["durationMs"] != nil && a["time"] != nil)
            #expect(Int(a["bytesOut"] ?? "") == r.body.count)
            let b = lines.first { $0["path"] == "/public/echo" } ?? [:]
            #expect(b["route"] == "/public" && b["method"] == "POST" && b["bytesIn"] == "5" && b["tokenGeneration"] == nil)
            #expect(b["status"] == "200" && Int(b["bytesOut"] ?? "") == p.body.count)
            let text = lines.map { "\($0)" }.joined(separator: "\n")
            for secret in stack.api.seenTokens.union(["leaked", "client-own-token", "s3cret", Stack.adminToken]) {
                #expect(!text.contains(secret))
            }
        }
    }

    @Test func aRequestRefusedBeforeAnyRouteIsLoggedWithItsStatusAndNoRoute() async throws {
        try await Stack.run { stack in
            let records = Records()
            try await stack.startGateway(accessLogger: records.logger)
            let r = try await stack.proxy("GET", "/data/../admin?access_token=leaked")
            #expect(r.status == 400)
            #expect(await eventually { records.access.count == 1 })
            let line = records.access.first?.mapValues { "\($0)" } ?? [:]
            #expect(line["status"] == "400" && line["route"] == nil && line["upstreamStatus"] == nil)
            #expect(line["path"] == "/data/../admin" && line["method"] == "GET" && line["query"] == nil)
            #expect(!"\(line)".contains("leaked"))
            #expect(try await stack.proxy("GET", "/livez").status == 200)
            try await Task.sleep(for: .milliseconds(100))
            #expect(records.access.count == 1, "liveness probes are not logged")
        }
    }

    @Test func sampleZeroLogsNothing() async throws {
        try await Stack.run { stack in
            let records = Records()
            try await stack.startGateway(accessLogger: records.logger) { $0.accessLog = .init(sample: 0) }
            for _ in 0..<5 { #expect(try await stack.proxy("GET", "/public/x").status == 200) }
            #expect(records.access.isEmpty)
        }
    }
}
