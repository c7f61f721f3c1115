import HTTPWire
import Testing

@Suite struct FramingRulesTests {
    private func headers(_ pairs: [(String, String)]) -> HTTPHeaders { HTTPHeaders(pairs.map { ($0.0, $0.1) }) }

    @Test func tokenBytesAreExactlyRFC9110Tchar() {
        let tchar = Set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)
        for b in UInt8.min...UInt8.max {
            #expect(FramingRules.isTokenByte(b) == tchar.contains(b), "byte \(b)")
        }
    }

    @Test func fieldValuesAllowVisibleSpaceTabAndObsTextOnly() {
        for b in UInt8.min...UInt8.max {
            let expected = b == 0x09 || (b >= 0x20 && b != 0x7F)
            #expect(FramingRules.isValidFieldValue([0x61, b, 0x62]) == expected, "byte \(b)")
        }
        #expect(FramingRules.isValidFieldName([UInt8]()) == false)
    }

    @Test func framingDecisionTable() throws {
        let cases: [([(String, String)], Int, BodyFraming?)] = [
            ([], 1, BodyFraming.none),
            ([("Content-Length", "0")], 1, BodyFraming.none),
            ([("Content-Length", "42")], 1, .length(42)),
            ([("content-length", " 42 ")], 1, .length(42)),
            ([("Transfer-Encoding", "chunked")], 1, .chunked),
            ([("Transfer-Encoding", "Chunked")], 1, .chunked),
            ([("Transfer-Encoding", "chunked")], 0, nil),
            ([("Transfer-Encoding", "gzip")], 1, nil),
            ([("Transfer-Encoding", "gzip, chunked")], 1, nil),
            ([("Transfer-Encoding", "chunked"), ("Transfer-Encoding", "chunked")], 1, nil),
            ([("Transfer-Encoding", "chunked"), ("Content-Length", "1")], 1, nil),
            ([("Content-Length", "1"), ("Content-Length", "1")], 1, nil),
            ([("Content-Length", "1,1")], 1, nil),
            ([("Content-Length", "")], 1, nil),
            ([("Content-Length", "1e3")], 1, nil),
            ([("Content-Length", "-5")], 1, nil),
            ([("Content-Length", "1234567890123456789")], 1, nil),
            ([("Content-Length", "123456789012345678")], 1, .length(123_456_789_012_345_678)),
        ]
        for (fields, minor, expected) in cases {
            let result = try? FramingRules.requestFraming(headers: headers(fields), major: 1, minor: minor)
            #expect(result == expected, "\(fields) HTTP/1.\(minor)")
        }
    }

    @Test func versionsOtherThan10And11AreRefusedWith505() {
        for (major, minor) in [(0, 9), (1, 2), (2, 0), (3, 0)] {
            #expect(throws: WireError.self) { try FramingRules.checkVersion(major: major, minor: minor) }
        }
        #expect(throws: Never.self) { try FramingRules.checkVersion(major: 1, minor: 0) }
        #expect(throws: Never.self) { try FramingRules.checkVersion(major: 1, minor: 1) }
    }

    @Test func hostRules() {
        #expect(throws: WireError.self) { try FramingRules.checkHost(headers: headers([]), major: 1, minor: 1) }
        #expect(throws: Never.self) { try FramingRules.checkHost(headers: headers([]), major: 1, minor: 0) }
        #expect(throws: WireError.self) {
            try FramingRules.checkHost(headers: headers([("Host", "a"), ("host", "b")]), major: 1, minor: 1)
        }
    }

    @Test func keepAliveRules() {
        #expect(FramingRules.keepAlive(headers: headers([]), major: 1, minor: 1))
        #expect(!FramingRules.keepAlive(headers: headers([("Connection", "close")]), major: 1, minor: 1))
        #expect(!FramingRules.keepAlive(headers: headers([("Connection", "foo, Close")]), major: 1, minor: 1))
        #expect(!FramingRules.keepAlive(headers: headers([]), major: 1, minor: 0))
        #expect(FramingRules.keepAlive(headers: headers([("Connection", "Keep-Alive")]), major: 1, minor: 0))
    }

    @Test func expectRules() throws {
        #expect(try FramingRules.expectsContinue(headers: headers([("Expect", "100-Continue")]), major: 1, minor: 1))
        #expect(try !FramingRules.expectsContinue(headers: headers([("Expect", "100-continue")]), major: 1, minor: 0))
        #expect(throws: WireError.self) {
            try FramingRules.expectsContinue(headers: headers([("Expect", "x")]), major: 1, minor: 1)
        }
    }

    @Test func problemJSONEscapesEverything() {
        let p = Problem(type: "t", title: "T", status: 400, detail: "a\"b\\c\n\u{01}")
        #expect(String(decoding: p.json, as: UTF8.self) == #"{"type":"t","title":"T","status":400,"detail":"a\"b\\c\n\u0001"}"#)
    }
}
