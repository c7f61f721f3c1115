import AuthCore
import Foundation
import HTTPWire
import Testing

@testable import Gateway

/// The problem documents for errors met while serving a request: a 503 names what failed.
@Suite struct GatewayProblemTests {
    private func document(_ error: AuthError) throws -> (Problem, [String: Any], HTTPHeaders) {
        let (problem, headers) = GatewayProblem.forAuthError(error)
        let json = try #require(JSONSerialization.jsonObject(with: Data(problem.json)) as? [String: Any])
        return (problem, json, headers)
    }

    @Test func aRefreshTheStoreCouldNotCoordinateBlamesTheStore() throws {
        let cause = AuthError.store(.unavailable, .tokens, account: AccountID("default"), message: "PostgreSQL did not answer")
        for error in [
            AuthError.refreshFailed(retryAfter: .seconds(3), cause: cause),
            AuthError.backingOff(retryAfter: .seconds(3), lastError: cause),
        ] {
            let (problem, json, headers) = try document(error)
            #expect(problem.status == 503)
            #expect(json["type"] as? String == "https://authgate.dev/problems/refresh-unavailable")
            #expect(json["cause"] as? String == "token-store")
            let detail = try #require(json["detail"] as? String)
            #expect(detail.contains("token store"), "\(detail)")
            #expect(!detail.contains("authorization server"), "\(detail)")
            #expect(headers[first: "Retry-After"] == "3")
        }
    }

    @Test func aReplicaWhoseCertificateIsOlderThanTheTokensSaysSoWithRetryAfter() throws {
        let (problem, json, headers) = try document(AuthError.clientCertificateOutdated(retryAfter: .seconds(10)))
        #expect(problem.status == 503)
        #expect(json["type"] as? String == "https://authgate.dev/problems/client-certificate-outdated")
        let detail = try #require(json["detail"] as? String)
        #expect(detail.contains("newer client certificate than this replica's"), "\(detail)")
        #expect(headers[first: "Retry-After"] == "10")
    }

    @Test func aRefreshTheServerFailedBlamesTheServer() throws {
        let cause = AuthError.tokenEndpoint(.serverError, .transient, status: 503)
        for error in [
            AuthError.refreshFailed(retryAfter: .seconds(1), cause: cause),
            AuthError.backingOff(retryAfter: .milliseconds(200), lastError: cause),
            AuthError.backingOff(retryAfter: .seconds(2), lastError: nil),
        ] {
            let (problem, json, headers) = try document(error)
            #expect(problem.status == 503)
            #expect(json["cause"] as? String == "authorization-server")
            #expect((json["detail"] as? String)?.contains("authorization server") == true)
            #expect(headers[first: "Retry-After"] != nil)
        }
    }
}
