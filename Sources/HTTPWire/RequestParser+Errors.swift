private import CHTTPParser

extension RequestParser {
    /// The error for what http-parser refused; `sawTransferEncoding` tells a second
    /// `Content-Length` from one beside `Transfer-Encoding`.
    /// (`http_errno` as its raw value: the C type stays private to the files that import it.)
    static func error(forErrno raw: UInt32, limits: HTTPLimits, sawTransferEncoding: Bool) -> WireError {
        switch http_errno(rawValue: raw) {
        case HPE_INVALID_METHOD:
            return WireError(.invalidMethod, status: 400, "the request method is not recognised")
        case HPE_INVALID_VERSION:
            return WireError(.unsupportedVersion, status: 505, "the HTTP version is malformed or unsupported")
        case HPE_INVALID_URL, HPE_INVALID_HOST, HPE_INVALID_PORT, HPE_INVALID_PATH, HPE_INVALID_QUERY_STRING,
            HPE_INVALID_FRAGMENT:
            return WireError(.invalidTarget, status: 400, "the request target is not valid")
        case HPE_HEADER_OVERFLOW:
            return WireError(.headTooLarge, status: 431, "the request head exceeds \(limits.maxHeadBytes) bytes")
        case HPE_INVALID_HEADER_TOKEN:
            return WireError(.invalidHeaderName, status: 400, "a header field contains an invalid character")
        case HPE_INVALID_CONTENT_LENGTH:
            return WireError(.invalidContentLength, status: 400, "Content-Length must be a decimal number")
        case HPE_UNEXPECTED_CONTENT_LENGTH:
            if sawTransferEncoding {
                return WireError(
                    .conflictingFraming, status: 400, "Transfer-Encoding and Content-Length must not both be present")
            }
            return WireError(.duplicateContentLength, status: 400, "more than one Content-Length header")
        case HPE_INVALID_TRANSFER_ENCODING:
            return WireError(.unsupportedTransferEncoding, status: 501, "only a single Transfer-Encoding: chunked is supported")
        case HPE_INVALID_CHUNK_SIZE:
            return WireError(.invalidChunk, status: 400, "a chunk size line is malformed")
        case HPE_LF_EXPECTED:
            return WireError(.bareCarriageReturn, status: 400, "a CR is not followed by LF")
        default:
            return WireError(.malformedRequest, status: 400, "the request is not valid HTTP/1.1")
        }
    }
}
