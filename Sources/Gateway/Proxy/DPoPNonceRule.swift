public import AuthCore
public import HTTPWire

/// When a resource server's answer asks a DPoP proof for its nonce (RFC 9449 §9): 401 with a
/// `DPoP` challenge whose error is `use_dpop_nonce`, and the nonce in `DPoP-Nonce`. The
/// request is then sent once more with the same token and a proof carrying the nonce: not a
/// token rejection, so no refresh and no replay counted.
public enum DPoPNonceRule {
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
