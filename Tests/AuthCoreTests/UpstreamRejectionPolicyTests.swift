import AuthCore
import Foundation
import Testing

/// REFERENCES.md item 7: only a rejected token triggers a refresh.
@Suite struct UpstreamRejectionPolicyTests {
    let policy = UpstreamRejectionPolicy()

    @Test func invalidTokenAndBareBearerChallengesAreTokenRejections() throws {
        #expect(policy.classify(status: 401, wwwAuthenticate: [#"Bearer error="invalid_token""#]) == .tokenRejected)
        #expect(policy.classify(status: 401, wwwAuthenticate: [#"Bearer realm="api""#]) == .tokenRejected)
        #expect(policy.classify(status: 401, wwwAuthenticate: []) == .tokenRejected)
        #expect(
            try UpstreamRejectionPolicy(bareUnauthorizedMeansTokenRejected: false)
                .classify(status: 401, wwwAuthenticate: []) == .notAboutToken)
    }

    @Test func aDPoPChallengeRejectsTheTokenOnlyForTheTokensErrors() {
        #expect(policy.classify(status: 401, wwwAuthenticate: [#"DPoP error="invalid_token", algs="ES256""#]) == .tokenRejected)
        #expect(policy.classify(status: 401, wwwAuthenticate: [#"DPoP algs="ES256""#]) == .tokenRejected)
        #expect(policy.classify(status: 401, wwwAuthenticate: [#"DPoP error="use_dpop_nonce""#]) == .notAboutToken)
        #expect(policy.classify(status: 401, wwwAuthenticate: [#"DPoP error="invalid_dpop_proof""#]) == .notAboutToken)
        #expect(policy.classify(status: 403, wwwAuthenticate: [#"DPoP error="insufficient_scope""#]) == .insufficientScope)
    }

    @Test func forbiddenAndForeignChallengesNeverTriggerARefresh() {
        #expect(policy.classify(status: 403, wwwAuthenticate: []) == .notAboutToken)
        #expect(policy.classify(status: 403, wwwAuthenticate: [#"Bearer error="invalid_token""#]) == .notAboutToken)
        #expect(policy.classify(status: 401, wwwAuthenticate: [#"Basic realm="downstream""#]) == .notAboutToken)
        #expect(policy.classify(status: 401, wwwAuthenticate: [#"Bearer error="invalid_request""#]) == .notAboutToken)
    }

    @Test func insufficientScopeIsNotCuredByRefresh() {
        #expect(
            policy.classify(status: 403, wwwAuthenticate: [#"Bearer error="insufficient_scope", scope="admin""#])
                == .insufficientScope)
        #expect(policy.classify(status: 401, wwwAuthenticate: [#"Bearer error="insufficient_scope""#]) == .insufficientScope)
    }

    @Test func otherStatusesAreNotRejections() {
        #expect(policy.classify(status: 200, wwwAuthenticate: []) == nil)
        #expect(policy.classify(status: 500, wwwAuthenticate: [#"Bearer error="invalid_token""#]) == nil)
    }

    @Test func configuredStatusesCountLikeA401() throws {
        let policy = try UpstreamRejectionPolicy(statuses: [401, 419, 403])
        #expect(policy.classify(status: 419, wwwAuthenticate: []) == .tokenRejected)
        #expect(policy.classify(status: 403, wwwAuthenticate: [#"Bearer error="invalid_token""#]) == .tokenRejected)
        #expect(policy.classify(status: 403, wwwAuthenticate: [#"Bearer error="insufficient_scope""#]) == .insufficientScope)
        #expect(policy.classify(status: 419, wwwAuthenticate: [#"Basic realm="x""#]) == .notAboutToken)
        #expect(policy.classify(status: 440, wwwAuthenticate: []) == nil)
        let only419 = try UpstreamRejectionPolicy(statuses: [419])
        #expect(only419.classify(status: 401, wwwAuthenticate: [#"Bearer error="invalid_token""#]) == nil)
        #expect(only419.classify(status: 403, wwwAuthenticate: [#"Bearer error="insufficient_scope""#]) == .insufficientScope)
    }

    @Test func onlyChallengesFromConfiguredRealmsAreAboutOurToken() throws {
        let policy = try UpstreamRejectionPolicy(realms: ["api"])
        #expect(policy.classify(status: 401, wwwAuthenticate: [#"Bearer realm="api", error="invalid_token""#]) == .tokenRejected)
        #expect(
            policy.classify(status: 401, wwwAuthenticate: [#"Bearer realm="billing", error="invalid_token""#]) == .notAboutToken)
        #expect(policy.classify(status: 401, wwwAuthenticate: [#"Bearer realm="API", error="invalid_token""#]) == .notAboutToken)
        #expect(policy.classify(status: 401, wwwAuthenticate: [#"Bearer error="invalid_token""#]) == .notAboutToken)
        #expect(
            policy.classify(status: 401, wwwAuthenticate: [#"Bearer realm="billing""#, #"Bearer realm="api""#]) == .tokenRejected)
        #expect(policy.classify(status: 401, wwwAuthenticate: []) == .tokenRejected)
        #expect(
            policy.classify(status: 403, wwwAuthenticate: [#"Bearer realm="billing", error="insufficient_scope""#])
                == .notAboutToken)
    }

    @Test func invalidPoliciesAreRefusedNamingTheField() throws {
        let bad = #expect(throws: AuthError.self) {
            try UpstreamRejectionPolicy(statuses: [401, 500])
        }
        #expect(bad?.code == .invalidPolicy && bad?.message == "statuses: 500 is not a 4xx status")
        #expect(throws: AuthError.self) { try UpstreamRejectionPolicy(statuses: []) }
        #expect(throws: AuthError.self) { try UpstreamRejectionPolicy(realms: []) }
        let decoded = try JSONDecoder().decode(
            UpstreamRejectionPolicy.self, from: Data(#"{"statuses":[401,419],"realms":["api"]}"#.utf8))
        #expect(decoded == (try UpstreamRejectionPolicy(statuses: [401, 419], realms: ["api"])))
        #expect(try JSONDecoder().decode(UpstreamRejectionPolicy.self, from: Data("{}".utf8)) == UpstreamRejectionPolicy())
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(UpstreamRejectionPolicy.self, from: Data(#"{"statuses":[200]}"#.utf8))
        }
    }
}
