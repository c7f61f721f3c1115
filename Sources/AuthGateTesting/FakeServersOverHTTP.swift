import AuthCore
import Foundation
import HTTPWire
import Locking
public import Runtime

/// Serves a ``FakeAuthorizationServer`` over real HTTP on the libuv server.
public struct FakeAuthorizationServerResponder: HTTPResponder {
    /// The server behind it.
    public let server: FakeAuthorizationServer

    /// Creates the responder.
    public init(server: FakeAuthorizationServer) { self.server = server }

    public func respond(to request: HTTPRequest, writer: ResponseWriter) {
        guard case .buffered(let body) = request.body else { return }
        if request.head.path == "/.well-known/openid-configuration", request.head.method == "GET" {
            // OpenID Connect discovery: the issuer is this server's origin as the client named it.
            let issuer = "http://\(request.head.headers[first: "host"] ?? "localhost")"
            let json =
                "{\"issuer\":\(Problem.quote(issuer)),\"token_endpoint\":\(Problem.quote(issuer + "/oauth/token")),"
                + "\"revocation_endpoint\":\(Problem.quote(issuer + "/oauth/revoke")),"
                + "\"grant_types_supported\":[\"password\",\"client_credentials\",\"authorization_code\",\"refresh_token\"],"
                + "\"code_challenge_methods_supported\":[\"S256\"]}"
            var h = HTTPHeaders()
            h.add(name: "Content-Type", value: "application/json")
            writer.respond(status: 200, headers: h, body: Array(json.utf8))
            return
        }
        if request.head.path == "/stats" {
            // The counters, for harnesses that check how many refreshes reached the server.
            let server = self.server
            Task(executorPreference: request.loop) {
                let c = await server.statistics
                let grants = c.grants.sorted { $0.key < $1.key }.map { "\(Problem.quote($0.key)):\($0.value)" }.joined(
                    separator: ",")
                let json =
                    "{\"requests\":\(c.requests),\"refreshes\":\(c.refreshes),\"refresh_attempts\":\(c.refreshAttempts),\"reuse_detections\":\(c.reuseDetections),\"grace_reuses\":\(c.graceReuses),\"injected_failures\":\(c.injectedFailures),\"revocations\":\(c.revocations),\"device_authorizations\":\(c.deviceAuthorizations),\"device_polls\":\(c.devicePolls),\"slow_downs\":\(c.slowDowns),\"grants\":{\(grants)}}"
                var h = HTTPHeaders()
                h.add(name: "Content-Type", value: "application/json")
                writer.respond(status: 200, headers: h, body: Array(json.utf8))
            }
            return
        }
        let value = HTTPRequestValue(
            method: request.head.method,
            url: "http://\(request.head.headers[first: "host"] ?? "localhost")\(request.head.target)",
            headers: request.head.headers.fields, body: body)
        let server = self.server
        Task(executorPreference: request.loop) {
            do {
                let response = try await server.send(value)
                writer.respond(status: response.status, headers: HTTPHeaders(response.headers), body: response.body)
            } catch {
                // An injected dropped answer: the connection closes without a response.
                writer.abort()
            }
        }
    }
}

/// A resource server that accepts the access tokens a ``FakeAuthorizationServer`` issued
/// and has not expired, the way a real API behind AuthGate would.
///
/// - `/public/…` answers without looking at `Authorization`.
/// - `/admin/…` answers 403 with `insufficient_scope` to any valid token.
/// - `/userinfo` answers a valid token with the status set by ``answerUserInfo(status:)``
///   (default 200, `{"sub":…}`), so a test can say "needs sign-up" (404) or fail (503).
/// - everything else needs a valid token: 401 `invalid_token` for an expired or unknown
///   one, 401 with a bare `Bearer` challenge when there is none. The status and the realm
///   of that answer can be changed (``answerRejectedTokens(status:realm:)``), the way APIs
///   that answer 419 or name their own realm do.
/// A token the authorization server bound to a DPoP key (``FakeAuthorizationServer/dpopBinding(of:)``)
/// is accepted only as `Authorization: DPoP …` with a proof of that key for this request
/// (``DPoPVerifier``: method, `http://{Host}{target}`, `ath`, a fresh `jti`, and the nonce
/// set by ``requireDPoPNonce(_:)``), else 401 with a `DPoP` challenge (`use_dpop_nonce` and
/// a `DPoP-Nonce` when only the nonce is missing).
/// Every answer is JSON echoing the method, path, body size and whether a token came.
public final class FakeResourceServer: HTTPResponder {
    /// The authorization server whose tokens are accepted.
    public let authorization: FakeAuthorizationServer
    private let counters = Locked(Counters())
    private let tokens = Locked(Set<String>())
    private let rejection = Locked((status: 401, realm: "fake"))
    private let userInfoStatus = Locked(200)
    private let beforeCheck = Locked<(@Sendable (Int) async -> Void)?>(nil)
    private let authenticatedRequests = Locked(0)
    private let dpop = Locked(
        (nonce: String?.none, rotating: false, issued: 0, seen: Set<String>(), clockOffset: Double(0)))

    /// What the resource server saw.
    public struct Counters: Sendable, Equatable {
        /// Requests answered 2xx.
        public var accepted = 0
        /// Requests refused for their token.
        public var rejected = 0
        /// Requests without any `Authorization`.
        public var anonymous = 0
        /// Requests with a DPoP-bound token whose proof was good.
        public var dpopAccepted = 0
        /// Requests with a DPoP-bound token refused for their proof (or its absence), by reason.
        public var dpopRefusals: [String] = []
    }

    /// Creates the server.
    public init(authorization: FakeAuthorizationServer) { self.authorization = authorization }

    /// Answers a missing, expired or unknown token with this status and `Bearer` realm from
    /// now on (default 401, realm `fake`).
    public func answerRejectedTokens(status: Int, realm: String) {
        rejection.withLock { $0 = (status, realm) }
    }

    /// Runs `hook` with the request's number (1, 2, …, counting requests that carry a bearer
    /// token) before the token of each such request is checked: the answer waits for it, as
    /// a slow API's would, and the hook can change the world meanwhile (rotate the token).
    public func beforeCheckingTokens(_ hook: (@Sendable (Int) async -> Void)?) {
        beforeCheck.withLock { $0 = hook }
    }

    /// Makes DPoP proofs carry `nonce` from now on (nil: none needed); `rotating`: a new
    /// one after every answer that asks for it, as a server whose nonces last one use does.
    public func requireDPoPNonce(_ nonce: String?, rotating: Bool = false) {
        dpop.withLock {
            $0.nonce = nonce
            $0.rotating = rotating
        }
    }

    /// Checks the `iat` of DPoP proofs against a clock `offset` away from the real one, as a
    /// server whose clock is off does: beyond the verifier's window, every proof is refused
    /// (`invalid_dpop_proof`).
    public func skewDPoPClock(by offset: Double) {
        dpop.withLock { $0.clockOffset = offset }
    }

    /// Answers `/userinfo` with `status` from now on (default 200).
    public func answerUserInfo(status: Int) {
        userInfoStatus.withLock { $0 = status }
    }

    /// A snapshot of the counters.
    public var statistics: Counters { counters.withLock { $0 } }

    /// Every bearer token presented so far (tests search logs and bodies for them).
    public var seenTokens: Set<String> { tokens.withLock { $0 } }

    public func respond(to request: HTTPRequest, writer: ResponseWriter) {
        let head = request.head
        let bodyCount: Int
        if case .buffered(let b) = request.body { bodyCount = b.count } else { bodyCount = 0 }
        let auth = head.headers[first: "authorization"]
        let path = String(head.path)
        func answer(_ status: Int, _ extra: HTTPHeaders = HTTPHeaders()) {
            var h = extra
            h.add(name: "Content-Type", value: "application/json")
            let json =
                "{\"status\":\(status),\"method\":\(Problem.quote(head.method)),\"path\":\(Problem.quote(path)),\"body_bytes\":\(bodyCount),\"authenticated\":\(auth != nil)}"
            writer.respond(status: status, headers: h, body: Array(json.utf8))
        }
        if path.hasPrefix("/public") {
            counters.withLock {
                $0.accepted += 1
                if auth == nil { $0.anonymous += 1 }
            }
            answer(200)
            return
        }
        guard let auth, auth.hasPrefix("Bearer ") || auth.hasPrefix("DPoP ") else {
            counters.withLock {
                $0.anonymous += 1
                $0.rejected += 1
            }
            let (status, realm) = rejection.withLock { $0 }
            var h = HTTPHeaders()
            h.add(name: "WWW-Authenticate", value: "Bearer realm=\(Problem.quote(realm))")
            answer(status, h)
            return
        }
        let scheme = auth.hasPrefix("DPoP ") ? "DPoP" : "Bearer"
        let token = String(auth.dropFirst(scheme.count + 1))
        let proof = head.headers[first: "dpop"]
        // Behind a TLS terminator, as an API often is, the URL its clients used is https: the
        // terminator says so in X-Forwarded-Proto (and passes the Host they sent).
        let origin = head.headers[first: "x-forwarded-proto"] == "https" ? "https" : "http"
        let url = "\(origin)://\(head.headers[first: "host"] ?? "")\(head.target)"
        tokens.withLock { _ = $0.insert(token) }
        let server = authorization
        let number = authenticatedRequests.withLock { n -> Int in
            n += 1
            return n
        }
        let hook = beforeCheck.withLock { $0 }
        Task(executorPreference: request.loop) { [self] in
            await hook?(number)
            let valid = await server.isValid(accessToken: token)
            let binding = valid ? await server.dpopBinding(of: token) : nil
            if valid, binding != nil || scheme == "DPoP" {
                let refusal = checkProof(proof, scheme: scheme, binding: binding, method: head.method, url: url, token: token)
                if let refusal {
                    counters.withLock {
                        $0.rejected += 1
                        $0.dpopRefusals.append(refusal.rawValue)
                    }
                    var h = HTTPHeaders()
                    if refusal == .nonceNeeded,
                        let nonce = dpop.withLock({ d -> String? in
                            defer {
                                if d.rotating {
                                    d.issued += 1
                                    d.nonce = "rotated-\(d.issued)"
                                }
                            }
                            return d.nonce
                        })
                    {
                        h.add(name: "WWW-Authenticate", value: "DPoP error=\"use_dpop_nonce\", algs=\"ES256 PS256\"")
                        h.add(name: "DPoP-Nonce", value: nonce)
                    } else if refusal == .badKey {
                        h.add(name: "WWW-Authenticate", value: "DPoP error=\"invalid_token\", algs=\"ES256 PS256\"")
                    } else {
                        h.add(name: "WWW-Authenticate", value: "DPoP error=\"invalid_dpop_proof\", algs=\"ES256 PS256\"")
                        // The time on its own clock, as a server that keeps one sends.
                        h.add(name: "Date", value: HTTPDate.format(Date() + dpop.withLock { $0.clockOffset }))
                    }
                    answer(401, h)
                    return
                }
                counters.withLock { $0.dpopAccepted += 1 }
            }
            if !valid {
                counters.withLock { $0.rejected += 1 }
                let (status, realm) = rejection.withLock { $0 }
                var h = HTTPHeaders()
                h.add(name: "WWW-Authenticate", value: "\(scheme) realm=\(Problem.quote(realm)), error=\"invalid_token\"")
                answer(status, h)
            } else if path == "/userinfo" {
                let status = userInfoStatus.withLock { $0 }
                counters.withLock { if (200..<300).contains(status) { $0.accepted += 1 } else { $0.rejected += 1 } }
                answer(status)
            } else if path.hasPrefix("/admin") {
                counters.withLock { $0.rejected += 1 }
                var h = HTTPHeaders()
                h.add(name: "WWW-Authenticate", value: "Bearer realm=\"fake\", error=\"insufficient_scope\", scope=\"admin\"")
                answer(403, h)
            } else {
                counters.withLock { $0.accepted += 1 }
                answer(200)
            }
        }
    }

    /// Why the DPoP proof of a request with a token bound to `binding` is refused, or nil.
    private func checkProof(
        _ proof: String?, scheme: String, binding: String?, method: String, url: String, token: String
    ) -> DPoPVerifier.Refusal? {
        guard let binding, scheme == "DPoP", let proof else { return .malformed }
        return dpop.withLock { state -> DPoPVerifier.Refusal? in
            do throws(DPoPVerifier.Refusal) {
                let jkt = try DPoPVerifier().verify(
                    proof, method: method, url: url, now: Date() + state.clockOffset, accessToken: token, nonce: state.nonce,
                    seen: &state.seen)
                return jkt == binding ? nil : .badKey
            } catch {
                return error
            }
        }
    }
}
