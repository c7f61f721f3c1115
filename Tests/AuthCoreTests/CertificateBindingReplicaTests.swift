import AuthCore
import AuthGateTesting
import Foundation
import Locking
import Logging
import Testing

/// A coordinator over one token store that several actors share, as replicas share the
/// PostgreSQL row: a lease is granted on the pair the caller names, and a commit is stored
/// only while that pair is still the stored one.
final class SharedStoreCoordinator: RefreshCoordinator {
    let store: InMemoryTokenStore
    private let leases = Locked<(next: UInt64, replacing: [UInt64: String])>((1, [:]))

    init(store: InMemoryTokenStore) {
        self.store = store
    }

    func acquire(for account: AccountID, replacing accessToken: String) async throws -> RefreshClaim {
        let stored = store.record(for: account)
        guard stored?.accessToken == accessToken else { return .superseded(stored) }
        let fence = leases.withLock { l in
            l.next += 1
            l.replacing[l.next] = accessToken
            return l.next
        }
        return .granted(RefreshLease(owner: "replica", fence: fence))
    }

    func commit(_ record: TokenRecord, for account: AccountID, lease: RefreshLease) async throws -> RefreshCommit {
        let replacing = leases.withLock { $0.replacing.removeValue(forKey: lease.fence) }
        let stored = store.record(for: account)
        guard let replacing, stored?.accessToken == replacing else { return .superseded(stored) }
        store.setRecord(record, for: account)
        return .committed
    }

    func release(_ lease: RefreshLease, for account: AccountID) async {
        _ = leases.withLock { $0.replacing.removeValue(forKey: lease.fence) }
    }
}

/// Two replicas sharing one session, each showing its own certificate of the same subject:
/// the token endpoint binds new tokens to the certificate shown, the API accepts a bound
/// token only over a connection showing that certificate. The binding moves to the newer
/// certificate once and stays there; the replica with the older one stops refreshing.
struct CertificateBindingReplicaTests {
    static let start = Date(timeIntervalSince1970: 1_790_000_000)
    static let older = CertificateBinding(thumbprint: "b2xkZXI", notBefore: start)
    static let newer = CertificateBinding(thumbprint: "bmV3ZXI", notBefore: start.addingTimeInterval(3600))

    /// A replica: an actor over the shared stores and server, and the certificate its files
    /// hold (changed by the test, as an operator replaces the files).
    struct Replica {
        let actor: AuthActor
        let certificate: Locked<CertificateBinding>

        init(_ h: Harness, coordinator: any RefreshCoordinator, certificate: CertificateBinding) {
            let shown = Locked(certificate)
            self.certificate = shown
            actor = AuthActor(
                client: h.client, tokenStore: h.tokenStore, stateStore: h.stateStore, clock: h.clock,
                configuration: AuthActor.Configuration(
                    skew: .seconds(30), jitter: .zero, shownCertificate: { shown.withLock { $0 } }),
                logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), randomFraction: { 0 },
                refreshCoordinator: coordinator)
        }
    }

    /// Which certificate each access token the server issued is bound to, read from the
    /// shared store right after the replica that obtained it committed it.
    final class API: Sendable {
        let store: InMemoryTokenStore
        private let bindings = Locked<[String: CertificateBinding]>([:])

        init(store: InMemoryTokenStore) {
            self.store = store
        }

        func noteStored() {
            guard let record = store.record(for: .default), let certificate = record.certificate else { return }
            bindings.withLock { $0[record.accessToken] = certificate }
        }

        /// Whether the API accepts `token` over a connection showing `certificate`.
        func accepts(_ token: AccessToken, shownWith certificate: CertificateBinding) -> Bool {
            noteStored()
            return bindings.withLock { $0[token.value] } == certificate
        }
    }

    /// One request on `replica`: its token, and on the API's 401 the replay path's refresh.
    /// Returns the error code the request met, nil when the API accepted it.
    static func request(_ replica: Replica, _ api: API) async -> AuthError.Code? {
        try? await replica.actor.synchronize()  // what the store's notifications do
        do {
            let certificate = replica.certificate.withLock { $0 }
            var token = try await replica.actor.token()
            if api.accepts(token, shownWith: certificate) { return nil }
            token = try await replica.actor.refresh(after: token.generation)
            api.noteStored()
            return api.accepts(token, shownWith: certificate) ? nil : .refreshFailed
        } catch let error as AuthError {
            return error.code
        } catch {
            return .other
        }
    }

    @Test func theBindingMovesToTheNewerCertificateOnceInsteadOfPingPonging() async throws {
        let h = Harness()
        let coordinator = SharedStoreCoordinator(store: h.tokenStore)
        let api = API(store: h.tokenStore)
        let a = Replica(h, coordinator: coordinator, certificate: Self.older)
        let b = Replica(h, coordinator: coordinator, certificate: Self.newer)
        _ = try await a.actor.login(.password(username: "alice", password: "wonderland"))
        api.noteStored()
        #expect(h.tokenStore.record(for: .default)?.certificate == Self.older, "the login recorded a's certificate")
        _ = try await b.actor.restore()
        var answers: [String: [AuthError.Code?]] = ["a": [], "b": []]
        for _ in 0..<6 {
            answers["b", default: []].append(await Self.request(b, api))
            answers["a", default: []].append(await Self.request(a, api))
        }
        let refreshes = await h.server.statistics.refreshes
        #expect(refreshes == 1, "one refresh re-bound the tokens to b's newer certificate, not \(refreshes)")
        #expect(await h.server.statistics.reuseDetections == 0)
        #expect(h.tokenStore.record(for: .default)?.certificate == Self.newer)
        #expect(answers["b"]?.allSatisfy { $0 == nil } == true, "b, the newer certificate, is served throughout: \(answers)")
        #expect(
            answers["a"]?.allSatisfy { $0 == .clientCertificateOutdated } == true,
            "a, the older certificate, is told so: \(answers)")
        #expect(a.actor.clientCertificateOutdated)
        #expect(!b.actor.clientCertificateOutdated)
        #expect(await a.actor.status.isLoggedIn, "the session is kept")
        #expect(await b.actor.status.isLoggedIn)

        // a's files renewed to the certificate the tokens are bound to: a serves again, with
        // no refresh of its own.
        a.certificate.withLock { $0 = Self.newer }
        #expect(!a.actor.clientCertificateOutdated)
        #expect(await Self.request(a, api) == nil)
        #expect(await h.server.statistics.refreshes == 1)
    }

    @Test func aReplicaWithTheOlderCertificateDoesNotRefreshAtExpiry() async throws {
        let h = Harness()
        let coordinator = SharedStoreCoordinator(store: h.tokenStore)
        let a = Replica(h, coordinator: coordinator, certificate: Self.newer)
        let b = Replica(h, coordinator: coordinator, certificate: Self.older)
        _ = try await a.actor.login(.password(username: "alice", password: "wonderland"))
        _ = try await b.actor.restore()
        h.clock.advance(by: .seconds(3601))
        let error = await #expect(throws: AuthError.self) { _ = try await b.actor.token() }
        #expect(error?.code == .clientCertificateOutdated)
        #expect(error?.retryAfter != nil)
        #expect(await h.server.statistics.refreshes == 0)
        #expect(await b.actor.status.isLoggedIn, "the session is kept")
        // The replica with the newer certificate refreshes as usual, keeping its binding.
        _ = try await a.actor.token()
        #expect(await h.server.statistics.refreshes == 1)
        #expect(h.tokenStore.record(for: .default)?.certificate == Self.newer)
        // b follows; a 401 for its previous token is not answered with the newer one, which
        // is bound to the same certificate b cannot show.
        try await b.actor.synchronize()
        let stale = await #expect(throws: AuthError.self) { _ = try await b.actor.refresh(after: .zero) }
        #expect(stale?.code == .clientCertificateOutdated)
        #expect(await h.server.statistics.refreshes == 1)
    }

    @Test func aSingleProcessWhoseCertificateWasReplacedRefreshesAndRecordsTheNewOne() async throws {
        // A store of its own (no coordinator shared): nobody else serves the tokens, so even
        // a replacement that starts earlier than the bound certificate is used, as before.
        let h = Harness()
        let shown = Locked(Self.newer)
        let actor = AuthActor(
            client: h.client, tokenStore: h.tokenStore, stateStore: h.stateStore, clock: h.clock,
            configuration: AuthActor.Configuration(
                skew: .seconds(30), jitter: .zero, shownCertificate: { shown.withLock { $0 } }),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), randomFraction: { 0 })
        let first = try await actor.login(.password(username: "alice", password: "wonderland"))
        #expect(h.tokenStore.record(for: .default)?.certificate == Self.newer)
        shown.withLock { $0 = Self.older }
        #expect(!actor.clientCertificateOutdated)
        let second = try await actor.refresh(after: first.generation)
        #expect(second.generation > first.generation)
        #expect(h.tokenStore.record(for: .default)?.certificate == Self.older)
    }
}
