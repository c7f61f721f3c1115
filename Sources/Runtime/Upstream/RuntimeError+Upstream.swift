import CCurl
public import HTTPWire

extension RuntimeError {
    /// An upstream exchange ended with `code` (one of the `upstream-…` codes).
    public static func upstream(
        _ code: Code, _ message: String, curlCode: Int32? = nil, underlying: RuntimeError? = nil
    ) -> RuntimeError {
        precondition(code.isUpstream, "\(code) is not an upstream code")
        return RuntimeError(code, message, curlCode: curlCode, underlying: underlying)
    }

    /// A libcurl easy call returned `code`.
    static func curl(_ code: CURLcode, _ operation: String) -> RuntimeError {
        RuntimeError(
            .curlFailed, String(cString: curl_easy_strerror(code)), operation: operation, curlCode: Int32(code.rawValue))
    }

    /// A libcurl multi call returned `code`.
    static func curlMulti(_ code: CURLMcode, _ operation: String) -> RuntimeError {
        RuntimeError(
            .curlFailed, String(cString: curl_multi_strerror(code)), operation: operation, curlCode: Int32(code.rawValue))
    }

    /// The status a client gets for this failure: 504 for an upstream timeout, 413 for a
    /// request body over its limit, 499 (nobody to tell) for a client that left, 502 for
    /// everything else.
    public var status: Int {
        switch code {
        case .timeout: 504
        case .requestBodyTooLarge: 413
        case .clientDisconnected: 499
        default: 502
        }
    }

    /// The problem+json document a client gets for an upstream failure: its type names
    /// the code, its detail is the ``message``.
    public var problem: Problem {
        Problem(
            type: "https://authgate.dev/problems/\(code)", title: ResponseHead.reason(for: status), status: status,
            detail: message)
    }
}
