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
}
