import AuthCore
import AuthGateTesting
import Crypto
import Foundation
import Locking
import Logging
import TestSupport
import Testing

/// The device authorization grant (RFC 8628) through the session, against the fake server,
/// on a test clock: a login starts with a user code, polls at the server's interval, and
/// ends logged in on approval, or with its reason otherwise; the device code never leaves.
@Suite struct DeviceLoginTests {
    static let deviceEndpoint = "https://auth.example.test/oauth/device_authorization"

    func harness(
        lifetime: Duration = .seconds(600), interval: Duration = .seconds(5), authentication: ClientAuthentication = .basic,
        logger: Logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
    ) -> Harness {
        var server = FakeAuthorizationServer.Configuration()
        server.deviceCodeLifetime = lifetime
        server.deviceInterval = interval
        server.tokenFormat = .jwt
        return Harness(
            server: server,
            client: .init(
                tokenEndpoint: Harness.tokenEndpoint, clientID: "authgate", clientSecret: "s3cret",
                authentication: authentication, deviceAuthorizationEndpoint: Self.deviceEndpoint),
            logger: logger)
    }

    /// Waits until the polling task sleeps on the test clock, then moves the clock on.
    func tick(_ h: Harness, _ duration: Duration) async {
        _ = await eventually { h.clock.sleeperCount > 0 }  // the poll sleeps
        h.clock.advance(by: duration)
    }

    @Test func theDeviceAuthorizationRequestAuthenticatesTheClientAsATokenRequestDoes() throws {
        for authentication in [ClientAuthentication.basic, .post] {
            let client = OAuth2Client(
                configuration: .init(
                    tokenEndpoint: Harness.tokenEndpoint, clientID: "authgate", clientSecret: "s3cret",
                    authentication: authentication, deviceAuthorizationEndpoint: Self.deviceEndpoint),
                transport: FakeAuthorizationServer(clock: TestClock()), clock: TestClock())
            let request = try client.makeDeviceAuthorizationRequest(scope: "read")
            #expect(request.url == Self.deviceEndpoint)
            let body = String(decoding: request.body, as: UTF8.self)
            if authentication == .basic {
                #expect(request.header("Authorization") == "Basic " + Data("authgate:s3cret".utf8).base64EncodedString())
                #expect(body == "scope=read")
            } else {
                #expect(body == "scope=read&client_id=authgate&client_secret=s3cret")
            }
        }
        let none = OAuth2Client(
            configuration: .init(tokenEndpoint: Harness.tokenEndpoint), transport: FakeAuthorizationServer(clock: TestClock()),
            clock: TestClock())
        #expect(throws: AuthError.self) { try none.makeDeviceAuthorizationRequest(scope: nil) }
    }

    @Test func aDeviceLoginAuthenticatesWithAPrivateKeyJWTAndBindsItsTokensWithDPoP() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ag-device-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let clientKey = P256.Signing.PrivateKey()
        let dpopKey = P256.Signing.PrivateKey()
        for (name, key) in [("client.pem", clientKey), ("dpop.pem", dpopKey)] {
            #expect(
                FileManager.default.createFile(
                    atPath: dir + "/" + name, contents: Data(key.pemRepresentation.utf8), attributes: [.posixPermissions: 0o600]))
        }
        var server = FakeAuthorizationServer.Configuration()
        server.assertionKeys = ["gate": [.p256(clientKey.publicKey)]]
        let h = Harness(
            server: server,
            actor: AuthActor.Configuration(skew: .seconds(30), jitter: .zero, dpop: .file(DPoPKey(path: dir + "/dpop.pem"))),
            client: .init(
                tokenEndpoint: Harness.tokenEndpoint, clientID: "gate", authentication: .privateKeyJWT,
                assertion: ClientAssertion(
                    source: .privateKey(path: dir + "/client.pem", algorithm: nil, keyID: nil), audience: Harness.tokenEndpoint),
                deviceAuthorizationEndpoint: Self.deviceEndpoint))
        let request = try h.client.makeDeviceAuthorizationRequest(scope: nil, assertion: "a.b.c")
        #expect(String(decoding: request.body, as: UTF8.self).contains("client_assertion=a.b.c"))
        let status = try await h.actor.startDeviceLogin()
        await h.server.approveDevice(userCode: status.userCode)
        await tick(h, .seconds(5))
        #expect(await eventually { await h.actor.status.isLoggedIn })
        let stats = await h.server.statistics
        #expect(stats.clientAssertions == 2, "one assertion at the device endpoint, one at the token endpoint")
        #expect(stats.assertionRefusals.isEmpty)
        let token = try await h.actor.token()
        #expect(token.tokenType == "DPoP")
        #expect(await h.server.dpopBinding(of: token.value) == token.dpopKey?.thumbprint, "the tokens are bound to the DPoP key")
        let after = await h.server.statistics
        #expect(after.dpopProofs == after.devicePolls, "a proof with every poll, none at the device endpoint")
        // A device login left waiting would keep its actor alive in a sleep on the test clock.
        await h.actor.finishBackgroundWork()
    }

    @Test func aDeviceAuthorizationAnswerWithoutItsRequiredMembersIsRefusedNamingTheMember() throws {
        let client = OAuth2Client(
            configuration: .init(tokenEndpoint: Harness.tokenEndpoint, deviceAuthorizationEndpoint: Self.deviceEndpoint),
            transport: FakeAuthorizationServer(clock: TestClock()), clock: TestClock())
        func answer(_ json: String, status: Int = 200) -> HTTPResponseValue {
            HTTPResponseValue(status: status, headers: [("Content-Type", "application/json")], body: Array(json.utf8))
        }
        let good = try client.parseDeviceAuthorization(
            answer(#"{"device_code":"dc","user_code":"AB-CD","verification_uri":"https://x/d","expires_in":300}"#), now: Date())
        #expect(good.interval == .seconds(5), "no interval: 5 s (RFC 8628 §3.2)")
        #expect(!"\(good)".contains("dc\""), "the device code is not printed")
        for member in ["device_code", "user_code", "verification_uri", "expires_in"] {
            var object: [String: Any] = [
                "device_code": "dc", "user_code": "AB", "verification_uri": "https://x/d", "expires_in": 300,
            ]
            object[member] = nil
            let json = String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
            let error = try #require(throws: AuthError.self) { try client.parseDeviceAuthorization(answer(json), now: Date()) }
            #expect(error.code == .malformedResponse)
            #expect(error.message.contains(member))
        }
        let refused = try #require(throws: AuthError.self) {
            try client.parseDeviceAuthorization(answer(#"{"error":"invalid_client"}"#, status: 401), now: Date())
        }
        #expect(refused.oauthError?.error == "invalid_client")
    }

    @Test func anApprovedDeviceLoginLogsTheSessionInAfterPollingAtTheInterval() async throws {
        let h = harness()
        let log = EventLog(h.actor.events)
        let status = try await h.actor.startDeviceLogin(scope: "read")
        #expect(status.verificationURI == "https://auth.example.test/oauth/device")
        #expect(status.verificationURIComplete == "https://auth.example.test/oauth/device?user_code=" + status.userCode)
        #expect(status.expiresAt == h.clock.wallNow.addingTimeInterval(600))
        #expect(await h.actor.status.deviceAuthorization == status)
        #expect(await h.server.pendingUserCodes == [status.userCode])
        for _ in 0..<3 { await tick(h, .seconds(5)) }
        _ = await eventually { await h.server.statistics.devicePolls == 3 }
        #expect(await !h.actor.status.isLoggedIn)
        #expect(await h.server.approveDevice(userCode: status.userCode, subject: "bob"))
        await tick(h, .seconds(5))
        #expect(await eventually { await h.actor.status.isLoggedIn })
        let after = await h.actor.status
        #expect(after.subject == "bob")
        #expect(after.deviceAuthorization == nil)
        let stats = await h.server.statistics
        #expect(stats.devicePolls == 4)
        #expect(stats.slowDowns == 0, "never polled sooner than the interval")
        #expect(try await h.tokenStore.load(for: .default) != nil, "stored as any login")
        let events = await log.drain(h.actor.events).map(\.event)
        #expect(events.contains(.deviceAuthorization(status)))
        #expect(events.contains { if case .loggedIn = $0 { true } else { false } })
        #expect(!events.contains { if case .deviceLoginEnded = $0 { true } else { false } })
        // A device login left waiting would keep its actor alive in a sleep on the test clock.
        await h.actor.finishBackgroundWork()
    }

    @Test func slowDownMakesEveryLaterPollFiveSecondsLater() async throws {
        // The server names 1 s and enforces 5 s: the second poll is too soon.
        var server = FakeAuthorizationServer.Configuration()
        server.deviceInterval = .seconds(5)
        server.deviceIntervalAdvertised = .seconds(1)
        let h = Harness(
            server: server,
            client: .init(
                tokenEndpoint: Harness.tokenEndpoint, clientID: "authgate", clientSecret: "s3cret",
                deviceAuthorizationEndpoint: Self.deviceEndpoint))
        _ = try await h.actor.startDeviceLogin()
        #expect(await h.actor.status.deviceAuthorization?.interval == .seconds(1))
        await tick(h, .seconds(1))
        _ = await eventually { await h.server.statistics.devicePolls == 1 }
        await tick(h, .seconds(1))
        _ = await eventually { await h.server.statistics.slowDowns == 1 }
        #expect(await eventually { await h.actor.status.deviceAuthorization?.interval == .seconds(6) })
        await tick(h, .seconds(5))
        #expect(await h.server.statistics.devicePolls == 2, "not before the 6 s the slow_down asked for")
        h.clock.advance(by: .seconds(1))
        #expect(await eventually { await h.server.statistics.devicePolls == 3 })
        // A device login left waiting would keep its actor alive in a sleep on the test clock.
        await h.actor.finishBackgroundWork()
    }

    @Test func aDeclinedDeviceLoginEndsWithAccessDeniedAndTheSessionStaysAsItWas() async throws {
        let h = harness()
        try await h.login()
        let before = await h.actor.status
        let log = EventLog(h.actor.events)
        let status = try await h.actor.startDeviceLogin()
        #expect(await h.server.denyDevice(userCode: status.userCode))
        await tick(h, .seconds(5))
        #expect(await eventually { await h.actor.status.deviceAuthorization == nil })
        let after = await h.actor.status
        #expect(after.isLoggedIn && after.generation == before.generation, "the session kept serving")
        let events = await log.drain(h.actor.events).map(\.event)
        #expect(events.contains(.deviceLoginEnded(.denied)))
        // A device login left waiting would keep its actor alive in a sleep on the test clock.
        await h.actor.finishBackgroundWork()
    }

    @Test func anExpiredDeviceCodeEndsTheLoginWithoutAnotherPoll() async throws {
        let h = harness(lifetime: .seconds(12))
        let log = EventLog(h.actor.events)
        _ = try await h.actor.startDeviceLogin()
        await tick(h, .seconds(5))
        _ = await eventually { await h.server.statistics.devicePolls == 1 }
        await tick(h, .seconds(5))
        #expect(await eventually { await h.actor.status.deviceAuthorization == nil })
        #expect(await h.server.statistics.devicePolls == 2, "no poll at or after the expiry")
        let events = await log.drain(h.actor.events).map(\.event)
        #expect(events.contains(.deviceLoginEnded(.expired)))
        #expect(await !h.actor.status.isLoggedIn)
        // A device login left waiting would keep its actor alive in a sleep on the test clock.
        await h.actor.finishBackgroundWork()
    }

    @Test func aSecondDeviceLoginWhileOneIsPendingIsRefused() async throws {
        let h = harness()
        let first = try await h.actor.startDeviceLogin()
        let error = await #expect(throws: AuthError.self) { try await h.actor.startDeviceLogin() }
        #expect(error?.code == .deviceLoginPending)
        #expect(await h.actor.status.deviceAuthorization == first, "the first one goes on")
        #expect(await h.server.statistics.deviceAuthorizations == 1)
        // A device login left waiting would keep its actor alive in a sleep on the test clock.
        await h.actor.finishBackgroundWork()
    }

    @Test func aLogoutCancelsAPendingDeviceLoginAndAnApprovalAfterItChangesNothing() async throws {
        let h = harness()
        let log = EventLog(h.actor.events)
        let status = try await h.actor.startDeviceLogin()
        try await h.actor.logout(reason: .userInitiated)
        #expect(await h.actor.status.deviceAuthorization == nil)
        #expect(await h.server.approveDevice(userCode: status.userCode))
        h.clock.advance(by: .seconds(60))
        #expect(await h.server.statistics.devicePolls == 0, "the polling stopped")
        #expect(await !h.actor.status.isLoggedIn)
        let events = await log.drain(h.actor.events).map(\.event)
        #expect(events.contains(.deviceLoginEnded(.cancelled)))
        // A new device login may start at once.
        _ = try await h.actor.startDeviceLogin()
        // A device login left waiting would keep its actor alive in a sleep on the test clock.
        await h.actor.finishBackgroundWork()
    }

    @Test func aLogoutWhileTheDeviceAuthorizationRequestIsInFlightCancelsTheLogin() async throws {
        var server = FakeAuthorizationServer.Configuration()
        server.latency = .seconds(1)
        let h = Harness(
            server: server,
            client: .init(
                tokenEndpoint: Harness.tokenEndpoint, clientID: "authgate", clientSecret: "s3cret",
                deviceAuthorizationEndpoint: Self.deviceEndpoint))
        let started = Task { try await h.actor.startDeviceLogin() }
        _ = await eventually { h.clock.sleeperCount > 0 }  // the request is in flight
        try await h.actor.logout(reason: .userInitiated)
        h.clock.advance(by: .seconds(1))
        let error = await #expect(throws: AuthError.self) { try await started.value }
        #expect(error?.code == .sessionEnded)
        #expect(await h.actor.status.deviceAuthorization == nil)
        h.clock.advance(by: .seconds(60))
        #expect(await h.server.statistics.devicePolls == 0, "nothing polls for the cancelled login")
        // A device login left waiting would keep its actor alive in a sleep on the test clock.
        await h.actor.finishBackgroundWork()
    }

    @Test func anotherLoginReplacesAPendingDeviceLogin() async throws {
        let h = harness()
        let log = EventLog(h.actor.events)
        _ = try await h.actor.startDeviceLogin()
        try await h.login()
        #expect(await h.actor.status.deviceAuthorization == nil)
        h.clock.advance(by: .seconds(60))
        #expect(await h.server.statistics.devicePolls == 0)
        let events = await log.drain(h.actor.events).map(\.event)
        let ended = events.firstIndex(of: .deviceLoginEnded(.replaced))
        let loggedIn = events.firstIndex { if case .loggedIn = $0 { true } else { false } }
        #expect(ended != nil && loggedIn != nil && ended! < loggedIn!, "the end first, then the login")
        // A device login left waiting would keep its actor alive in a sleep on the test clock.
        await h.actor.finishBackgroundWork()
    }

    @Test func theDeviceCodeIsNeverLoggedNorPublished() async throws {
        let lines = Locked<[String]>([])
        let logger = Logger(label: "test") { _ in LineHandler(lines: lines) }
        let h = harness(logger: logger)
        let log = EventLog(h.actor.events)
        let status = try await h.actor.startDeviceLogin()
        await tick(h, .seconds(5))
        _ = await eventually { await h.server.statistics.devicePolls == 1 }
        await h.server.approveDevice(userCode: status.userCode)
        await tick(h, .seconds(5))
        _ = await eventually { await h.actor.status.isLoggedIn }
        let deviceCodes = await h.server.issuedSecrets.deviceCodes
        #expect(deviceCodes.count == 1)
        let text = lines.withLock { $0.joined(separator: "\n") }
        #expect(text.contains(status.userCode), "the user code is logged for the person who needs it")
        let published = "\(await log.drain(h.actor.events))"
        for code in deviceCodes {
            #expect(!text.contains(code))
            #expect(!published.contains(code))
        }
        // A device login left waiting would keep its actor alive in a sleep on the test clock.
        await h.actor.finishBackgroundWork()
    }

    struct LineHandler: LogHandler {
        let lines: Locked<[String]>
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            let meta = (event.metadata ?? [:]).map { "\($0)=\($1)" }.sorted().joined(separator: " ")
            lines.withLock { $0.append("\(event.message) \(meta)") }
        }
    }
}
