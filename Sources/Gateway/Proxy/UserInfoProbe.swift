public import AuthCore
import HTTPWire
import Locking
public import Logging

/// The user-info call of SEEDS row 4: once a session exists (restored at start, or a new
/// login), one authenticated `GET` tells "signed up" from "needs sign-up".
///
/// - 2xx: ``Registration/signedUp``.
/// - a status in ``Configuration/needsSignUpStatuses`` (default 404): ``Registration/needsSignUp``.
/// - a rejected token (by the gateway's ``UpstreamRejectionPolicy``): refreshed and replayed
///   on the proxy's own machine (``ExchangeMachine``, run by ``AuthenticatedExchange``); a freshly refreshed
///   token rejected again logs the session out (`user_info_rejected`) and clears its
///   tokens, as the app clears them.
/// - anything else (403, 5xx, no answer): ``Registration/pending``; the session is kept,
///   `/readyz` says why it is not ready, and the call is retried with backoff. A network
///   error never logs anyone out (REFERENCES.md item 8).
public final class UserInfoProbe: Sendable {
    /// Where and how to ask.
    public struct Configuration: Sendable, Codable, Equatable {
        /// The user-info URL (http or https).
        public var url: String
        /// Statuses that mean "known token, no account yet" (default `[404]`).
        public var needsSignUpStatuses: [Int]?
        /// Longest wait between retries, in seconds (default 30; the first is 1 s).
        public var maxRetrySeconds: Int?

        /// Creates a configuration.
        public init(url: String, needsSignUpStatuses: [Int]? = nil, maxRetrySeconds: Int? = nil) {
            self.url = url
            self.needsSignUpStatuses = needsSignUpStatuses
            self.maxRetrySeconds = maxRetrySeconds
        }
    }

    /// What the user-info call said about the session's account.
    public enum Registration: String, Sendable, Equatable {
        /// Asked, not answered yet (or answered with an error and being retried).
        case pending
        /// The account exists.
        case signedUp = "signed_up"
        /// The token is good but there is no account yet.
        case needsSignUp = "needs_sign_up"
    }

    private struct State {
        var epoch: UInt64?
        var registration: Registration?
        var problem: String?
        var task: Task<Void, Never>?
    }

    let configuration: Configuration
    private let session: AuthActor
    private let transport: any HTTPTransport
    private let policy: UpstreamRejectionPolicy
    private let rule: ReplayRule
    private let logger: Logger
    private let certificate: ClientCertificate?
    private let state = Locked(State())

    /// Creates a probe for `session`, asking through `transport`; `certificate` is shown to
    /// an `https` user-info endpoint (the session's, to which its tokens may be bound).
    public init(
        configuration: Configuration, session: AuthActor, transport: any HTTPTransport, policy: UpstreamRejectionPolicy,
        rule: ReplayRule = ReplayRule(), logger: Logger, certificate: ClientCertificate? = nil
    ) {
        self.certificate = certificate
        self.rule = rule
        self.configuration = configuration
        self.session = session
        self.transport = transport
        self.policy = policy
        self.logger = logger
    }

    /// The registration of the current session; `nil` with no session.
    public var registration: Registration? { state.withLock { $0.registration } }

    /// Why `/readyz` should not say ready yet, or `nil`.
    public var notReadyReason: String? {
        state.withLock { s in s.registration == .pending ? s.problem ?? "the user-info call has not answered yet" : nil }
    }

    /// Follows the session: asks after each login or restore, forgets at logout. Returns
    /// when `events` ends, once the call in flight (cancelled then) has returned.
    public func follow(_ events: AsyncStream<AuthEventRecord>) async {
        for await record in events {
            switch record.event {
            case .state(let s), .restored(let s), .loggedIn(let s):
                if s.isLoggedIn { start(epoch: s.epoch) } else { stop() }
            case .loggedOut:
                stop()
            case .refreshed, .refreshFailed, .deviceAuthorization, .deviceLoginEnded:
                break
            }
        }
        await stop()?.value
    }

    /// Marks the session as pending before anything can read it (called at start, so the
    /// first `/readyz` already waits for the answer).
    public func expect(epoch: UInt64) {
        state.withLock {
            $0.registration = .pending
            $0.epoch = epoch
        }
    }

    private func start(epoch: UInt64) {
        let previous = state.withLock { s -> Task<Void, Never>? in
            // Already asking, or already answered, for this session: nothing to do.
            if s.epoch == epoch && (s.task != nil || (s.registration != nil && s.registration != .pending)) { return nil }
            s.epoch = epoch
            s.registration = .pending
            s.problem = nil
            let t = s.task
            s.task = Task { [self] in await run(epoch: epoch) }
            return t
        }
        previous?.cancel()
    }

    /// Forgets the session; returns the call it cancelled, if one was running.
    @discardableResult
    private func stop() -> Task<Void, Never>? {
        let t = state.withLock { s -> Task<Void, Never>? in
            let t = s.task
            s = State()
            return t
        }
        t?.cancel()
        return t
    }

    private func settle(epoch: UInt64, _ registration: Registration?, problem: String? = nil) {
        state.withLock { s in
            guard s.epoch == epoch else { return }
            s.registration = registration
            s.problem = problem
            if registration != .pending { s.task = nil }
        }
    }

    private func run(epoch: UInt64) async {
        var delay = Duration.seconds(1)
        let longest = Duration.seconds(max(1, configuration.maxRetrySeconds ?? 30))
        while !Task.isCancelled {
            let outcome = await ask()
            switch outcome {
            case .answered(let registration):
                settle(epoch: epoch, registration)
                logger.info("user-info answered", metadata: ["auth.registration": "\(registration.rawValue)"])
                return
            case .rejected(let status):
                settle(epoch: epoch, nil)
                logger.warning("user-info rejected the refreshed token; logging out", metadata: ["http.status": "\(status)"])
                try? await session.logout(reason: .userInfoRejected(status: status), ifEpoch: epoch)
                return
            case .noSession:
                settle(epoch: epoch, nil)
                return
            case .retry(let problem):
                settle(epoch: epoch, .pending, problem: "the user-info call failed (\(problem)); retrying")
                logger.notice(
                    "user-info call failed; retrying",
                    metadata: ["error": "\(problem)", "retry.seconds": "\(delay.components.seconds)"])
                do { try await Task.sleep(for: delay) } catch { return }
                delay = min(delay * 2, longest)
            }
        }
    }

    enum Outcome: Equatable {
        case answered(Registration)
        case rejected(status: Int)
        case noSession
        case retry(String)
    }

    /// One call, made on the proxy's machine (``ExchangeMachine``): a rejected token is
    /// refreshed and the call replayed under the same ``ReplayRule``; the current, freshly
    /// refreshed token rejected again means the account's token is refused.
    private func ask() async -> Outcome {
        var exchange = AuthenticatedExchange(session: session, policy: policy, rule: rule)
        var outcome = Outcome.retry("no answer")
        do throws(GatewayError) {
            while let attempt = try await exchange.next() {
                guard let response = await send(attempt) else {
                    outcome = .retry("no answer")
                    exchange.attemptEnded(.answered)
                    continue
                }
                let action = exchange.headArrived(head(of: response, attempt: attempt))
                if let answered = Self.outcome(status: response.status, action, needsSignUp: configuration.needsSignUpStatuses) {
                    outcome = answered
                    exchange.attemptEnded(.answered)
                } else {
                    exchange.attemptEnded(action == .holdForNonce ? .heldForNonce : .heldForRefresh)
                }
            }
            return outcome
        } catch {
            // No token to start with, or none for a replay: the session's error says why.
            return Self.outcome(of: error.underlying ?? error)
        }
    }

    /// Sends `attempt`: its token, with a proof of its key when the token is DPoP-bound (RFC
    /// 9449 §7), as on a route. Nil when no answer came.
    private func send(_ attempt: AuthenticatedExchange.Attempt) async -> HTTPResponseValue? {
        let token = attempt.token
        var headers = [("Authorization", token.authorizationHeaderValue), ("Accept", "application/json")]
        if token.isDPoP, let proof = token.dpopKey?.proof(method: "GET", url: configuration.url, accessToken: token.value) {
            headers.append(("DPoP", proof))
        }
        let https = configuration.url.lowercased().hasPrefix("https://")
        return try? await transport.send(
            HTTPRequestValue(
                method: "GET", url: configuration.url, headers: headers, clientCertificate: https ? certificate : nil))
    }

    /// The facts of `response`'s head the exchange judges; a DPoP nonce it gives is kept for
    /// the next proof.
    private func head(of response: HTTPResponseValue, attempt: AuthenticatedExchange.Attempt) -> ExchangeMachine.Head {
        let challenges = response.headers.filter { $0.name.lowercased() == "www-authenticate" }.map(\.value)
        var head = ExchangeMachine.Head(status: response.status, wwwAuthenticate: challenges)
        guard attempt.token.isDPoP, let key = attempt.token.dpopKey else { return head }
        let fields = HTTPHeaders(response.headers)
        let dpop = DPoPNonceRule.verdict(status: response.status, headers: fields, nonceResent: attempt.attempt.nonceResent)
        if let nonce = dpop.nonce { key.nonces.remember(nonce, for: configuration.url) }
        head.nonceRequested = dpop.nonceRequested
        if dpop.proofRefused {
            session.countDPoPProofRefused(by: "upstream")
            session.clockSkew.proofRefused(serverDate: fields[first: "date"])
            head.proofRefused = true
        } else if dpop.proofAccepted {
            session.clockSkew.proofAccepted()
        }
        return head
    }

    /// What an answer of `status` says, judged as `action`; nil when it is held back for the
    /// exchange to send the call again (after a refresh, or with a DPoP nonce).
    static func outcome(status: Int, _ action: ExchangeMachine.HeadAction, needsSignUp: [Int]?) -> Outcome? {
        switch action {
        case .holdForNonce: return nil
        case .refuseProof: return .retry("the DPoP proof was refused")
        default: break
        }
        if (200..<300).contains(status) { return .answered(.signedUp) }
        if (needsSignUp ?? [404]).contains(status) { return .answered(.needsSignUp) }
        switch action {
        case .holdForRefresh: return nil
        case .passThrough(.currentTokenRejected, _): return .rejected(status: status)
        case .passThrough(.noSession, _): return .noSession
        case .deliver, .passThrough, .holdForNonce, .refuseProof: return .retry("HTTP \(status)")
        }
    }

    /// A token error: transient ones are retried; the others mean the session is gone.
    private static func outcome(of error: any Error) -> Outcome {
        switch (error as? AuthError)?.code {
        case .refreshFailed?, .backingOff?, .excessiveRefresh?, .clientCertificateOutdated?:
            .retry("the token could not be refreshed")
        default: .noSession
        }
    }
}
