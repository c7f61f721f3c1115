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

    /// The checks over bytes in memory (a word at a time for values) say what the
    /// byte-by-byte definitions say: every byte value at every position of every length
    /// up to 24, and random runs of mostly valid bytes.
    @Test func theChecksOverMemoryAgreeWithTheDefinitions() {
        func agree(_ bytes: [UInt8]) {
            bytes.withUnsafeBufferPointer { p in
                #expect(FramingRules.isValidFieldValue(p) == bytes.allSatisfy(FramingRules.isFieldValueByte), "\(bytes)")
                #expect(
                    FramingRules.isValidFieldName(p) == (!bytes.isEmpty && bytes.allSatisfy(FramingRules.isTokenByte)), "\(bytes)"
                )
            }
        }
        for length in 0...24 {
            for position in 0..<max(length, 1) {
                for b in UInt8.min...UInt8.max {
                    var bytes = [UInt8](repeating: 0x61, count: length)
                    if length > 0 { bytes[position] = b }
                    agree(bytes)
                }
            }
        }
        var rng = SystemRandomNumberGenerator()
        let pool: [UInt8] = Array(0x20...0x7E) + [0x09, 0x80, 0xC3, 0xFF, 0x00, 0x0A, 0x0D, 0x7F, 0x1F]
        for _ in 0..<3000 {
            let length = Int.random(in: 0...70, using: &rng)
            agree(
                (0..<length).map { _ in
                    Int.random(in: 0..<100, using: &rng) < 97
                        ? pool[Int.random(in: 0..<96, using: &rng)] : pool.randomElement(using: &rng)!
                })
        }
    }

    /// What `requestFraming` decided: a framing, or a refusal with its code and status.
    enum Decision: Equatable {
        case framing(BodyFraming)
        case refused(WireError.Code, Int)
    }

    @Test func framingDecisionTable() throws {
        let cases: [([(String, String)], Int, Decision)] = [
            ([], 1, .framing(.none)),
            ([("Content-Length", "0")], 1, .framing(.none)),
            ([("Content-Length", "42")], 1, .framing(.length(42))),
            ([("content-length", " 42 ")], 1, .framing(.length(42))),
            ([("Transfer-Encoding", "chunked")], 1, .framing(.chunked)),
            ([("Transfer-Encoding", "Chunked")], 1, .framing(.chunked)),
            ([("Transfer-Encoding", "chunked")], 0, .refused(.unsupportedTransferEncoding, 400)),
            ([("Transfer-Encoding", "gzip")], 1, .refused(.unsupportedTransferEncoding, 501)),
            ([("Transfer-Encoding", "gzip, chunked")], 1, .refused(.unsupportedTransferEncoding, 501)),
            (
                [("Transfer-Encoding", "chunked"), ("Transfer-Encoding", "chunked")], 1,
                .refused(.unsupportedTransferEncoding, 501)
            ),
            ([("Transfer-Encoding", "chunked"), ("Content-Length", "1")], 1, .refused(.conflictingFraming, 400)),
            ([("Content-Length", "1"), ("Content-Length", "1")], 1, .refused(.duplicateContentLength, 400)),
            ([("Content-Length", "1,1")], 1, .refused(.invalidContentLength, 400)),
            ([("Content-Length", "")], 1, .refused(.invalidContentLength, 400)),
            ([("Content-Length", "1e3")], 1, .refused(.invalidContentLength, 400)),
            ([("Content-Length", "-5")], 1, .refused(.invalidContentLength, 400)),
            ([("Content-Length", "1234567890123456789")], 1, .refused(.invalidContentLength, 400)),
            ([("Content-Length", "123456789012345678")], 1, .framing(.length(123_456_789_012_345_678))),
        ]
        for (fields, minor, expected) in cases {
            let decision: Decision
            do throws(WireError) {
                decision = .framing(try FramingRules.requestFraming(headers: headers(fields), major: 1, minor: minor))
            } catch {
                decision = .refused(error.code, error.status)
            }
            #expect(decision == expected, "\(fields) HTTP/1.\(minor)")
        }
    }

    @Test func versionsOtherThan10And11AreRefusedWith505() {
        for (major, minor) in [(0, 9), (1, 2), (2, 0), (3, 0)] {
            let error = #expect(throws: WireError.self) { try FramingRules.checkVersion(major: major, minor: minor) }
            #expect(error?.status == 505, "HTTP/\(major).\(minor)")
            #expect(error?.code == .unsupportedVersion, "HTTP/\(major).\(minor)")
        }
        #expect(throws: Never.self) { try FramingRules.checkVersion(major: 1, minor: 0) }
        #expect(throws: Never.self) { try FramingRules.checkVersion(major: 1, minor: 1) }
    }

    @Test func hostRules() {
        let missing = #expect(throws: WireError.self) { try FramingRules.checkHost(headers: headers([]), major: 1, minor: 1) }
        #expect(missing?.code == .missingHost && missing?.status == 400)
        #expect(throws: Never.self) { try FramingRules.checkHost(headers: headers([]), major: 1, minor: 0) }
        #expect(throws: Never.self) { try FramingRules.checkHost(headers: headers([("Host", "a")]), major: 1, minor: 1) }
        let twice = #expect(throws: WireError.self) {
            try FramingRules.checkHost(headers: headers([("Host", "a"), ("host", "b")]), major: 1, minor: 1)
        }
        #expect(twice?.code == .duplicateHost && twice?.status == 400)
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
        #expect(try !FramingRules.expectsContinue(headers: headers([]), major: 1, minor: 1))
        let unknown = #expect(throws: WireError.self) {
            try FramingRules.expectsContinue(headers: headers([("Expect", "x")]), major: 1, minor: 1)
        }
        #expect(unknown?.code == .expectationFailed && unknown?.status == 417)
    }

    @Test func problemJSONEscapesEverything() {
        let p = Problem(type: "t", title: "T", status: 400, detail: "a\"b\\c\n\u{01}")
        #expect(String(decoding: p.json, as: UTF8.self) == #"{"type":"t","title":"T","status":400,"detail":"a\"b\\c\n\u0001"}"#)
    }
}
