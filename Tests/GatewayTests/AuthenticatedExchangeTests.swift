import AuthCore
import AuthGateTesting
import Logging
import Testing

@testable import Gateway

/// The runner of an authenticated exchange against a real session (in memory, with a fake
/// authorization server) and an upstream played by the `send` closure: what each attempt
/// carries, and what the caller gets when a token, a refresh or a slot does not come.
@Suite struct AuthenticatedExchangeTests {
    static func session() -> AuthActor {
        let clock = TestClock()
        let server = FakeAuthorizationServer(configuration: .init(), clock: clock)
        let client = OAuth2Client(
            configuration: .init(
                tokenEndpoint: "https://auth.example.test/oauth/token", clientID: "authgate", clientSecret: "s3cret"),
            transport: server, clock: clock)
        return AuthActor(
            client: client, tokenStore: InMemoryTokenStore(), stateStore: InMemorySessionStateStore(), clock: clock,
            configuration: AuthActor.Configuration(skew: .zero, jitter: .zero),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), randomFraction: { 0 })
    }

    static func loggedIn() async throws -> (AuthActor, TokenGeneration) {
        let session = session()
        let token = try await session.login(.password(username: "alice", password: "wonderland"))
        return (session, token.generation)
    }

    static func exchange(_ session: AuthActor, limiter: InFlightLimiter? = nil) -> AuthenticatedExchange {
        AuthenticatedExchange(session: session, policy: UpstreamRejectionPolicy(), rule: ReplayRule(), limiter: limiter)
    }

    @Test func anAnsweredFirstTryCarriesTheCurrentToken() async throws {
        let (session, generation) = try await Self.loggedIn()
        var attempts: [ReplayRule.Attempt] = []
        let result = try await Self.exchange(session).run(bodyReplayable: true) {
            token, attempt -> AuthenticatedExchange.Step<Int> in
            attempts.append(attempt)
            #expect(token.generation == attempt.generation)
            return .done(200)
        }
        #expect(result == 200)
        #expect(attempts == [ReplayRule.Attempt(generation: generation, replaysSoFar: 0, bodyReplayable: true)])
    }

    @Test func aHeldBackAnswerIsReplayedWithANewerToken() async throws {
        let (session, generation) = try await Self.loggedIn()
        var attempts: [ReplayRule.Attempt] = []
        let result = try await Self.exchange(session).run(bodyReplayable: true) { _, attempt -> AuthenticatedExchange.Step<Int> in
            attempts.append(attempt)
            return attempts.count == 1 ? .replay : .done(200)
        }
        #expect(result == 200)
        #expect(attempts.count == 2)
        #expect(attempts[1].generation > generation)
        #expect(attempts[1].replaysSoFar == 1)
    }

    @Test func aNonceRequestIsResentOnceWithTheSameTokenAndNoReplayCounted() async throws {
        let (session, generation) = try await Self.loggedIn()
        var attempts: [ReplayRule.Attempt] = []
        let result = try await Self.exchange(session).run(bodyReplayable: true) { _, attempt -> AuthenticatedExchange.Step<Int> in
            attempts.append(attempt)
            return attempts.count == 1 ? .resend : .done(204)
        }
        #expect(result == 204)
        var resent = ReplayRule.Attempt(generation: generation, replaysSoFar: 0, bodyReplayable: true)
        resent.nonceResent = true
        #expect(attempts.last == resent)
    }

    @Test func noSessionMeansNoToken() async throws {
        let session = Self.session()
        var sent = 0
        var failure: GatewayError?
        do {
            _ = try await Self.exchange(session).run(bodyReplayable: true) { _, _ -> AuthenticatedExchange.Step<Int> in
                sent += 1
                return .done(200)
            }
        } catch {
            failure = error
        }
        guard failure?.code == .noToken else {
            Issue.record("\(String(describing: failure)) is not a token failure")
            return
        }
        #expect(sent == 0)
    }

    @Test func aReplayWhoseSessionEndedFailsAsARefresh() async throws {
        let (session, _) = try await Self.loggedIn()
        var sent = 0
        var failure: GatewayError?
        do {
            _ = try await Self.exchange(session).run(bodyReplayable: true) { _, _ -> AuthenticatedExchange.Step<Int> in
                sent += 1
                try? await session.logout()
                return .replay
            }
        } catch {
            failure = error
        }
        #expect(sent == 1)
        guard failure?.code == .replayRefreshFailed else {
            Issue.record("\(String(describing: failure)) is not a refresh failure")
            return
        }
    }

    @Test func aBoundedExchangeHoldsOneSlotPerAttemptAndGivesItBack() async throws {
        let (session, _) = try await Self.loggedIn()
        let limiter = InFlightLimiter(.fixed(1), timeout: .seconds(30))
        var attempts = 0
        let result = try await Self.exchange(session, limiter: limiter).run(bodyReplayable: true) {
            _, _ -> AuthenticatedExchange.Step<Int> in
            attempts += 1
            // The attempt at the upstream holds the only slot.
            #expect(limiter.acquireWithoutWaiting() == nil)
            return attempts == 1 ? .replay : .done(200)
        }
        #expect(result == 200)
        #expect(attempts == 2)
        let slot = limiter.acquireWithoutWaiting()
        #expect(slot != nil, "every slot was given back")
        if slot != nil { limiter.release() }
    }
}
