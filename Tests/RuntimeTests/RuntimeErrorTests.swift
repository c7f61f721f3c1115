import CCurl
import Glibc
import Testing

@testable import Runtime

/// The error shape: stable codes, the mapping of libcurl's codes, and descriptions that
/// hold no secret.
@Suite struct RuntimeErrorTests {
    @Test func codesKeepTheTextProblemDocumentsAndMetricsCarry() {
        #expect(Set(RuntimeError.Code.all.map(\.description)).count == RuntimeError.Code.all.count)
        #expect(RuntimeError.Code.connectFailed.description == "upstream-connect-failed")
        #expect(RuntimeError.Code.connectionReset.description == "upstream-connection-reset")
        #expect(RuntimeError.Code.tls.description == "upstream-tls-failed")
        #expect(RuntimeError.Code.timeout.description == "upstream-timeout")
        #expect(RuntimeError.Code.invalidResponse.description == "upstream-invalid-response")
        #expect(RuntimeError.Code.responseTooLarge.description == "upstream-response-too-large")
        #expect(RuntimeError.Code.cancelled.description == "upstream-cancelled")
        #expect(RuntimeError.Code.invalidRequest.description == "upstream-invalid-request")
        #expect(RuntimeError.Code.upstreamFailed.description == "upstream-failed")
        #expect(RuntimeError.Code.all.filter(\.isUpstream).count == 9)
        #expect(RuntimeError.Code.requestBodyTooLarge.description == "request-body-too-large")
        #expect(RuntimeError.Code.clientDisconnected.description == "client-disconnected")
    }

    @Test func theClientsSideOfARequestFailsWithItsOwnCodesAndStatuses() async throws {
        let tooLarge = RuntimeError.requestBodyTooLarge(limit: 16)
        #expect(tooLarge.status == 413 && tooLarge.description == "request-body-too-large: the request body is over 16 bytes")
        #expect(RuntimeError.clientDisconnected.status == 499)
        let loop = try EventLoop(name: "body-test")
        loop.start()
        defer { loop.shutdown() }
        let stream = await withCheckedContinuation { c in
            loop.execute {
                let stream = BodyStream(loop: loop, highWater: 64)
                for byte in [UInt8(1), 2] { [UInt8](repeating: byte, count: 10).withUnsafeBytes { stream.append($0) } }
                stream.finish()
                c.resume(returning: stream)
            }
        }
        await #expect(throws: tooLarge) { _ = try await stream.collect(maxBytes: 16) }
    }

    @Test func upstreamErrorsAnswer504ForATimeoutAnd502OtherwiseWithTheirCodeAsProblemType() {
        let timeout = RuntimeError.upstream(.timeout, "the upstream did not answer in time")
        #expect(timeout.status == 504)
        #expect(timeout.problem.type == "https://authgate.dev/problems/upstream-timeout")
        #expect(timeout.problem.detail == "the upstream did not answer in time")
        for code in RuntimeError.Code.all where code.isUpstream && code != .timeout {
            #expect(RuntimeError.upstream(code, "x").status == 502, "\(code)")
        }
    }

    @Test func curlMultiCodesMapToCurlFailedWithLibcurlsReason() {
        let cases: [(CURLMcode, String)] = [
            (CURLM_BAD_HANDLE, "Invalid multi handle"), (CURLM_BAD_EASY_HANDLE, "Invalid easy handle"),
            (CURLM_OUT_OF_MEMORY, "Out of memory"), (CURLM_ADDED_ALREADY, "already added"),
            (CURLM_RECURSIVE_API_CALL, "API function called from within callback"),
        ]
        for (code, reason) in cases {
            let error = RuntimeError.curlMulti(code, "curl_multi_add_handle")
            #expect(error.code == .curlFailed)
            #expect(error.curlCode == Int32(code.rawValue))
            #expect(error.operation == "curl_multi_add_handle")
            #expect(error.message.contains(reason), "\(error)")
            #expect(error.description.hasPrefix("libcurl-failed: curl_multi_add_handle failed"), "\(error)")
        }
    }

    @Test func curlTransferResultsMapToUpstreamCodes() {
        let cases: [(CURLcode, RuntimeError.Code)] = [
            (CURLE_OPERATION_TIMEDOUT, .timeout), (CURLE_COULDNT_CONNECT, .connectFailed),
            (CURLE_COULDNT_RESOLVE_HOST, .connectFailed), (CURLE_RECV_ERROR, .connectionReset),
            (CURLE_GOT_NOTHING, .connectionReset), (CURLE_HTTP2_STREAM, .connectionReset),
            (CURLE_PEER_FAILED_VERIFICATION, .tls), (CURLE_SSL_CONNECT_ERROR, .tls),
            (CURLE_WEIRD_SERVER_REPLY, .invalidResponse), (CURLE_BAD_CONTENT_ENCODING, .invalidResponse),
            (CURLE_WRITE_ERROR, .upstreamFailed), (CURLE_OUT_OF_MEMORY, .upstreamFailed),
        ]
        for (result, code) in cases {
            let error = CurlTransfer.classify(result)
            #expect(error.code == code, "\(result)")
            #expect(error.curlCode == Int32(result.rawValue))
        }
    }

    @Test func libuvAndSystemErrorsNameTheCallAndTheReason() {
        let uv = RuntimeError.libuv(-EADDRINUSE, "uv_tcp_bind")
        #expect(uv.description == "libuv-failed: uv_tcp_bind failed: EADDRINUSE (address already in use)")
        #expect(uv.systemCodeName == "EADDRINUSE")
        let system = RuntimeError.system(errno: EPERM, "prctl(PR_SET_DUMPABLE)")
        #expect(system.code == .systemCallFailed)
        #expect(system.systemCode == -EPERM)
        let listen = RuntimeError.listen(-EEXIST, "listen unix:/run/a.sock", reason: "not a socket")
        #expect(listen.description == "listen-failed: listen unix:/run/a.sock failed: EEXIST (file already exists): not a socket")
    }

    @Test func descriptionsDropUserInformationQueriesAndFragmentsOfURLs() {
        let error = RuntimeError.upstream(
            .connectFailed, "could not reach https://user:s3cret@api.example.com:8443/v1/items?token=abc#frag nor http://h/?k=v",
            underlying: .upstream(.timeout, "see https://x.example/p?access_token=zzz"))
        let text = error.description
        #expect(text.contains("https://api.example.com:8443/v1/items"))
        #expect(text.contains("http://h/"))
        #expect(text.contains("https://x.example/p"))
        for secret in ["user", "s3cret", "token=abc", "frag", "k=v", "access_token", "zzz"] {
            #expect(!text.contains(secret), "\(secret) in \(text)")
        }
        #expect(RuntimeError.redactingURLs("no URL here") == "no URL here")
    }

    @Test func equalityIgnoresTheUnderlyingError() {
        let a = RuntimeError.upstream(.upstreamFailed, "libcurl failed", underlying: .curlMulti(CURLM_OUT_OF_MEMORY, "x"))
        let b = RuntimeError.upstream(.upstreamFailed, "libcurl failed")
        #expect(a == b)
        #expect(a != RuntimeError.upstream(.timeout, "libcurl failed"))
    }
}
