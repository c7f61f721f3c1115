import AuthCore
import AuthGateTesting
import Foundation
import Testing

@Suite struct CredentialsTests {
    @Test func expiryComesFromExpiresInAsMonotonicDeadlineAndWallClockDate() {
        let now = MonotonicInstant(offset: .seconds(100))
        let wall = Date(timeIntervalSince1970: 1_000_000)
        let credentials = Credentials(
            response: TokenResponse(accessToken: "a", expiresIn: .seconds(60), refreshToken: "r"),
            previousRefreshToken: nil, generation: TokenGeneration(1), now: now, wallNow: wall)
        #expect(credentials.deadline == MonotonicInstant(offset: .seconds(160)))
        #expect(credentials.expiresAt == wall.addingTimeInterval(60))
        #expect(!credentials.isExpired(at: MonotonicInstant(offset: .seconds(159))))
        #expect(credentials.isExpired(at: MonotonicInstant(offset: .seconds(160))))
    }

    @Test func expiryComesFromJWTExpClaimWhenThatIsAllThereIs() {
        let wall = Date(timeIntervalSince1970: 1_000_000)
        let payload = Base64URL.encode(Array(#"{"sub":"alice","exp":1000120}"#.utf8))
        let jwt = "eyJhbGciOiJIUzI1NiJ9.\(payload).c2ln"
        let credentials = Credentials(
            response: TokenResponse(accessToken: jwt), previousRefreshToken: "old",
            generation: TokenGeneration(1), now: MonotonicInstant(offset: .zero), wallNow: wall)
        #expect(credentials.deadline == MonotonicInstant(offset: .seconds(120)))
        #expect(credentials.expiresAt == Date(timeIntervalSince1970: 1_000_120))
        #expect(credentials.refreshToken == "old", "RFC 6749 §6: keep the refresh token when none is issued")
        #expect(JWTClaims(decodingPayloadOf: jwt)?.subject == "alice")
    }

    @Test func opaqueTokenWithoutExpiresInHasUnknownExpiry() {
        let credentials = Credentials(
            response: TokenResponse(accessToken: "opaque"), previousRefreshToken: nil,
            generation: TokenGeneration(1), now: MonotonicInstant(offset: .zero), wallNow: Date())
        #expect(credentials.deadline == nil)
        #expect(!credentials.isExpired(at: MonotonicInstant(offset: .seconds(1_000_000))))
    }

    @Test func descriptionsNeverContainTokens() {
        let secret = "SECRET-TOKEN-VALUE"
        let credentials = Credentials(
            accessToken: secret, refreshToken: secret, deadline: nil, expiresAt: nil, issuedAt: Date(),
            generation: TokenGeneration(3))
        let texts = [
            credentials.description, credentials.debugDescription, String(reflecting: credentials),
            "\(credentials)", TokenResponse(accessToken: secret, refreshToken: secret).description,
            TokenRecord(credentials, grantType: nil).description, AccessToken(credentials).description,
            Grant.password(username: "u", password: secret).description,
            Grant.refreshToken(secret, expiredAccessToken: secret).description,
            PKCEPair(verifier: secret).description,
            OAuth2Client.Configuration(tokenEndpoint: "https://x", clientID: "c", clientSecret: secret).description,
            HTTPRequestValue(method: "POST", url: "https://x", headers: [("Authorization", secret)], body: Array(secret.utf8))
                .description,
        ]
        var dumped = ""
        dump(credentials, to: &dumped)
        dump(Grant.password(username: "u", password: secret), to: &dumped)
        dump(TokenRecord(credentials, grantType: nil), to: &dumped)
        for text in texts + [dumped, String(reflecting: Grant.refreshToken(secret))] {
            #expect(!text.contains(secret), "\(text)")
        }
    }

    @Test func pkceChallengeIsBase64URLOfSHA256OfVerifier() {
        // Computed independently with Python's hashlib.
        let pair = PKCEPair(verifier: "authgate-test-verifier-0123456789abcdefghijklmnop")
        #expect(pair.challenge == "nLJQL_29yu8F7bvNkPCrqT93lQjmOnA9qp2nfKMwJJ0")
        #expect(pair.method == "S256")
        let random = PKCEPair()
        #expect(random.verifier.count == 43)
        #expect(PKCEPair.s256Challenge(for: random.verifier) == random.challenge)
    }

    @Test func formEncodingRoundTripsReservedCharacters() {
        let text = "a b&c=d/é+%"
        let encoded = FormURLEncoding.encode(text)
        #expect(encoded == "a+b%26c%3Dd%2F%C3%A9%2B%25")
        #expect(FormURLEncoding.decode(encoded) == text)
    }

    @Test func backoffDoublesFromOneSecondToFiveMinutes() {
        let policy = BackoffPolicy()
        #expect(policy.delay(afterConsecutiveFailures: 1) == .seconds(1))
        #expect(policy.delay(afterConsecutiveFailures: 2) == .seconds(2))
        #expect(policy.delay(afterConsecutiveFailures: 4) == .seconds(8))
        #expect(policy.delay(afterConsecutiveFailures: 9) == .seconds(256))
        #expect(policy.delay(afterConsecutiveFailures: 10) == .seconds(300))
        #expect(policy.delay(afterConsecutiveFailures: 50) == .seconds(300))
        #expect(policy.delay(afterConsecutiveFailures: 3, retryAfter: .seconds(42)) == .seconds(42))
    }

    @Test func refreshWindowAdmitsAtMostMaximumAttemptsPerInterval() {
        var window = RefreshWindow(interval: .seconds(30), maximumAttempts: 2)
        let t0 = MonotonicInstant(offset: .zero)
        let first = window.admit(at: t0)
        let second = window.admit(at: t0 + .seconds(1))
        let third = window.admit(at: t0 + .seconds(2))
        let afterInterval = window.admit(at: t0 + .seconds(30))
        #expect(first && second && !third && afterInterval)
    }
}
