public import AuthCore
import HTTPWire
public import Runtime

/// ``AuthCore/HTTPTransport`` over the libcurl upstream client: token-endpoint calls run
/// on an event loop like every other exchange.
public struct CurlTransport: HTTPTransport {
    let client: UpstreamClient
    let maxResponseBytes: Int

    /// Creates a transport over `client`.
    public init(client: UpstreamClient, maxResponseBytes: Int = 1 << 20) {
        self.client = client
        self.maxResponseBytes = maxResponseBytes
    }

    /// Sends `request` on the client's loop and returns the whole answer.
    public func send(_ request: HTTPRequestValue) async throws -> HTTPResponseValue {
        var headers = HTTPHeaders()
        for (name, value) in request.headers { headers.add(name: name, value: value) }
        let trace = TokenEndpointTrace(method: request.method, url: request.url, headers: &headers)
        let upstream = UpstreamRequest(
            method: request.method, url: request.url, headers: headers,
            body: request.body.isEmpty && request.method == "GET" ? .none : .bytes(request.body),
            clientIdentity: request.clientCertificate.map {
                TLSClientIdentity(certificateFile: $0.certificateFile, keyFile: $0.keyFile)
            })
        do {
            let r = try await client.send(upstream, maxBodyBytes: maxResponseBytes)
            trace?.end(status: r.status)
            return HTTPResponseValue(status: r.status, headers: r.headers.fields, body: r.body)
        } catch {
            trace?.end(status: nil, error: error.code.description)
            switch error.code {
            case .connectFailed, .tls, .invalidRequest: throw AuthError.transport(.connectFailed, error.message)
            case .timeout: throw AuthError.transport(.timeout, error.message)
            case .connectionReset, .invalidResponse, .responseTooLarge: throw AuthError.transport(.connectionLost, error.message)
            default: throw AuthError.transport(.other, error.message)
            }
        }
    }
}
