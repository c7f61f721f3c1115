import AuthCore
import AuthGateTesting
import Logging
import Testing

@testable import Gateway

/// The runner of an exchange whose sends are async, against a real session (in memory, with a
/// fake authorization server) and an upstream played by the test: what each attempt carries,
/// how answers are judged, and what the caller gets when a token or a refresh does not come.
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

    static func exchange(_ session: AuthActor) -> AuthenticatedExchange {
        AuthenticatedExchange(session: session, policy: UpstreamRejectionPolicy(), rule: ReplayRule())
    }

    /// Runs `exchange` to its end, the upstream answering each attempt as `end(n)` says (n
    /// counts from 0); the attempts it was sent.
    static func run(
        _ exchange: AuthenticatedExchange, _ end: (Int) async -> ExchangeMachine.AttemptEnd
    ) async throws(GatewayError) -> [AuthenticatedExchange.Attempt] {
        var exchange = exchange
        var attempts: [AuthenticatedExchange.Attempt] = []
        while let attempt = try await exchange.next() {
            attempts.append(attempt)
            exchange.attemptEnded(await end(attempts.count - 1))
        }
        return attempts
    }

    @Test func anAnsweredFirstTryCarriesTheCurrentTokenAndEndsTheExchange() async throws {
        let (session, generation) = try await Self.loggedIn()
        let attempts = try await Self.run(Self.exchange(session)) { _ in .answered }
        #expect(attempts.map(\.attempt) == [ReplayRule.Attempt(generation: generation, replaysSoFar: 0, bodyReplayable: true)])
        #expect(attempts.map(\.token.generation) == [generation])
    }

    @Test func aHeldBackAnswerIsReplayedWithANewerToken() async throws {
        let (session, generation) = try await Self.loggedIn()
        let attempts = try await Self.run(Self.exchange(session)) { $0 == 0 ? .heldForRefresh : .answered }
        #expect(attempts.count == 2)
        #expect(attempts[1].attempt.generation > generation)
        #expect(attempts[1].token.generation == attempts[1].attempt.generation)
        #expect(attempts[1].attempt.replaysSoFar == 1)
    }

    @Test func aNonceRequestIsResentOnceWithTheSameTokenAndNoReplayCounted() async throws {
        let (session, generation) = try await Self.loggedIn()
        let attempts = try await Self.run(Self.exchange(session)) { $0 == 0 ? .heldForNonce : .answered }
        var resent = ReplayRule.Attempt(generation: generation, replaysSoFar: 0, bodyReplayable: true)
        resent.nonceResent = true
        #expect(attempts.map(\.attempt).last == resent)
        #expect(attempts.count == 2)
    }

    @Test func noSessionMeansNoToken() async throws {
        var sent = 0
        do {
            _ = try await Self.run(Self.exchange(Self.session())) { _ in
                sent += 1
                return .answered
            }
            Issue.record("an exchange without a session sent")
        } catch {
            #expect(error.code == .noToken)
            #expect(error.underlying is AuthError)
        }
        #expect(sent == 0)
    }

    @Test func aReplayWhoseSessionEndedFailsAsARefresh() async throws {
        let (session, _) = try await Self.loggedIn()
        var sent = 0
        do {
            _ = try await Self.run(Self.exchange(session)) { _ in
                sent += 1
                try? await session.logout()
                return .heldForRefresh
            }
            Issue.record("a replay was sent for a session that ended")
        } catch {
            #expect(error.code == .replayRefreshFailed)
        }
        #expect(sent == 1)
    }

    @Test func aRejectedFirstTryIsHeldAndItsRejectedReplayPassesThrough() async throws {
        let (session, _) = try await Self.loggedIn()
        var exchange = Self.exchange(session)
        let rejected = ExchangeMachine.Head(status: 401, wwwAuthenticate: ["Bearer error=\"invalid_token\""])
        _ = try await exchange.next()
        #expect(exchange.headArrived(ExchangeMachine.Head(status: 200)) == .deliver)
        #expect(exchange.headArrived(rejected) == .holdForRefresh)
        exchange.attemptEnded(.heldForRefresh)
        _ = try await exchange.next()
        // The replay carried the session's current token, freshly refreshed: the upstream
        // refuses the account, not the token's age.
        guard case .passThrough(.currentTokenRejected, _) = exchange.headArrived(rejected) else {
            Issue.record("a rejected replay with the current token was not passed through")
            return
        }
        exchange.attemptEnded(.answered)
        #expect(try await exchange.next() == nil)
    }
}

/// What the user-info call makes of each answer, as judged by its exchange.
@Suite struct UserInfoOutcomeTests {
    @Test func aSuccessSaysSignedUpAndAKnownStatusNeedsSignUp() {
        #expect(UserInfoProbe.outcome(status: 200, .deliver, needsSignUp: nil) == .answered(.signedUp))
        #expect(UserInfoProbe.outcome(status: 404, .deliver, needsSignUp: nil) == .answered(.needsSignUp))
        #expect(UserInfoProbe.outcome(status: 404, .deliver, needsSignUp: [409]) == .retry("HTTP 404"))
        #expect(UserInfoProbe.outcome(status: 409, .deliver, needsSignUp: [409]) == .answered(.needsSignUp))
    }

    @Test func anAnswerHeldForARefreshOrANonceIsAskedAgain() {
        #expect(UserInfoProbe.outcome(status: 401, .holdForRefresh, needsSignUp: nil) == nil)
        #expect(UserInfoProbe.outcome(status: 401, .holdForNonce, needsSignUp: nil) == nil)
        // A status the operator counts as a rejected token and as "needs sign-up" says the latter.
        #expect(UserInfoProbe.outcome(status: 404, .holdForRefresh, needsSignUp: nil) == .answered(.needsSignUp))
    }

    @Test func aRejectionOfTheCurrentTokenIsFinalAndOthersAreRetried() {
        #expect(
            UserInfoProbe.outcome(status: 401, .passThrough(.currentTokenRejected, refreshInBackground: false), needsSignUp: nil)
                == .rejected(status: 401))
        #expect(
            UserInfoProbe.outcome(status: 401, .passThrough(.noSession, refreshInBackground: false), needsSignUp: nil)
                == .noSession)
        #expect(
            UserInfoProbe.outcome(status: 401, .passThrough(.replayLimit, refreshInBackground: false), needsSignUp: nil)
                == .retry("HTTP 401"))
        #expect(UserInfoProbe.outcome(status: 401, .refuseProof, needsSignUp: nil) == .retry("the DPoP proof was refused"))
        #expect(UserInfoProbe.outcome(status: 503, .deliver, needsSignUp: nil) == .retry("HTTP 503"))
    }
}
