import HTTPWire
import Testing

@testable import Gateway

/// What an upstream's answer says of a DPoP proof, as the proxy and the user-info call both
/// judge it: a nonce to keep, a resend asked for, a refused proof, an accepted one.
@Suite struct DPoPNonceRuleTests {
    static func headers(_ challenge: String?, nonce: String? = nil) -> HTTPHeaders {
        var h = HTTPHeaders()
        if let challenge { h.add(name: "WWW-Authenticate", value: challenge) }
        if let nonce { h.add(name: "DPoP-Nonce", value: nonce) }
        return h
    }

    static let askNonce = #"DPoP error="use_dpop_nonce", error_description="nonce required""#
    static let refuse = #"DPoP error="invalid_dpop_proof""#

    @Test func anAcceptedProofKeepsTheNonceItIsGiven() {
        let v = DPoPNonceRule.verdict(status: 200, headers: Self.headers(nil, nonce: "n1"), nonceResent: false)
        #expect(v == .init(nonce: "n1", nonceRequested: false, proofRefused: false, proofAccepted: true))
        let none = DPoPNonceRule.verdict(status: 204, headers: Self.headers(nil, nonce: ""), nonceResent: false)
        #expect(none.nonce == nil, "an empty DPoP-Nonce is no nonce")
    }

    @Test func aRequestForANonceAsksForAResendWithIt() {
        let v = DPoPNonceRule.verdict(status: 401, headers: Self.headers(Self.askNonce, nonce: "n2"), nonceResent: false)
        #expect(v == .init(nonce: "n2", nonceRequested: true, proofRefused: false, proofAccepted: false))
        // A use_dpop_nonce challenge without the nonce itself asks for nothing that can be sent.
        let bare = DPoPNonceRule.verdict(status: 401, headers: Self.headers(Self.askNonce), nonceResent: false)
        #expect(!bare.nonceRequested)
        // Only a 401 asks.
        let forbidden = DPoPNonceRule.verdict(status: 403, headers: Self.headers(Self.askNonce, nonce: "n"), nonceResent: false)
        #expect(!forbidden.nonceRequested && forbidden.nonce == "n")
    }

    @Test func aRefusedProofIsRefusedWhetherOrNotTheNonceWasSent() {
        for resent in [false, true] {
            let v = DPoPNonceRule.verdict(status: 401, headers: Self.headers(Self.refuse), nonceResent: resent)
            #expect(v == .init(nonce: nil, nonceRequested: false, proofRefused: true, proofAccepted: false))
        }
    }

    @Test func aRefusalThatAlsoAsksForANonceIsAResendFirstAndARefusalAfter() {
        var h = Self.headers(Self.askNonce, nonce: "n3")
        h.add(name: "WWW-Authenticate", value: Self.refuse)
        let first = DPoPNonceRule.verdict(status: 401, headers: h, nonceResent: false)
        #expect(first.nonceRequested && !first.proofRefused, "the proof lacked the nonce: send it once with the nonce")
        let after = DPoPNonceRule.verdict(status: 401, headers: h, nonceResent: true)
        #expect(after.nonceRequested && after.proofRefused, "refused again with the nonce: the proof is refused")
    }

    @Test func aTokenRejectionIsNoVerdictOnTheProof() {
        let v = DPoPNonceRule.verdict(
            status: 401, headers: Self.headers(#"DPoP error="invalid_token""#), nonceResent: false)
        #expect(v == .init(nonce: nil, nonceRequested: false, proofRefused: false, proofAccepted: false))
    }
}
