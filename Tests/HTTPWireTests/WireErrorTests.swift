import HTTPWire
import Testing

/// The wire refusals' codes are the problem `type`s clients see: this table is what they
/// are, and none of the refusals repeats a header value.
@Suite struct WireErrorTests {
    static let codes = [
        "malformed-request", "invalid-method", "method-not-implemented", "invalid-target", "target-too-long",
        "head-too-large", "too-many-headers", "invalid-header-name", "invalid-header-value", "obsolete-line-folding",
        "bare-carriage-return", "nul-byte", "unsupported-version", "conflicting-framing", "invalid-content-length",
        "duplicate-content-length", "unsupported-transfer-encoding", "invalid-chunk", "missing-host", "duplicate-host",
        "body-too-large", "expectation-failed", "head-timeout", "body-timeout", "upgrade-unsupported", "overloaded",
    ]

    @Test func codesAreStable() {
        #expect(WireError.Code.allCases.map(\.rawValue) == Self.codes)
        for code in WireError.Code.allCases {
            let error = WireError(code, status: 400, "refused")
            #expect(error.typeURI == "https://authgate.dev/problems/\(code.rawValue)")
            #expect(error.description == "400 \(code.rawValue): refused")
        }
    }

    @Test func aCredentialInAHeaderIsNotRepeated() throws {
        let token = "eyJhbGciOiJIUzI1NiJ9.c2VjcmV0LXRva2VuLTEyMzQ1"
        let bytes = Array("GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(token)\u{1}\r\n\r\n".utf8)
        let error = try #require(parseAll(bytes, splitEvery: bytes.count).error, "a control character is refused")
        #expect(!"\(error)".contains(token))
        #expect(!String(decoding: error.problem.json, as: UTF8.self).contains(token))
    }
}
