import AuthCore
import Testing

@Suite struct OIDCDiscoveryTests {
    let issuer = "https://id.example.test/realms/main"

    func parse(_ json: String, issuer: String? = nil) throws(AuthError) -> OIDCDiscovery {
        try OIDCDiscovery.parse(Array(json.utf8), expectedIssuer: issuer ?? self.issuer)
    }

    @Test func theDocumentURLFollowsTheIssuerWithOrWithoutATrailingSlash() {
        #expect(OIDCDiscovery.documentURL(forIssuer: issuer) == issuer + "/.well-known/openid-configuration")
        #expect(OIDCDiscovery.documentURL(forIssuer: issuer + "/") == issuer + "/.well-known/openid-configuration")
    }

    @Test func endpointsAreReadFromAMatchingDocument() throws {
        let d = try parse(
            #"{"issuer":"\#(issuer)","token_endpoint":"\#(issuer)/token","revocation_endpoint":"\#(issuer)/revoke","introspection_endpoint":"\#(issuer)/introspect","userinfo_endpoint":"\#(issuer)/me","authorization_endpoint":"\#(issuer)/auth","jwks_uri":"x"}"#
        )
        #expect(d.tokenEndpoint == issuer + "/token")
        #expect(d.revocationEndpoint == issuer + "/revoke")
        #expect(d.introspectionEndpoint == issuer + "/introspect")
        #expect(d.userInfoEndpoint == issuer + "/me")
        #expect(d.authorizationEndpoint == issuer + "/auth")
    }

    @Test func mutualTLSAliasesAreReadWhereTheProviderNamesThem() throws {
        let d = try parse(
            #"{"issuer":"\#(issuer)","token_endpoint":"\#(issuer)/token","mtls_endpoint_aliases":{"token_endpoint":"https://mtls.example.test/token","revocation_endpoint":"https://mtls.example.test/revoke","userinfo_endpoint":"https://mtls.example.test/me","pushed_authorization_request_endpoint":"https://mtls.example.test/par"}}"#
        )
        #expect(d.tokenEndpoint == issuer + "/token", "the plain endpoint stays for clients without a certificate")
        #expect(d.mutualTLSAliases.tokenEndpoint == "https://mtls.example.test/token")
        #expect(d.mutualTLSAliases.revocationEndpoint == "https://mtls.example.test/revoke")
        #expect(d.mutualTLSAliases.userInfoEndpoint == "https://mtls.example.test/me")
        #expect(d.mutualTLSAliases.introspectionEndpoint == nil)
        #expect(try parse(#"{"issuer":"\#(issuer)","token_endpoint":"\#(issuer)/t"}"#).mutualTLSAliases == .init())
    }

    @Test func optionalEndpointsMayBeMissingOrNull() throws {
        let d = try parse(#"{"issuer":"\#(issuer)","token_endpoint":"\#(issuer)/token","revocation_endpoint":null}"#)
        #expect(d.revocationEndpoint == nil)
        #expect(d.userInfoEndpoint == nil)
    }

    @Test(arguments: [
        (#"{"issuer":"https://evil.example.test","token_endpoint":"https://evil.example.test/t"}"#, "another issuer"),
        (#"{"token_endpoint":"https://id.example.test/t"}"#, "has no issuer"),
        (#"{"issuer":"https://id.example.test/realms/main"}"#, "has no token_endpoint"),
        (#"{"issuer":"https://id.example.test/realms/main","token_endpoint":"ftp://x/t"}"#, "token_endpoint is not"),
        (#"{"issuer":"https://id.example.test/realms/main","token_endpoint":"https://x/t\r\nX: 1"}"#, "token_endpoint is not"),
        (
            #"{"issuer":"https://id.example.test/realms/main","token_endpoint":"https://x/t","revocation_endpoint":7}"#,
            "revocation_endpoint is not"
        ),
        (
            #"{"issuer":"https://id.example.test/realms/main","token_endpoint":"https://x/t","mtls_endpoint_aliases":[]}"#,
            "mtls_endpoint_aliases is not a JSON object"
        ),
        (
            #"{"issuer":"https://id.example.test/realms/main","token_endpoint":"https://x/t","mtls_endpoint_aliases":{"token_endpoint":"x"}}"#,
            "mtls_endpoint_aliases.token_endpoint is not"
        ),
        (#"[1,2]"#, "not a JSON object"),
        (#"<html>"#, "not valid JSON"),
    ])
    func unusableDocumentsAreRefusedNamingTheField(json: String, message: String) {
        #expect {
            _ = try parse(json)
        } throws: { error in
            (error as? AuthError).map { $0.code == .invalidDiscovery && $0.message.contains(message) } == true
        }
    }

    @Test func issuersMustBeHTTPURLsWithoutQueryOrFragment() {
        #expect(OIDCDiscovery.isValidIssuer("https://id.example.test"))
        #expect(OIDCDiscovery.isValidIssuer("http://127.0.0.1:8080/api/oidc"))
        #expect(!OIDCDiscovery.isValidIssuer("https://id.example.test/?x=1"))
        #expect(!OIDCDiscovery.isValidIssuer("https://id.example.test/#f"))
        #expect(!OIDCDiscovery.isValidIssuer("id.example.test"))
        #expect(!OIDCDiscovery.isValidIssuer("https:///nohost"))
    }
}
