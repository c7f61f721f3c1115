import AuthCore
import AuthGateTesting
import Locking
import Logging
import Testing

/// Collects log messages (text and level) for assertions.
final class CapturedLog: Sendable {
    private let lines = Locked<[(Logger.Level, String)]>([])

    var logger: Logger {
        Logger(label: "test", factory: { _ in Handler(log: self) })
    }

    func count(_ message: String) -> Int {
        lines.withLock { $0.filter { $0.1 == message }.count }
    }

    fileprivate func append(_ level: Logger.Level, _ message: String) {
        lines.withLock { $0.append((level, message)) }
    }

    struct Handler: LogHandler {
        let log: CapturedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            log.append(event.level, "\(event.message)")
        }
    }
}

/// docs/benchmarks/storm.md, gateway bug 2; REFERENCES.md item 5 (endless 401 loops,
/// okhttp#960, Alamofire#3230).
@Suite struct LoopGuardTests {
    enum ExpiryPath: String, CaseIterable, CustomTestStringConvertible {
        /// `token()` refreshes when the refresh instant is reached (default skew: half-life).
        case proactive
        /// No proactive lead; `token()` refreshes when the token has expired.
        case atExpiry
        /// The upstream answers 401 a little before our clock says the token expired
        /// (its clock runs ahead, or it issued the token before we received it).
        case unauthorizedJustBeforeExpiry

        var testDescription: String { rawValue }
    }

    /// 20 normal expiries of 2 s tokens within 40 s, with the default guard (5 per 30 s).
    @Test(arguments: ExpiryPath.allCases)
    func twentyConsecutiveExpiriesOfTwoSecondTokensNeverTripTheGuard(path: ExpiryPath) async throws {
        var server = FakeAuthorizationServer.Configuration()
        server.accessTokenLifetime = .seconds(2)
        let log = CapturedLog()
        let configuration: AuthActor.Configuration =
            path == .proactive ? .init() : .init(skew: .zero, jitter: .zero)
        let h = Harness(server: server, actor: configuration, logger: log.logger)
        var token = try await h.login()
        for expiry in 0..<20 {
            let next: AccessToken
            switch path {
            case .proactive:
                h.clock.advance(by: .seconds(1))  // half-life: the capped lead
                next = try await h.actor.token()
                h.clock.advance(by: .milliseconds(999))
                #expect(try await h.actor.token() == next)
                h.clock.advance(by: .milliseconds(1))
            case .atExpiry:
                h.clock.advance(by: .seconds(2))
                next = try await h.actor.token()
            case .unauthorizedJustBeforeExpiry:
                h.clock.advance(by: .milliseconds(1990))
                next = try await h.actor.refresh(after: token.generation)
                h.clock.advance(by: .milliseconds(10))
            }
            #expect(next.generation > token.generation, "expiry \(expiry)")
            token = next
        }
        #expect(await h.server.statistics.refreshes == 20)
        #expect(log.count("refresh loop guard tripped") == 0)
    }

    /// An upstream that rejects every fresh token: the guard stops it after N refreshes, says
    /// so once, tells subscribers, and keeps the session.
    @Test func upstreamRejectingEveryFreshTokenTripsTheGuardAfterN() async throws {
        var server = FakeAuthorizationServer.Configuration()
        server.accessTokenLifetime = .seconds(2)
        let log = CapturedLog()
        let h = Harness(server: server, actor: .init(), logger: log.logger)
        let events = EventLog(h.actor.events)
        try await h.login()
        var refused: AuthError?
        for _ in 0..<10 {
            do {
                let token = try await h.actor.token()
                _ = try await h.actor.refresh(after: token.generation)  // rejected at once
                h.clock.advance(by: .milliseconds(100))
            } catch let error as AuthError {
                refused = error
                break
            }
        }
        let maximum = RefreshWindow().maximumAttempts
        #expect(refused?.code == .excessiveRefresh)
        #expect(await h.server.statistics.refreshes == maximum)
        #expect((refused?.retryAfter ?? .zero) > .zero, "the error says when refreshing may resume")
        #expect(await h.actor.status.isLoggedIn, "the guard does not log out")

        // Many callers hit the tripped guard: one log line, one event.
        let current = try await h.actor.token()
        for _ in 0..<50 {
            let error = await #expect(throws: AuthError.self) { try await h.actor.refresh(after: current.generation) }
            #expect(error?.code == .excessiveRefresh)
        }
        #expect(await h.server.statistics.refreshes == maximum)
        #expect(log.count("refresh loop guard tripped") == 1)
        // Every event published so far, once the stream has ended.
        let published = await events.drain(h.actor.events).map(\.event)
        let tripEvents = published.filter {
            if case .refreshFailed(let code, _) = $0 { code == "excessive_refresh" } else { false }
        }
        #expect(tripEvents == [.refreshFailed(code: "excessive_refresh", retryAfter: refused?.retryAfter ?? .zero)])
    }

    /// Tokens that arrive already expired (expires_in 0, or a JWT `exp` behind our clock)
    /// would make `token()` refresh on every call; the guard stops that too.
    @Test func tokensIssuedAlreadyExpiredTripTheGuard() async throws {
        var server = FakeAuthorizationServer.Configuration()
        server.accessTokenLifetime = .zero
        let h = Harness(server: server, actor: .init(skew: .zero, jitter: .zero))
        try await h.login()
        var refused: AuthError?
        for _ in 0..<10 {
            do {
                _ = try await h.actor.token()
            } catch let error as AuthError {
                refused = error
                break
            }
        }
        #expect(refused?.code == .excessiveRefresh)
        #expect(await h.server.statistics.refreshes == RefreshWindow().maximumAttempts)
    }

    /// A rejected fresh token whose refresh fails transiently and is retried after the backoff
    /// counts once toward the loop guard: the retries are the backoff's business.
    @Test func transientFailuresCountTowardBackoffNotTheLoopGuard() async throws {
        let h = Harness(actor: .init(refreshWindow: RefreshWindow(interval: .seconds(30), maximumAttempts: 2)))
        let first = try await h.login()
        await h.server.inject(.serverError(status: 503), count: 3)
        for delay in [1, 2, 4] {
            let error = await #expect(throws: AuthError.self) { try await h.actor.refresh(after: first.generation) }
            #expect(error?.code == .refreshFailed)
            h.clock.advance(by: .seconds(delay))
        }
        let second = try await h.actor.refresh(after: first.generation)
        #expect(second.generation > first.generation)
        let third = try await h.actor.refresh(after: second.generation)
        #expect(third.generation > second.generation)
        let error = await #expect(throws: AuthError.self) { try await h.actor.refresh(after: third.generation) }
        #expect(error?.code == .excessiveRefresh, "two rejected fresh tokens, then the guard")
        #expect(await h.server.statistics.refreshAttempts == 5)
    }

    /// Once the rejected token is older than min(lifetime / 2, interval), its rejection is no
    /// longer a loop symptom: the refresh goes ahead even while the window is full.
    @Test func rejectionOfAnAgedTokenIsNotCountedEvenWhileTheWindowIsFull() async throws {
        var server = FakeAuthorizationServer.Configuration()
        server.accessTokenLifetime = .seconds(2)
        let h = Harness(server: server, actor: .init(refreshWindow: RefreshWindow(interval: .seconds(30), maximumAttempts: 1)))
        let first = try await h.login()
        let second = try await h.actor.refresh(after: first.generation)
        let error = await #expect(throws: AuthError.self) { try await h.actor.refresh(after: second.generation) }
        #expect(error?.code == .excessiveRefresh)
        #expect(error?.retryAfter == .seconds(1), "the token is premature for another half-life")
        h.clock.advance(by: .seconds(1))
        #expect(try await h.actor.refresh(after: second.generation).generation > second.generation)
    }
}
