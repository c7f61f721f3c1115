import AuthCore
import AuthGateTesting
import Crypto
import Foundation
import Gateway
import TestSupport
import Testing

/// A session with a DPoP key (RFC 9449) against an authorization server that binds its tokens
/// to it and an API that accepts a bound token only with a fresh proof of that key: every
/// token request and every proxied request carries one, the legacy client none.
@Suite struct DPoPProxyTests {
    static func keyFile() -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("dpop-\(UUID().uuidString).pem").path
        #expect(
            FileManager.default.createFile(
                atPath: path, contents: Data(P256.Signing.PrivateKey().pemRepresentation.utf8),
                attributes: [.posixPermissions: 0o600]))
        return path
    }

    @Test func everyTokenRequestAndEveryProxiedRequestProvesTheKey() async throws {
        let key = Self.keyFile()
        defer { try? FileManager.default.removeItem(atPath: key) }
        try await Stack.run { stack in
            try await stack.startGateway {
                $0.authorization.dpop = .init(keyFile: key)
                // 16 at once may wait past the default 10 s in AuthGate's queue under a sanitizer.
                $0.routes[1].queueTimeoutSeconds = 3_600
            }
            #expect(try await stack.loginAlice().status == 200)
            #expect(await stack.authorization.statistics.dpopProofs == 1)
            #expect(try await stack.proxy("GET", "/orders?page=2").status == 200)
            #expect(stack.api.statistics.dpopAccepted == 1)
            // The refresh proves the same key (the server refuses another for a bound family).
            #expect(try await stack.admin("POST", "/auth/refresh").status == 200)
            #expect(await stack.authorization.statistics.dpopProofs == 2)
            // Concurrent requests: a proof each (the API refuses a jti seen before).
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for i in 0..<16 { group.addTask { try await stack.proxy("POST", "/items/\(i)", body: "x").status } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses == Array(repeating: 200, count: 16))
            #expect(stack.api.statistics.dpopAccepted == 17)
            #expect(stack.api.statistics.dpopRefusals.isEmpty)
        }
    }

    @Test func theAuthorizationServersNonceIsFollowedOnce() async throws {
        let key = Self.keyFile()
        defer { try? FileManager.default.removeItem(atPath: key) }
        try await Stack.run { stack in
            await stack.authorization.requireDPoPNonce("as-nonce-1")
            try await stack.startGateway { $0.authorization.dpop = .init(keyFile: key) }
            #expect(try await stack.loginAlice().status == 200)
            #expect(await stack.authorization.statistics.dpopRefusals == [.nonceNeeded])
            #expect(await stack.authorization.statistics.dpopProofs == 1)
            // The nonce is kept: the refresh carries it at once.
            #expect(try await stack.admin("POST", "/auth/refresh").status == 200)
            #expect(await stack.authorization.statistics.dpopRefusals == [.nonceNeeded])
            // A new nonce: one more round trip, never a loop.
            await stack.authorization.requireDPoPNonce("as-nonce-2")
            #expect(try await stack.admin("POST", "/auth/refresh").status == 200)
            #expect(await stack.authorization.statistics.dpopRefusals == [.nonceNeeded, .nonceNeeded])
        }
    }

    @Test func aClientsOwnProofNeverGoesUpstreamWithTheSessionsToken() async throws {
        let key = Self.keyFile()
        defer { try? FileManager.default.removeItem(atPath: key) }
        try await Stack.run { stack in
            try await stack.startGateway { $0.authorization.dpop = .init(keyFile: key) }
            #expect(try await stack.loginAlice().status == 200)
            let forged = "eyJ0eXAiOiJkcG9wK2p3dCJ9.e30.c2ln"
            #expect(try await stack.proxy("GET", "/orders", headers: ["DPoP: \(forged)"]).status == 200)
            #expect(stack.api.statistics.dpopAccepted == 1, "the API checked the session's proof, not the client's")
        }
    }
}

/// A resource server that asks DPoP proofs for its nonce (RFC 9449 §9): answered on the
/// replay path by one resend with the same token, never a refresh.
@Suite struct DPoPResourceNonceTests {
    @Test func theAPIsNonceIsFollowedWithTheSameTokenAndKept() async throws {
        let key = DPoPProxyTests.keyFile()
        defer { try? FileManager.default.removeItem(atPath: key) }
        try await Stack.run { stack in
            stack.api.requireDPoPNonce("rs-nonce-1")
            try await stack.startGateway { $0.authorization.dpop = .init(keyFile: key) }
            #expect(try await stack.loginAlice().status == 200)
            #expect(try await stack.proxy("POST", "/orders", body: "{}").status == 200)
            #expect(stack.api.statistics.dpopRefusals == [DPoPVerifier.Refusal.nonceNeeded.rawValue])
            #expect(stack.api.statistics.dpopAccepted == 1)
            #expect(await stack.authorization.statistics.refreshes == 0, "a nonce is not a rejected token")
            // Kept: the next request carries it at once.
            #expect(try await stack.proxy("GET", "/orders").status == 200)
            #expect(stack.api.statistics.dpopRefusals.count == 1)
            #expect(stack.api.statistics.dpopAccepted == 2)
        }
    }

    @Test func aDPoPTokenTheAPIRejectsIsRefreshedWithTheKeyAndReplayed() async throws {
        let key = DPoPProxyTests.keyFile()
        defer { try? FileManager.default.removeItem(atPath: key) }
        try await Stack.run { stack in
            try await stack.startGateway { $0.authorization.dpop = .init(keyFile: key) }
            #expect(try await stack.loginAlice().status == 200)
            await stack.authorization.revokeAccessTokens()
            #expect(try await stack.proxy("GET", "/orders").status == 200, "401 DPoP invalid_token → refresh → replay")
            #expect(await stack.authorization.statistics.refreshes == 1)
            #expect(await stack.authorization.statistics.dpopProofs == 2, "the refresh proved the same key")
        }
    }

    @Test func aProofTheAPIRefusesIsAnsweredWithItsCauseCountedAndMarksTheClockSkewed() async throws {
        let key = DPoPProxyTests.keyFile()
        defer { try? FileManager.default.removeItem(atPath: key) }
        try await Stack.run { stack in
            let records = AccessLogTests.Records()
            try await stack.startGateway(accessLogger: records.logger) { $0.authorization.dpop = .init(keyFile: key) }
            #expect(try await stack.loginAlice().status == 200)
            #expect(try await stack.proxy("GET", "/orders").status == 200)
            // The API's clock is ten minutes ahead: it refuses every proof as stale.
            stack.api.skewDPoPClock(by: 600)
            let refused = try await stack.proxy("GET", "/orders")
            #expect(refused.status == 502)
            #expect(refused.header("content-type") == "application/problem+json")
            #expect(
                refused.text.contains("dpop-proof-rejected") && refused.text.contains("ahead of AuthGate's"), "\(refused.text)")
            #expect(stack.api.statistics.dpopRefusals.count == 1, "sent once: neither resent nor replayed")
            // The access log tells the two apart: the API's 401, AuthGate's 502.
            #expect(await eventually { records.access.count == 2 })
            let line = records.access.last?.mapValues { "\($0)" } ?? [:]
            #expect(line["status"] == "502" && line["upstreamStatus"] == "401", "\(line)")
            #expect(await stack.authorization.statistics.refreshes == 0, "a refused proof is not a rejected token")
            let metrics = try await stack.admin("GET", "/metrics").text
            #expect(metrics.contains(#"authgate_replays_total{session="default",outcome="dpop_proof_rejected"} 1"#))
            #expect(metrics.contains(#"authgate_dpop_proofs_refused_total{session="default",by="upstream"} 1"#))
            #expect(metrics.contains(#"authgate_dpop_proofs_refused_total{session="default",by="token_endpoint"} 0"#))
            let unexplained = GatewayMetricsTests.Exposition(metrics).typeLinesWithoutHelpBefore
            #expect(unexplained.isEmpty, "no HELP for \(unexplained)")
            let probe = try await stack.admin("GET", "/readyz", token: nil)
            #expect(probe.status == 503 && probe.text.contains("clock_skewed"), "\(probe.text)")
            // The clocks agree again: the next accepted proof makes the gateway ready.
            stack.api.skewDPoPClock(by: 0)
            #expect(try await stack.proxy("GET", "/orders").status == 200)
            #expect(try await stack.admin("GET", "/readyz", token: nil).status == 200)
        }
    }

    /// A token endpoint whose clock is off refuses the login's proof: the login is refused
    /// with the server's error, counted, and `/readyz` says the clock is skewed until a
    /// proof is accepted again.
    @Test func aTokenEndpointRefusingTheProofIsCountedAndMarksTheClockSkewed() async throws {
        let key = DPoPProxyTests.keyFile()
        defer { try? FileManager.default.removeItem(atPath: key) }
        try await Stack.run { stack in
            await stack.authorization.skewDPoPClock(by: -600)
            try await stack.startGateway { $0.authorization.dpop = .init(keyFile: key) }
            let refused = try await stack.loginAlice()
            #expect(refused.status == 401 && refused.text.contains("invalid_dpop_proof"), "\(refused.text)")
            let metrics = try await stack.admin("GET", "/metrics").text
            #expect(metrics.contains(#"authgate_dpop_proofs_refused_total{session="default",by="token_endpoint"} 1"#))
            let probe = try await stack.admin("GET", "/readyz", token: nil)
            #expect(probe.status == 503 && probe.text.contains("clock_skewed"), "\(probe.text)")
            await stack.authorization.skewDPoPClock(by: 0)
            #expect(try await stack.loginAlice().status == 200)
            #expect(try await stack.admin("GET", "/readyz", token: nil).status == 200)
        }
    }

    @Test func aNonceThatChangesOnEveryAnswerIsFollowedOncePerRequest() async throws {
        let key = DPoPProxyTests.keyFile()
        defer { try? FileManager.default.removeItem(atPath: key) }
        try await Stack.run { stack in
            stack.api.requireDPoPNonce("rs-nonce-1", rotating: true)
            try await stack.startGateway { $0.authorization.dpop = .init(keyFile: key) }
            #expect(try await stack.loginAlice().status == 200)
            let r = try await stack.proxy("GET", "/orders")
            #expect(r.status == 401, "the API's second answer reaches the client")
            #expect(stack.api.statistics.dpopRefusals.count == 2, "sent twice, never more")
            #expect(await stack.authorization.statistics.refreshes == 0)
        }
    }
}
