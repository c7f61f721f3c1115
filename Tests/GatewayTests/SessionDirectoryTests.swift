import AuthCore
import AuthGateTesting
import Logging
import Testing

@testable import Gateway

/// The proxy's sessions by name: a lookup finds the session of that name, however the name
/// was made, and nothing for a name that is not configured.
struct SessionDirectoryTests {
    /// A session that talks to a fake authorization server; never started here.
    static func actor() -> AuthActor {
        let clock = TestClock()
        let server = FakeAuthorizationServer(configuration: .init(), clock: clock)
        let client = OAuth2Client(
            configuration: .init(tokenEndpoint: "https://auth.example.test/oauth/token", clientID: "c", clientSecret: "s"),
            transport: server, clock: clock)
        return AuthActor(
            client: client, tokenStore: InMemoryTokenStore(), stateStore: InMemorySessionStateStore(), clock: clock,
            configuration: AuthActor.Configuration(skew: .zero, jitter: .zero),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), randomFraction: { 0 })
    }

    @Test func eachNameFindsItsOwnSessionWhateverItsStorage() {
        let long = "a-session-name-longer-than-fifteen-bytes"
        let (a, b, c) = (Self.actor(), Self.actor(), Self.actor())
        let directory = SessionDirectory(["default": a, "billing": b, long: c])
        // Built at run time, so not the same storage as the keys above.
        let longAgain = ["a-session-name", "longer-than", "fifteen-bytes"].joined(separator: "-")
        #expect(directory.session(named: "default") === a)
        #expect(directory.session(named: String("billing".reversed().reversed())) === b)
        #expect(directory.session(named: longAgain) === c)
        #expect(directory.session(named: "Default") == nil, "names are compared exactly")
        #expect(directory.session(named: "") == nil)
        #expect(directory.contains(longAgain))
        #expect(!directory.contains("billin"))
    }

    @Test func aDirectoryOfNamesOnlyAnswersMembershipButHoldsNoSession() {
        let directory = SessionDirectory(names: ["default", "billing"])
        #expect(directory.contains("billing"))
        #expect(!directory.contains("payments"))
        #expect(directory.session(named: "billing") == nil)
    }
}
