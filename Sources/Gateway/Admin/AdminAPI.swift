import AuthCore
import Foundation
public import HTTPWire
import Locking
public import Runtime

/// The admin REST API (described by `openapi/authgate.yaml`), on its own listener (TCP or
/// a Unix domain socket): login, logout, session, refresh, events (SSE), health and metrics.
///
/// Every `/auth/*` and `/metrics` request needs `Authorization: Bearer <admin token>`,
/// compared in constant time, unless the token check was turned off explicitly.
/// `/livez` and `/readyz` answer without it, for probes.
public final class AdminAPI: HTTPResponder {
    /// Settings of the admin API.
    public struct Configuration: Sendable {
        /// The admin token; nil turns the check off (only when asked for explicitly).
        public var adminToken: String?
        /// Time between SSE heartbeat comments.
        public var heartbeat: Duration
        /// Largest login body accepted.
        public var maxBodyBytes: Int
        /// What the SSE event ids of this run start from (``EventIDs``).
        public var eventIDs: EventIDs

        /// Creates settings; event ids start from the wall clock, in microseconds, unless given.
        public init(
            adminToken: String?, heartbeat: Duration = .seconds(15), maxBodyBytes: Int = 64 * 1024,
            eventIDs: EventIDs = EventIDs()
        ) {
            self.adminToken = adminToken
            self.heartbeat = heartbeat
            self.maxBodyBytes = maxBodyBytes
            self.eventIDs = eventIDs
        }
    }

    let configuration: Configuration
    /// The admin token now: a reload can replace it (``replaceAdminToken(_:)``).
    private let adminToken: Locked<String?>
    /// Reloads the configuration for `POST /auth/reload`; nil: nothing to reload from.
    let reloader: GatewayReloader?
    let sessions: [String: GatewaySession]
    let readiness: Readiness
    /// The store keeping the sessions, for the session documents' `store` member.
    let store: StoreView
    /// `GET /metrics`, which the metrics listener (when configured) serves too.
    public let metricsEndpoint: MetricsEndpoint
    /// The tasks serving admin requests and event streams (shutdown waits for them).
    public let tasks = TaskTracker()

    /// Creates the API over `sessions` (which must include `default`), kept in `store`.
    public init(
        configuration: Configuration, sessions: [String: GatewaySession], metrics: GatewayMetrics, readiness: Readiness,
        processGauges: @escaping @Sendable () -> GatewayMetrics.ProcessGauges = { .init() },
        reloader: GatewayReloader? = nil, store: StoreView = StoreView(kind: "file")
    ) {
        self.store = store
        self.configuration = configuration
        self.adminToken = Locked(configuration.adminToken)
        self.reloader = reloader
        self.sessions = sessions
        self.readiness = readiness
        self.metricsEndpoint = MetricsEndpoint(
            sessions: Array(sessions.values), metrics: metrics, processGauges: processGauges)
    }

    /// The session document of `session`, now.
    /// `withStore` adds the `store` member (the `GET` endpoints), which asks a shared store
    /// who holds the session's refresh lease.
    func sessionDocument(_ session: GatewaySession, withStore: Bool = false) async -> SessionDocument {
        let status = await session.actor.status
        let store = withStore ? await store.document(for: AccountID(session.name)) : nil
        // Logged out, the key the next login proves: what an authorization request names.
        let next = status.isLoggedIn ? nil : await session.actor.nextSessionDPoPThumbprint()
        return SessionDocument(status, registration: session.userInfo?.registration, store: store, dpopJKT: next)
    }

    /// The session named by the checked `query` (default `default`), or nil after answering
    /// 404 when there is none by that name.
    func addressedSession(_ query: [String: String], _ writer: ResponseWriter) -> GatewaySession? {
        let name = query["session"] ?? GatewayConfiguration.defaultSession
        if let session = sessions[name] { return session }
        refuse(
            writer,
            AdminRequestError(
                .unknownSession,
                "there is no session \(name); configured: \(sessions.keys.sorted().joined(separator: ", "))",
                parameter: "session"))
        return nil
    }

    public func bodyPolicy(for head: RequestHead, limits: HTTPLimits) -> BodyPolicy {
        // Nothing is buffered for a request without the admin token: it is answered 401 after
        // its head, and the connection closes without reading the body.
        authorized(head) ? .buffer(maxBytes: configuration.maxBodyBytes) : .stream
    }

    public func respond(to request: HTTPRequest, writer: ResponseWriter) {
        let method = request.head.method
        if HealthEndpoints.answer(request, readiness: readiness, writer: writer) { return }
        guard authorized(request.head) else {
            var h = HTTPHeaders()
            h.add(name: "WWW-Authenticate", value: "Bearer realm=\"authgate-admin\"")
            writer.respond(
                problem: GatewayProblem.make(
                    "admin-token-required", 401, "this endpoint needs Authorization: Bearer <admin token>"),
                headers: h)
            return
        }
        let body: [UInt8]
        if case .buffered(let b) = request.body { body = b } else { body = [] }
        let route: AdminRoute
        let query: [String: String]
        switch AdminRoute.decide(method: method, target: request.head.target, bodyBytes: body.count) {
        case .noRoute:
            writer.respond(problem: GatewayProblem.make("no-route", 404, "the admin API has no endpoint at this path"))
            return
        case .methodNotAllowed(let allowed):
            methodNotAllowed(method, allowed, writer)
            return
        case .refused(let error):
            refuse(writer, error)
            return
        case .serve(let r, let q):
            (route, query) = (r, q)
        }
        switch route.endpoint {
        case .login:
            guard let session = addressedSession(query, writer) else { return }
            tasks.start(on: request.loop) { await self.login(session, request.head, body, writer) }
        case .logout:
            guard let session = addressedSession(query, writer) else { return }
            tasks.start(on: request.loop) { await self.logout(session, writer) }
        case .session:
            guard let session = addressedSession(query, writer) else { return }
            tasks.start(on: request.loop) {
                self.json(writer, 200, await self.sessionDocument(session, withStore: true))
            }
        case .sessions:
            tasks.start(on: request.loop) {
                var documents: [SessionDocument] = []
                for session in self.sessions.values.sorted(by: { $0.name < $1.name }) {
                    documents.append(await self.sessionDocument(session, withStore: true))
                }
                self.json(writer, 200, SessionListDocument(sessions: documents))
            }
        case .refresh:
            guard let session = addressedSession(query, writer) else { return }
            tasks.start(on: request.loop) { await self.refresh(session, writer) }
        case .guest:
            guard let session = addressedSession(query, writer) else { return }
            tasks.start(on: request.loop) { await self.guest(session, method == "POST", writer) }
        case .events:
            guard let session = addressedSession(query, writer) else { return }
            streamEvents(session, request, resumingAfter: query["last_event_id"].flatMap(AdminRoute.lastEventID), writer)
        case .metrics:
            tasks.start(on: request.loop) { await self.metricsEndpoint.respond(writer) }
        case .reload:
            tasks.start(on: request.loop) { await self.reload(writer) }
        }
    }

    // MARK: Endpoints

    private func logout(_ session: GatewaySession, _ writer: ResponseWriter) async {
        do {
            try await session.actor.logout(reason: .userInitiated)
            json(writer, 200, await sessionDocument(session))
        } catch {
            problem(writer, error)
        }
    }

    private func refresh(_ session: GatewaySession, _ writer: ResponseWriter) async {
        do {
            let current = await session.actor.status
            guard current.isLoggedIn, let generation = current.generation else { throw AuthError.loginRequired }
            _ = try await session.actor.refresh(after: generation)
            json(writer, 200, await sessionDocument(session))
        } catch {
            problem(writer, error)
        }
    }

    private func guest(_ session: GatewaySession, _ enabled: Bool, _ writer: ResponseWriter) async {
        do {
            if enabled, await session.actor.status.isLoggedIn {
                writer.respond(
                    problem: GatewayProblem.make("logged-in", 409, "guest mode is only for a logged-out session; log out first"))
                return
            }
            try await session.actor.setGuestMode(enabled)
            json(writer, 200, await sessionDocument(session))
        } catch {
            problem(writer, error)
        }
    }

    // MARK: Helpers

    /// Answers a refused request with its problem document.
    func refuse(_ writer: ResponseWriter, _ error: AdminRequestError) {
        writer.respond(problem: error.problem)
    }

    func problem(_ writer: ResponseWriter, _ error: any Error) {
        if let refused = error as? AdminRequestError {
            refuse(writer, refused)
            return
        }
        if let wire = error as? WireError {
            writer.respond(problem: wire.problem)
            return
        }
        let authError = error as? AuthError ?? AuthError.storage(error)
        if authError.code == .loginFailed, let endpoint = authError.underlyingAuthError {
            let p = AdminJSON.loginFailure(endpoint)
            writer.respond(problem: p, headers: GatewayProblem.withChallenge(p))
            return
        }
        let (p, h) = GatewayProblem.forAuthError(authError)
        writer.respond(problem: p, headers: h)
    }

    func json(_ writer: ResponseWriter, _ status: Int, _ document: some Encodable) {
        HealthEndpoints.json(writer, status, document)
    }

    private func allow(_ method: String, _ allowed: [String], _ writer: ResponseWriter) -> Bool {
        HealthEndpoints.allow(method, allowed, writer)
    }

    private func methodNotAllowed(_ method: String, _ allowed: [String], _ writer: ResponseWriter) {
        HealthEndpoints.methodNotAllowed(method, allowed, writer)
    }

    private func authorized(_ head: RequestHead) -> Bool {
        guard let expected = adminToken.withLock({ $0 }) else { return true }
        guard let header = head.headers[first: "authorization"], header.count > 7,
            String(header.prefix(7)).caseInsensitiveEquals("bearer ")
        else { return false }
        return AdminAPI.constantTimeEquals(Array(header.utf8.dropFirst(7)), Array(expected.utf8))
    }

    /// Checks admin requests against `token` from now on (nil: no check); a reload.
    public func replaceAdminToken(_ token: String?) {
        adminToken.withLock { $0 = token }
    }

    /// Compares without an early exit, so the time does not tell how much matched.
    static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var diff = UInt8(a.count == b.count ? 0 : 1)
        let n = max(a.count, b.count)
        for i in 0..<n {
            let x = i < a.count ? a[i] : 0
            let y = i < b.count ? b[i] : 0
            diff |= x ^ y
        }
        return diff == 0
    }
}
