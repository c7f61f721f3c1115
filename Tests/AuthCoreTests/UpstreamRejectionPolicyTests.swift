import AuthCore
import Testing

/// REFERENCES.md item 7: only a rejected token triggers a refresh.
@Suite struct UpstreamRejectionPolicyTests {
    let policy = UpstreamRejectionPolicy()

    @Test func invalidTokenAndBareBearerChallengesAreTokenRejections() {
        #expect(policy.classify(status: 401, wwwAuthenticate: [#"Bearer error="invalid_token""#]) == .tokenRejected)
        #expect(policy.classify(status: 401, wwwAuthenticate: [#"Bearer realm="api""#]) == .tokenRejected)
        #expect(policy.classify(status: 401, wwwAuthenticate: []) == .tokenRejected)
        #expect(
            UpstreamRejectionPolicy(bareUnauthorizedMeansTokenRejected: false)
                .classify(status: 401, wwwAuthenticate: []) == .notAboutToken)
    }

    @Test func forbiddenAndForeignChallengesNeverTriggerARefresh() {
        #expect(policy.classify(status: 403, wwwAuthenticate: []) == .notAboutToken)
        #expect(policy.classify(status: 403, wwwAuthenticate: [#"Bearer error="invalid_token""#]) == .notAboutToken)
        #expect(policy.classify(status: 401, wwwAuthenticate: [#"Basic realm="downstream""#]) == .notAboutToken)
        #expect(policy.classify(status: 401, wwwAuthenticate: [#"Bearer error="invalid_request""#]) == .notAboutToken)
    }

    @Test func insufficientScopeIsNotCuredByRefresh() {
        #expect(policy.classify(status: 403, wwwAuthenticate: [#"Bearer error="insufficient_scope", scope="admin""#]) == .insufficientScope)
        #expect(policy.classify(status: 401, wwwAuthenticate: [#"Bearer error="insufficient_scope""#]) == .insufficientScope)
    }

    @Test func otherStatusesAreNotRejections() {
        #expect(policy.classify(status: 200, wwwAuthenticate: []) == nil)
        #expect(policy.classify(status: 500, wwwAuthenticate: [#"Bearer error="invalid_token""#]) == nil)
    }
}
