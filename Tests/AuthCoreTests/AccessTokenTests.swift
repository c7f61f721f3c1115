import AuthCore
import Testing

/// The `Authorization` value an access token is sent with, made once with the token.
@Suite struct AccessTokenTests {
    @Test(arguments: [("bearer", "Bearer"), ("Bearer", "Bearer"), ("BEARER", "Bearer"), ("DPoP", "DPoP"), ("mac", "mac")])
    func theAuthorizationValueNamesTheTypeAsSent(type: String, sent: String) {
        let token = AccessToken(value: "abc.def", tokenType: type, generation: TokenGeneration(3), expiresAt: nil)
        #expect(token.authorizationHeaderValue == "\(sent) abc.def")
        #expect(!token.description.contains("abc") && !token.debugDescription.contains("abc"))
        let again = AccessToken(value: "abc.def", tokenType: type, generation: TokenGeneration(3), expiresAt: nil)
        #expect(token == again)
        #expect(token != AccessToken(value: "abc.deg", tokenType: type, generation: TokenGeneration(3), expiresAt: nil))
    }

    /// Whether the `Authorization` value can go into a header line without being scanned
    /// again: the syntax AuthGate accepts tokens with, decided once.
    @Test(arguments: [
        ("abc.DEF-_~+/9==", "Bearer", true), ("abc", "DPoP", true), ("a b", "Bearer", false),
        ("abc\r\nX-Injected: 1", "Bearer", false), ("abc", "Bear er", false), ("", "Bearer", false),
        ("abc\u{7F}", "Bearer", false), ("abc", "Bearer\t", false),
    ])
    func aTokenIsWellFormedOnlyWithTheSyntaxAuthGateAcceptsTokensWith(value: String, type: String, wellFormed: Bool) {
        let token = AccessToken(value: value, tokenType: type, generation: TokenGeneration(1), expiresAt: nil)
        #expect(token.isWellFormed == wellFormed)
        #expect(token.isWellFormed == (TokenSyntax.isB64Token(value) && TokenSyntax.isTokenType(type)))
    }
}
