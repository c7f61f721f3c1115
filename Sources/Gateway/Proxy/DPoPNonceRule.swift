public import AuthCore
public import HTTPWire

/// When a resource server's answer asks a DPoP proof for its nonce (RFC 9449 §9): 401 with a
/// `DPoP` challenge whose error is `use_dpop_nonce`, and the nonce in `DPoP-Nonce`. The
/// request is then sent once more with the same token and a proof carrying the nonce: not a
/// token rejection, so no refresh and no replay counted.
public enum DPoPNonceRule {
    /// The `authgate_replays_total` outcomes of DPoP: a resend for the upstream's nonce, and
    /// an answer refusing the proof itself (`invalid_dpop_proof`: the key file unusable, or
    /// the clock too far from the upstream's), which goes to the client as it is.
    public static let outcomes = ["dpop_nonce", "dpop_proof_rejected"]

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
