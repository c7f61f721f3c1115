public import AuthCore
public import HTTPWire

/// When a resource server's answer asks a DPoP proof for its nonce (RFC 9449 §9): 401 with a
/// `DPoP` challenge whose error is `use_dpop_nonce`, and the nonce in `DPoP-Nonce`. The
/// request is then sent once more with the same token and a proof carrying the nonce: not a
/// token rejection, so no refresh and no replay counted.
public enum DPoPNonceRule {
    /// The `authgate_replays_total` outcomes of DPoP: a resend for the upstream's nonce, and
    /// an answer refusing the proof itself (`invalid_dpop_proof`: most often a clock too far
    /// from the upstream's), which the client gets as ``proofRejected(skew:)``.
    public static let outcomes = ["dpop_nonce", "dpop_proof_rejected"]

    /// What the client gets when the upstream refused the proof AuthGate made: 502
    /// `dpop-proof-rejected`, since neither the client nor a refresh can put it right. The
    /// detail says how far the upstream's clock is from AuthGate's when its `Date` says so.
    public static func proofRejected(skew: Duration?) -> Problem {
        var detail = "the upstream refused the DPoP proof made for the session's token (invalid_dpop_proof)"
        if let skew {
            let seconds = Int(skew.components.seconds)
            detail += "; its clock is \(abs(seconds)) s \(seconds > 0 ? "ahead of" : "behind") AuthGate's"
        }
        return Problem(
            type: "https://authgate.dev/problems/dpop-proof-rejected", title: Problem.title(forStatus: 502), status: 502,
            detail: detail)
    }

    /// What an answer says of the DPoP proof of the request it answers.
    public struct Verdict: Sendable, Equatable {
        /// The nonce to put in the next proofs to the answer's origin (its `DPoP-Nonce`),
        /// whether or not the answer asks for a resend.
        public var nonce: String?
        /// The answer asks for the request to be sent again with ``nonce``
        /// (``requestedNonce(status:headers:)``).
        public var nonceRequested = false
        /// The answer refuses the proof itself (``refusesProof(status:headers:)``).
        public var proofRefused = false
        /// The answer took the proof (a status under 400): a clock found skewed is not any more.
        public var proofAccepted = false
    }

    /// What `headers` with `status` say of the proof of a request sent with a nonce it was
    /// asked for (`nonceResent`) or not. One rule for every caller that proves a session's key
    /// (the proxy, the user-info call). An answer that asks for a nonce and also refuses the
    /// proof asks for the nonce the first time (a proof without the nonce the server now
    /// demands may read to it as invalid, and the resend costs one request); once the
    /// request went with the nonce, it refuses the proof.
    public static func verdict(status: Int, headers: HTTPHeaders, nonceResent: Bool) -> Verdict {
        var verdict = Verdict()
        verdict.nonce = headers[first: "dpop-nonce"].flatMap { $0.isEmpty ? nil : $0 }
        verdict.nonceRequested = requestedNonce(status: status, headers: headers) != nil
        verdict.proofRefused = refusesProof(status: status, headers: headers) && (!verdict.nonceRequested || nonceResent)
        verdict.proofAccepted = status < 400
        return verdict
    }

    /// Whether `headers` with `status` refuse the request's DPoP proof (RFC 9449 §7.1).
    public static func refusesProof(status: Int, headers: HTTPHeaders) -> Bool {
        guard status == 401 else { return false }
        return WWWAuthenticateChallenge.parse(fieldValues: headers[all: "www-authenticate"]).contains {
            $0.scheme.lowercased() == "dpop" && $0.error == "invalid_dpop_proof"
        }
    }

    /// The nonce `headers` ask for with `status`, or nil when the answer is not such a request.
    public static func requestedNonce(status: Int, headers: HTTPHeaders) -> String? {
        guard status == 401, let nonce = headers[first: "dpop-nonce"], !nonce.isEmpty else { return nil }
        let challenges = WWWAuthenticateChallenge.parse(fieldValues: headers[all: "www-authenticate"])
        guard challenges.contains(where: { $0.scheme.lowercased() == "dpop" && $0.error == "use_dpop_nonce" }) else {
            return nil
        }
        return nonce
    }
}
