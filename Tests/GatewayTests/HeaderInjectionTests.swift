import AuthCore
import Foundation
import Gateway
import HTTPWire
import Runtime
import TestSupport
import Testing

/// A token that could split a header line never reaches an upstream, whichever way it came in.
@Suite(.serialized) struct HeaderInjectionTests {
    /// A token endpoint that answers every request with an access token carrying CRLF.
    struct PoisonedTokenEndpoint: HTTPResponder {
        func respond(to request: HTTPRequest, writer: ResponseWriter) {
            var h = HTTPHeaders()
            h.add(name: "Content-Type", value: "application/json")
            let body = #"{"access_token":"abc\r\nX-Evil: 1","token_type":"Bearer","expires_in":3600}"#
            writer.respond(status: 200, headers: h, body: Array(body.utf8))
        }
    }

    @Test func loginWithATokenThatCouldSplitAHeaderIsRefusedAndNothingReachesTheUpstream() async throws {
        let upstream = try await Upstream()
        defer { upstream.stop() }
        try await Stack.run { stack in
            let tokenEndpoint = HTTPServer(
                configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0), group: stack.fakes,
                responder: PoisonedTokenEndpoint())
            // Closed with the fakes' loops when the stack stops.
            try await tokenEndpoint.listen()
            try await stack.startGateway { c in
                c.authorization.tokenEndpoint = "http://127.0.0.1:\(tokenEndpoint.port)/oauth/token"
                c.routes = [.init(prefix: "/", upstream: upstream.url, requiresAuthentication: true)]
            }
            let login = try await stack.loginAlice()
            #expect(login.status == 502, "\(login.status) \(login.text)")
            #expect(login.header("content-type") == "application/problem+json")
            #expect(login.text.contains("access_token") && !login.text.contains("Evil"), "\(login.text)")
            let session = Stack.json(try await stack.admin("GET", "/auth/session"))
            #expect(session["state"] as? String == "logged_out")
            let r = try await stack.proxy("GET", "/inspect")
            #expect(r.status == 401)
            #expect(!r.text.contains("X-Evil"), "\(r.text)")
            #expect(!stack.logs.all.contains("X-Evil"))
        }
    }

    @Test func importOfATokenThatCouldSplitAHeaderIsRefusedNamingTheField() async throws {
        try await Stack.run { stack in
            try await stack.startGateway()
            let r = try await stack.admin(
                "POST", "/auth/login", json: #"{"grant_type":"import","access_token":"abc\r\nX-Evil: 1"}"#)
            #expect(r.status == 422)
            #expect(r.header("content-type") == "application/problem+json")
            #expect(r.text.contains("access_token") && !r.text.contains("Evil"), "\(r.text)")
        }
    }

    @Test func aPoisonedTokenAlreadyInTheStoreIsNeverSentUpstream() async throws {
        let upstream = try await Upstream()
        defer { upstream.stop() }
        try await Stack.run { stack in
            // Tokens written before the syntax checks existed: restore treats them as no
            // tokens (and the upstream client would refuse the header line anyway).
            try FileManager.default.createDirectory(
                atPath: stack.stateDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let key = try TokenStoreKey.load(fromFile: stack.keyFile, createIfMissing: true)
            let tokens = try EncryptedFileTokenStore(directory: stack.stateDirectory, key: key)
            try await tokens.save(
                TokenRecord(
                    accessToken: "abc\r\nX-Evil: 1", refreshToken: "r", expiresAt: Date() + 3600, issuedAt: Date(),
                    generation: TokenGeneration(1)),
                for: .default)
            try await FileSessionStateStore(directory: stack.stateDirectory).save(
                SessionState(isLoggedIn: true, subject: "alice"), for: .default)
            try await stack.startGateway { c in
                c.routes = [.init(prefix: "/", upstream: upstream.url, requiresAuthentication: true)]
            }
            let r = try await stack.proxy("GET", "/inspect")
            #expect(r.status == 401, "\(r.status) \(r.text)")
            #expect(r.header("content-type") == "application/problem+json")
            #expect(r.text.contains("login-required"), "\(r.text)")
            #expect(!r.text.contains("X-Evil") && !r.text.contains("abc"), "\(r.text)")
            #expect(Stack.json(try await stack.admin("GET", "/auth/session"))["state"] as? String == "logged_out")
            #expect(stack.logs.all.contains("auth.store.invalid_field=access_token"))
            #expect(!stack.logs.all.contains("X-Evil"))
        }
    }
}
