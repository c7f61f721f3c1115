import AuthCore
import AuthGateTesting
import Foundation
import Testing

/// RFC 7009 at logout: a logout someone asked for revokes the session's tokens at the
/// server; nothing else does, and a failed revocation never undoes a logout.
@Suite struct RevocationTests {
    static let revocationEndpoint = "https://auth.example.test/oauth/revoke"

    func harness(revocationEndpoint: String? = Self.revocationEndpoint) -> Harness {
        Harness(
            client: .init(
                tokenEndpoint: Harness.tokenEndpoint, clientID: "authgate", clientSecret: "s3cret",
                revocationEndpoint: revocationEndpoint))
    }

    @Test func theRevocationRequestIsAFormPostWithClientAuthentication() throws {
        let client = OAuth2Client(
            configuration: .init(
                tokenEndpoint: Harness.tokenEndpoint, clientID: "authgate", clientSecret: "s3cret",
                revocationEndpoint: Self.revocationEndpoint),
            transport: FakeAuthorizationServer(clock: TestClock()), clock: TestClock())
        let request = try #require(try client.makeRevocationRequest(token: "rt_1", hint: "refresh_token"))
        #expect(request.method == "POST")
        #expect(request.url == Self.revocationEndpoint)
        #expect(request.header("Authorization") == "Basic " + Data("authgate:s3cret".utf8).base64EncodedString())
        #expect(request.header("Content-Type") == "application/x-www-form-urlencoded")
        #expect(String(decoding: request.body, as: UTF8.self) == "token=rt_1&token_type_hint=refresh_token")
        let none = OAuth2Client(
            configuration: .init(tokenEndpoint: Harness.tokenEndpoint), transport: FakeAuthorizationServer(clock: TestClock()),
            clock: TestClock())
        #expect(try none.makeRevocationRequest(token: "rt_1", hint: "refresh_token") == nil, "no endpoint, no request")
    }

    @Test func anAskedForLogoutRevokesTheTokensAtTheServer() async throws {
        let h = harness()
        let token = try await h.login()
        #expect(await h.server.isValid(accessToken: token.value))
        try await h.actor.logout()
        await h.actor.finishRevocations()
        #expect(await h.server.statistics.revocations == 1)
        #expect(await !h.server.isValid(accessToken: token.value), "the refresh token took its access tokens with it")
    }

    @Test func endingsNobodyAskedForRevokeNothing() async throws {
        let h = harness()
        try await h.login()
        let second = try await h.login()  // replaces the first session: no revocation
        await h.server.revokeAllSessions()
        _ = try? await h.actor.refresh(after: second.generation)  // refused for good: logged out
        #expect(await !h.actor.status.isLoggedIn)
        await h.actor.finishRevocations()
        #expect(await h.server.statistics.revocations == 0)
    }

    @Test func aFailedRevocationLeavesTheLogoutDone() async throws {
        // The fake server answers 404 there: the revocation fails, the logout stands.
        let h = harness(revocationEndpoint: "https://auth.example.test/nowhere")
        try await h.login()
        try await h.actor.logout()
        await h.actor.finishRevocations()
        #expect(await !h.actor.status.isLoggedIn)
        #expect(h.tokenStore.record(for: .default) == nil)
        #expect(await h.server.statistics.revocations == 0)
    }
}
