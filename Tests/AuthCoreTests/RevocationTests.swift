import AuthCore
import AuthGateTesting
import Foundation
import Locking
import TestSupport
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

/// A token client that records what it is asked to revoke, and otherwise passes through.
final class RecordingRevocations: TokenGrantClient {
    let inner: any TokenGrantClient
    let revoked = Locked<[String?]>([])
    init(_ inner: any TokenGrantClient) { self.inner = inner }
    func requestToken(_ grant: Grant) async throws -> TokenResponse { try await inner.requestToken(grant) }
    var canRevoke: Bool { inner.canRevoke }
    func revoke(refreshToken: String?, accessToken: String) async throws {
        revoked.withLock { $0.append(refreshToken) }
        try await inner.revoke(refreshToken: refreshToken, accessToken: accessToken)
    }
}

@Suite struct LogoutDuringRefreshTests {
    @Test func aLogoutDuringARefreshRevokesTheRotatedTokensItDropsToo() async throws {
        let h = RevocationTests().harness()
        let client = RecordingRevocations(h.client)
        let actor = AuthActor(
            client: client, tokenStore: h.tokenStore, stateStore: h.stateStore, clock: h.clock,
            configuration: h.configuration, randomFraction: { 0 })
        let first = try await actor.login(.password(username: "alice", password: "wonderland"))
        let spent = h.tokenStore.record(for: .default)?.refreshToken
        // The server rotates at once; its answer arrives after the logout.
        await h.server.inject(.answerLateAfterCommit(.seconds(1)))
        let refresh = Task { try? await actor.refresh(after: first.generation) }
        #expect(await eventually { h.clock.sleeperCount == 1 })
        try await actor.logout()
        h.clock.advance(by: .seconds(1))
        _ = await refresh.value
        await actor.finishBackgroundWork()
        let revoked = client.revoked.withLock { $0 }
        #expect(revoked.count == 2, "the logged-out pair and the rotated one the refresh brought back")
        #expect(revoked.first == spent)
        #expect(revoked.last != spent && revoked.last != nil)
        #expect(h.tokenStore.record(for: .default) == nil, "and nothing was revived")
    }
}

@Suite struct RevocationLogTests {
    @Test func withoutARevocationEndpointALogoutNeitherRevokesNorSaysItDid() async throws {
        let h = RevocationTests().harness(revocationEndpoint: nil)
        let client = RecordingRevocations(h.client)
        let actor = AuthActor(
            client: client, tokenStore: h.tokenStore, stateStore: h.stateStore, clock: h.clock,
            configuration: h.configuration, randomFraction: { 0 })
        _ = try await actor.login(.password(username: "alice", password: "wonderland"))
        try await actor.logout()
        await actor.finishBackgroundWork()
        #expect(client.revoked.withLock { $0 }.isEmpty)
    }
}
