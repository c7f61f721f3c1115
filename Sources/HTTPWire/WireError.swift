/// Why a request was refused before it reached a handler.
///
/// Each case carries the HTTP status to answer with, a stable machine code and a
/// human sentence for the problem+json `detail`. None of them quotes header values,
/// so a credential in a malformed header never leaks into an error body.
public struct WireError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Stable codes, one per kind of refusal.
    public enum Code: String, Sendable, CaseIterable {
        case malformedRequest = "malformed-request"
        case invalidMethod = "invalid-method"
        case methodNotImplemented = "method-not-implemented"
        case invalidTarget = "invalid-target"
        case targetTooLong = "target-too-long"
        case headTooLarge = "head-too-large"
        case tooManyHeaders = "too-many-headers"
        case invalidHeaderName = "invalid-header-name"
        case invalidHeaderValue = "invalid-header-value"
        case obsoleteLineFolding = "obsolete-line-folding"
        case bareCarriageReturn = "bare-carriage-return"
        case nulByte = "nul-byte"
        case unsupportedVersion = "unsupported-version"
        case conflictingFraming = "conflicting-framing"
        case invalidContentLength = "invalid-content-length"
        case duplicateContentLength = "duplicate-content-length"
        case unsupportedTransferEncoding = "unsupported-transfer-encoding"
        case invalidChunk = "invalid-chunk"
        case missingHost = "missing-host"
        case duplicateHost = "duplicate-host"
        case bodyTooLarge = "body-too-large"
        case expectationFailed = "expectation-failed"
        case headTimeout = "head-timeout"
        case bodyTimeout = "body-timeout"
        case upgradeUnsupported = "upgrade-unsupported"
        case overloaded = "overloaded"
    }

    /// The stable code.
    public let code: Code
    /// The status to answer with.
    public let status: Int
    /// A sentence saying what was wrong.
    public let detail: String

    /// Creates an error.
    public init(_ code: Code, status: Int, _ detail: String) {
        self.code = code
        self.status = status
        self.detail = detail
    }

    public var description: String { "\(status) \(code.rawValue): \(detail)" }

    /// The problem+json `type` URI for this error.
    public var typeURI: String { "https://authgate.dev/problems/\(code.rawValue)" }

    /// The problem+json body for this error.
    public var problem: Problem {
        Problem(type: typeURI, title: Problem.title(forStatus: status), status: status, detail: detail)
    }
}
