import AuthCore
import AuthGateTesting
import Foundation
import Testing

/// Tokens end up in header lines and form bodies: one that could split a header line or
/// smuggle a parameter is refused where it enters, naming the field, never quoting it.
@Suite struct TokenSyntaxTests {
    static let evil = "abc\r\nX-Evil: 1"

    func client(mapping: TokenEndpointMapping = .standard) -> (OAuth2Client, ScriptedTransport) {
        let transport = ScriptedTransport()
        let oauth = OAuth2Client(
            configuration: .init(
                tokenEndpoint: "https://auth.example.test/oauth/token", clientID: "c", clientSecret: "s", mapping: mapping),
            transport: transport, clock: TestClock())
        return (oauth, transport)
    }

    func refusal(_ response: HTTPResponseValue, mapping: TokenEndpointMapping = .standard) -> AuthError? {
        let (oauth, _) = client(mapping: mapping)
        do {
            _ = try oauth.parse(response, for: .refreshToken("r"), now: Date(timeIntervalSince1970: 0))
            return nil
        } catch let error as AuthError {
            return error
        } catch {
            Issue.record("unexpected \(error)")
            return nil
        }
    }

    @Test func accessTokensAreB64TokensOnly() {
        for good in ["abc", "A-Z.a_z~0+9/", "abc==", "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhIn0.", "x="] {
            #expect(TokenSyntax.isB64Token(good), "\(good)")
        }
        for bad in ["", Self.evil, "a b", "a,b", "a\"b", "=", "==abc", "ab=c", "a\tb", "é", "a\u{0}", "a;b", "a\\b"] {
            #expect(!TokenSyntax.isB64Token(bad), "\(bad.debugDescription)")
        }
    }

    @Test func tokenTypesAreHTTPTokensOnly() {
        for good in ["Bearer", "bearer", "DPoP", "MAC", "N_A!#$%&'*+-.^`|~"] {
            #expect(TokenSyntax.isTokenType(good), "\(good)")
        }
        for bad in ["", "Bearer\r\nX-Evil: 1", "Bea rer", "Bearer:", "a/b", "a,b", "(a)", "Bé"] {
            #expect(!TokenSyntax.isTokenType(bad), "\(bad.debugDescription)")
        }
    }

    @Test func refreshTokensAreVisibleCharactersAndSpaceOnly() {
        for good in ["r", "a b", "~!@#$%^&*()[]{}\"'<>?/\\|"] {
            #expect(TokenSyntax.isRefreshToken(good), "\(good)")
        }
        for bad in ["", "a\r\nb", "a\nb", "a\u{0}b", "a\tb", "a\u{7F}", "é"] {
            #expect(!TokenSyntax.isRefreshToken(bad), "\(bad.debugDescription)")
        }
    }

    @Test func accessTokenThatCouldSplitAHeaderIsRefusedNamingTheFieldWithoutQuotingIt() throws {
        let body = try JSONSerialization.data(withJSONObject: ["access_token": Self.evil, "token_type": "Bearer"])
        let error = refusal(HTTPResponseValue(status: 200, body: Array(body)))
        #expect(error?.code == .invalidTokenSyntax)
        #expect(error?.field == "access_token")
        #expect(error?.disposition == .ambiguous, "the server may have rotated the refresh token meanwhile")
        #expect(error.map { !"\($0)".contains("abc") && !"\($0)".contains("Evil") } == true, "\(String(describing: error))")
    }

    @Test func accessTokenFromAResponseHeaderIsCheckedToo() {
        let mapping = TokenEndpointMapping(accessTokenHeader: "Authorization")
        let bad = HTTPResponseValue(status: 200, headers: [("Authorization", "Bearer a b,c")], body: Array("{}".utf8))
        #expect(refusal(bad, mapping: mapping)?.field == "access_token")
        let good = HTTPResponseValue(status: 200, headers: [("Authorization", "Bearer a.b.c")], body: Array("{}".utf8))
        #expect(refusal(good, mapping: mapping) == nil)
    }

    @Test func tokenTypeAndRefreshTokenAreCheckedNamingTheField() {
        let badType = json(200, #"{"access_token":"a","token_type":"Bearer\r\nX-Evil: 1"}"#)
        #expect(refusal(badType)?.field == "token_type")
        let spaceType = json(200, #"{"access_token":"a","token_type":"Bea rer"}"#)
        #expect(refusal(spaceType)?.field == "token_type")
        let badRefresh = json(200, #"{"access_token":"a","refresh_token":"r\r\nx"}"#)
        #expect(refusal(badRefresh)?.field == "refresh_token")
        let fine = json(200, #"{"access_token":"a","token_type":"DPoP","refresh_token":"r s"}"#)
        #expect(refusal(fine) == nil)
    }

    @Test func importedTokensAreCheckedByTheActor() async throws {
        let h = Harness()
        let error = await #expect(throws: AuthError.self) {
            try await h.actor.login(importing: TokenResponse(accessToken: Self.evil))
        }
        #expect(error?.code == .loginFailed)
        #expect(error?.underlyingAuthError?.field == "access_token")
        #expect(await h.actor.status.isLoggedIn == false)
        #expect(TokenSyntax.violation(in: TokenResponse(accessToken: "a", tokenType: "x y")) == "token_type")
        #expect(TokenSyntax.violation(in: TokenResponse(accessToken: "a", refreshToken: "\u{1}")) == "refresh_token")
        #expect(TokenSyntax.violation(in: TokenResponse(accessToken: "a", refreshToken: "r")) == nil)
    }
}
