import AuthCore
public import Foundation
import HTTPWire
public import Logging

/// One line of the access log: what the proxy knew about a request when it ended. Never a
/// token, a header value other than the trace id, or a query unless asked for (and then with
/// the values of credential-carrying parameters redacted).
///
/// Built by ``make(method:target:route:status:upstreamStatus:bytesIn:bytesOut:duration:replays:generation:traceparent:includeQuery:time:)``,
/// a pure function (`AccessLogTests`); written as swift-log metadata under the same names.
public struct AccessLogRecord: Sendable, Codable, Equatable {
    /// When the request arrived (RFC 3339, UTC, milliseconds).
    public var time: String
    /// The request method.
    public var method: String
    /// The prefix of the route that served it; nil when none did (404, liveness).
    public var route: String?
    /// The path, without the query (nor, for an absolute-form target, the scheme and
    /// authority; nor a fragment).
    public var path: String
    /// The query, only with `includeQuery` (credentials redacted).
    public var query: String?
    /// The status the client got.
    public var status: Int
    /// The status the upstream answered with; nil when no answer came (a refusal by AuthGate, a
    /// failure).
    public var upstreamStatus: Int?
    /// Request body bytes sent upstream, when known (nil: a streamed chunked body).
    public var bytesIn: Int?
    /// Response body bytes from the upstream that reached the client.
    public var bytesOut: Int
    /// From arrival to the end of the answer, in milliseconds.
    public var durationMs: Double
    /// How many times the request was replayed after a rejected token.
    public var replayed: Int
    /// The generation of the last token the request carried, on an authenticated route.
    public var tokenGeneration: UInt64?
    /// The W3C trace id of the client's `traceparent`, when it sent a valid one.
    public var traceID: String?

    /// Query parameters whose values are never logged.
    static let secretParameters: Set<String> = [
        "access_token", "refresh_token", "id_token", "token", "code", "client_secret", "password", "api_key", "apikey",
        "key", "secret", "signature", "sig", "x-amz-signature", "x-goog-signature", "assertion", "client_assertion",
    ]

    /// The record of a request; see the properties for each argument.
    public static func make(
        method: String, target: String, route: String?, status: Int, upstreamStatus: Int?, bytesIn: Int?, bytesOut: Int,
        duration: Duration, replays: Int, generation: UInt64?, traceparent: String?, includeQuery: Bool, time: Date
    ) -> AccessLogRecord {
        let (path, query) = AccessLogTarget.parts(target)
        return AccessLogRecord(
            time: RFC3339.format(time, milliseconds: true),
            method: method, route: route, path: path,
            query: includeQuery ? query.map(redacted) : nil, status: status, upstreamStatus: upstreamStatus,
            bytesIn: bytesIn, bytesOut: bytesOut, durationMs: AccessLogText.milliseconds(duration), replayed: replays,
            tokenGeneration: generation, traceID: traceparent.flatMap(traceID))
    }

    /// `query` with the value of every credential-carrying parameter replaced by `REDACTED`.
    static func redacted(_ query: String) -> String {
        query.split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
            let name = pair.prefix { $0 != "=" }
            let decoded = (String(name).removingPercentEncoding ?? String(name)).lowercased()
            guard secretParameters.contains(decoded), name.count < pair.count else { return String(pair) }
            return "\(name)=REDACTED"
        }.joined(separator: "&")
    }

    /// The trace id of a W3C `traceparent` (`00-<32 hex>-<16 hex>-<2 hex>`), nil when the
    /// field is not one (or the id is all zeros, which the standard calls invalid).
    static func traceID(_ traceparent: String) -> String? {
        let parts = traceparent.trimmingCharacters(in: .whitespaces).split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count >= 4, parts[0].count == 2, parts[0] != "ff", parts[1].count == 32, parts[2].count == 16,
            parts[3].count == 2, parts[0...3].allSatisfy({ $0.allSatisfy(\.isLowercaseHex) })
        else { return nil }
        guard parts[1].contains(where: { $0 != "0" }), parts[2].contains(where: { $0 != "0" }) else { return nil }
        if parts[0] == "00" && parts.count != 4 { return nil }
        return String(parts[1])
    }

    /// Appends the record's members as ``JSONLogHandler`` writes ``metadata``: `,"name":value`
    /// for each non-nil property, in name order (the reference ``AccessLogLine`` is tested against).
    func appendMembers(to line: inout [UInt8]) {
        func name(_ n: StaticString) {
            line.append(0x2C)
            line.append(0x22)
            line.append(contentsOf: UnsafeBufferPointer(start: n.utf8Start, count: n.utf8CodeUnitCount))
            line.append(0x22)
            line.append(0x3A)
        }
        func number(_ n: StaticString, _ value: (some BinaryInteger)?) {
            guard let value else { return }
            name(n)
            line.appendDecimal(value)
        }
        func text(_ n: StaticString, _ value: String?) {
            guard let value else { return }
            name(n)
            Problem.appendQuoted(value, to: &line)
        }
        number("bytesIn", bytesIn)
        number("bytesOut", bytesOut)
        name("durationMs")
        if durationMs.isFinite {
            line.append(contentsOf: "\(durationMs)".utf8)
        } else {
            Problem.appendQuoted("\(durationMs)", to: &line)
        }
        text("method", method)
        text("path", path)
        text("query", query)
        number("replayed", replayed)
        text("route", route)
        number("status", status)
        text("time", time)
        number("tokenGeneration", tokenGeneration)
        text("traceID", traceID)
        number("upstreamStatus", upstreamStatus)
    }

    /// The record as swift-log metadata, one entry per non-nil property, under its name.
    public var metadata: Logger.Metadata {
        var m: Logger.Metadata = [
            "time": .string(time), "method": .string(method), "path": .string(path), "status": .stringConvertible(status),
            "bytesOut": .stringConvertible(bytesOut), "durationMs": .stringConvertible(durationMs),
            "replayed": .stringConvertible(replayed),
        ]
        if let route { m["route"] = .string(route) }
        if let query { m["query"] = .string(query) }
        if let upstreamStatus { m["upstreamStatus"] = .stringConvertible(upstreamStatus) }
        if let bytesIn { m["bytesIn"] = .stringConvertible(bytesIn) }
        if let tokenGeneration { m["tokenGeneration"] = .stringConvertible(tokenGeneration) }
        if let traceID { m["traceID"] = .string(traceID) }
        return m
    }
}

extension Character {
    fileprivate var isLowercaseHex: Bool { ("0"..."9").contains(self) || ("a"..."f").contains(self) }
}
