import AuthCore
import Testing

@Suite struct WWWAuthenticateChallengeTests {
    @Test func bearerInvalidTokenIsRecognised() {
        let challenges = WWWAuthenticateChallenge.parse(
            #"Bearer realm="example", error="invalid_token", error_description="The access token expired""#)
        #expect(challenges.count == 1)
        let bearer = challenges[0]
        #expect(bearer.isBearer)
        #expect(bearer.realm == "example")
        #expect(bearer.bearerError == .invalidToken)
        #expect(bearer.errorDescription == "The access token expired")
    }

    @Test func insufficientScopeIsToldApartFromInvalidToken() {
        let bearer = WWWAuthenticateChallenge.parse(
            #"Bearer error="insufficient_scope", scope="read write""#)[0]
        #expect(bearer.bearerError == .insufficientScope)
        #expect(bearer.scope == "read write")
    }

    @Test func multipleChallengesInOneFieldAndAcrossFields() {
        let challenges = WWWAuthenticateChallenge.parse(
            #"Basic realm="simple", Bearer realm="api", error=invalid_token"#, "Negotiate abc123==")
        #expect(challenges.map(\.scheme) == ["Basic", "Bearer", "Negotiate"])
        #expect(challenges[0].realm == "simple")
        #expect(challenges[1].error == "invalid_token")
        #expect(challenges[2].token68 == "abc123==")
    }

    @Test func quotedStringsUnescapeAndParameterNamesAreCaseInsensitive() {
        let bearer = WWWAuthenticateChallenge.parse(#"bearer REALM="a \"quoted\" realm" , Error = "invalid_request""#)[0]
        #expect(bearer.isBearer)
        #expect(bearer.realm == #"a "quoted" realm"#)
        #expect(bearer.bearerError == .invalidRequest)
    }

    @Test func aParameterWhoseNameIsNotATokenIsSkipped() {
        // `/` may appear in a token68, never in a parameter name.
        #expect(
            WWWAuthenticateChallenge.parse("Bearer a/b=c, realm=x")
                == [WWWAuthenticateChallenge(scheme: "Bearer", parameters: ["realm": "x"])])
        #expect(
            WWWAuthenticateChallenge.parse("Negotiate a/b==") == [WWWAuthenticateChallenge(scheme: "Negotiate", token68: "a/b==")]
        )
    }

    @Test func bareBearerHasNoError() {
        let challenges = WWWAuthenticateChallenge.parse("Bearer")
        #expect(challenges == [WWWAuthenticateChallenge(scheme: "Bearer")])
        #expect(challenges[0].bearerError == nil)
        #expect(WWWAuthenticateChallenge.parse("").isEmpty)
        #expect(WWWAuthenticateChallenge.parse(", ,").isEmpty)
    }
}
