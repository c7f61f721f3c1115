import AuthCore
import AuthGateTesting
import Crypto
import Foundation
import Gateway
import TestSupport
import Testing

/// The life of a session's DPoP key (RFC 9449): generated for a session and kept sealed with
/// its tokens, or read from a key file; tokens bound to a key nobody can prove any more end
/// their session (`key_changed`) rather than fail request after request.
@Suite struct DPoPKeyLifeTests {
    static func session(_ stack: Stack) async throws -> [String: Any] {
        Stack.json(try await stack.admin("GET", "/auth/session"))
    }

    /// The thumbprints the authorization server bound the tokens the API saw to.
    static func boundThumbprints(_ stack: Stack) async -> Set<String> {
        var bound: Set<String> = []
        for token in stack.api.seenTokens {
            if let jkt = await stack.authorization.dpopBinding(of: token) { bound.insert(jkt) }
        }
        return bound
    }

    static func writeKey(_ path: String) {
        #expect(
            FileManager.default.createFile(
                atPath: path, contents: Data(P256.Signing.PrivateKey().pemRepresentation.utf8),
                attributes: [.posixPermissions: 0o600]))
    }

    @Test func aGeneratedKeyIsSealedWithTheTokensOutlivesARestartAndEndsWithTheSession() async throws {
        try await Stack.run { stack in
            let generate: (inout GatewayConfiguration) -> Void = { $0.authorization.dpop = .init(generate: true) }
            try await stack.startGateway(configure: generate)
            // Logged out, the key the next login proves is announced: an authorization
            // request's dpop_jkt.
            let announced = try #require(try await Self.session(stack)["dpop_jkt"] as? String)
            #expect(try await Self.session(stack)["dpop_jkt"] as? String == announced, "the same key until a login")
            #expect(try await stack.loginAlice().status == 200)
            #expect(try await Self.session(stack)["dpop_jkt"] as? String == announced, "the login proved it")
            #expect(try await stack.proxy("GET", "/orders").status == 200)
            #expect(await Self.boundThumbprints(stack) == [announced])
            // Sealed: nothing of the key is readable in the state directory.
            for name in try FileManager.default.contentsOfDirectory(atPath: stack.stateDirectory) {
                let text = String(
                    decoding: (try? Data(contentsOf: URL(fileURLWithPath: stack.stateDirectory + "/" + name))) ?? Data(),
                    as: UTF8.self)
                #expect(!text.contains("PRIVATE KEY"), "\(name)")
            }

            // A restart proves the same key for the same tokens: no login, no refresh, no refusal.
            await stack.stopGateway()
            try await stack.startGateway(configure: generate)
            #expect(try await stack.proxy("GET", "/orders").status == 200)
            #expect(try await Self.session(stack)["dpop_jkt"] as? String == announced)
            #expect(stack.api.statistics.dpopRefusals.isEmpty)
            #expect(await stack.authorization.statistics.refreshAttempts == 0)

            // A logout forgets the key: the next session proves a new one.
            #expect(try await stack.admin("POST", "/auth/logout").status == 200)
            let next = try #require(try await Self.session(stack)["dpop_jkt"] as? String)
            #expect(next != announced)
            #expect(try await stack.loginAlice().status == 200)
            #expect(try await stack.proxy("GET", "/orders").status == 200)
            #expect(await Self.boundThumbprints(stack) == [announced, next])
        }
    }

    @Test func aChangedKeyFileEndsTheSessionAtItsNextRefresh() async throws {
        let key = DPoPProxyTests.keyFile()
        defer { try? FileManager.default.removeItem(atPath: key) }
        try await Stack.run { stack in
            try await stack.startGateway { $0.authorization.dpop = .init(keyFile: key) }
            #expect(try await stack.loginAlice().status == 200)
            let first = try #require(try await Self.session(stack)["dpop_jkt"] as? String)
            #expect(try await stack.proxy("GET", "/orders").status == 200)
            // The file now holds another key; requests still prove the key the tokens are
            // bound to until the session notices.
            Self.writeKey(key)
            #expect(try await stack.proxy("GET", "/orders").status == 200)
            #expect(stack.api.statistics.dpopRefusals.isEmpty)
            // The API rejects the token: the refresh finds the key changed and ends the
            // session instead of asking the server with a key it would refuse.
            await stack.authorization.revokeAccessTokens()
            let ended = try await stack.proxy("GET", "/orders")
            #expect(
                ended.status == 401 && ended.text.contains("session-ended") && ended.text.contains("key_changed"), "\(ended.text)"
            )
            #expect(await stack.authorization.statistics.refreshAttempts == 0)
            let session = try await Self.session(stack)
            #expect(session["state"] as? String == "logged_out")
            #expect(session["dpop_jkt"] as? String != first, "the next login proves the file's new key")
            let metrics = try await stack.admin("GET", "/metrics").text
            #expect(metrics.contains(#"authgate_logouts_total{session="default",reason="key_changed"} 1"#))
            // A login with the new key works at once.
            #expect(try await stack.loginAlice().status == 200)
            #expect(try await stack.proxy("GET", "/orders").status == 200)
        }
    }

    @Test func aKeyFileChangedWhileStoppedEndsTheSessionAtRestore() async throws {
        let key = DPoPProxyTests.keyFile()
        defer { try? FileManager.default.removeItem(atPath: key) }
        try await Stack.run { stack in
            let file: (inout GatewayConfiguration) -> Void = { $0.authorization.dpop = .init(keyFile: key) }
            try await stack.startGateway(configure: file)
            #expect(try await stack.loginAlice().status == 200)
            await stack.stopGateway()
            Self.writeKey(key)
            try await stack.startGateway(configure: file)
            #expect(try await Self.session(stack)["state"] as? String == "logged_out")
            let r = try await stack.proxy("GET", "/orders")
            #expect(r.status == 401 && r.text.contains("key_changed"), "\(r.text)")
            #expect(stack.api.statistics.dpopRefusals.isEmpty, "nothing was sent with a key the tokens are not bound to")
        }
    }

    @Test func aReadinessProbeNoticesAChangedKeyFile() async throws {
        let key = DPoPProxyTests.keyFile()
        defer { try? FileManager.default.removeItem(atPath: key) }
        try await Stack.run { stack in
            try await stack.startGateway { $0.authorization.dpop = .init(keyFile: key) }
            #expect(try await stack.loginAlice().status == 200)
            Self.writeKey(key)
            _ = try await stack.admin("GET", "/readyz", token: nil)
            #expect(
                await eventually { (try? await Self.session(stack)["state"] as? String) == "logged_out" },
                "the probe checked the key file")
        }
    }
}

/// The user-info call carries the session's token like a proxied request, so a DPoP-bound
/// token goes with a proof of its key there too (and with the API's nonce, once asked).
@Suite struct DPoPUserInfoTests {
    @Test func theUserInfoCallProvesTheKeyAndFollowsTheNonce() async throws {
        let key = DPoPProxyTests.keyFile()
        defer { try? FileManager.default.removeItem(atPath: key) }
        try await Stack.run { stack in
            stack.api.requireDPoPNonce("rs-nonce")
            let url = "http://127.0.0.1:\(stack.apiServer.port)/userinfo"
            try await stack.startGateway {
                $0.authorization.dpop = .init(keyFile: key)
                $0.userInfo = UserInfoProbe.Configuration(url: url, maxRetrySeconds: 1)
            }
            #expect(try await stack.loginAlice().status == 200)
            #expect(
                try await eventually {
                    Stack.json(try await stack.admin("GET", "/auth/session"))["registration"] as? String == "signed_up"
                })
            let session = Stack.json(try await stack.admin("GET", "/auth/session"))
            #expect(session["state"] as? String == "logged_in", "the call's refusal never ended the session")
            #expect(stack.api.statistics.dpopAccepted == 1)
            #expect(stack.api.statistics.dpopRefusals == ["the DPoP proof must carry the server's current nonce"])
            #expect(await stack.authorization.statistics.refreshes == 0)
        }
    }
}
