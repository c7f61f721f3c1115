import AuthCore
import AuthGateTesting
import Foundation
import TestSupport
import Testing

@testable import Gateway

/// The device authorization grant (RFC 8628) through a running gateway's admin API, against
/// the fake authorization server over HTTP, on a shared test clock so that polls happen
/// only when the test moves it.
@Suite struct DeviceLoginAdminTests {
    static let deviceLogin = #"{"grant_type":"urn:ietf:params:oauth:grant-type:device_code","scope":"read"}"#

    func start(_ stack: Stack) async throws {
        try await stack.startGateway {
            $0.authorization.deviceAuthorizationEndpoint = "http://127.0.0.1:\(stack.authServer.port)/oauth/device_authorization"
        }
    }

    /// Waits until a session's poll sleeps on the clock, then moves it by `duration`.
    func tick(_ stack: Stack, _ duration: Duration) async {
        _ = await eventually { stack.clock!.sleeperCount > 0 }
        stack.clock!.advance(by: duration)
    }

    @Test func aDeviceLoginIsAccepted202AndLogsTheSessionInOnceApproved() async throws {
        try await Stack.run(clock: TestClock()) { stack in
            try await start(stack)
            let accepted = try await stack.admin("POST", "/auth/login", json: Self.deviceLogin)
            #expect(accepted.status == 202)
            let body = Stack.json(accepted)
            let userCode = try #require(body["user_code"] as? String)
            let uri = "http://127.0.0.1:\(stack.authServer.port)/oauth/device"
            #expect(body["verification_uri"] as? String == uri)
            #expect(body["verification_uri_complete"] as? String == uri + "?user_code=" + userCode)
            #expect(body["expires_in"] as? Int == 600)
            #expect(body["interval"] as? Int == 5)
            #expect(body["device_code"] == nil)
            let pending = Stack.json(try await stack.admin("GET", "/auth/session"))
            #expect(pending["state"] as? String == "logged_out")
            #expect((pending["device_authorization"] as? [String: Any])?["user_code"] as? String == userCode)
            #expect(try await stack.proxy("GET", "/orders").status == 401, "nothing is served before the approval")

            // The person approves at the verification page.
            let approval = try Stack.request(
                port: stack.authServer.port, "POST", "/oauth/device",
                headers: ["Content-Type: application/x-www-form-urlencoded"], body: "user_code=\(userCode)&decision=approve")
            #expect(approval.status == 200)
            await tick(stack, .seconds(5))
            #expect(
                try await eventually {
                    Stack.json(try await stack.admin("GET", "/auth/session"))["state"] as? String == "logged_in"
                })
            let session = Stack.json(try await stack.admin("GET", "/auth/session"))
            #expect(session["device_authorization"] == nil)
            #expect(try await stack.proxy("GET", "/orders").status == 200)
            #expect(await stack.authorization.statistics.grants[Grant.deviceCodeType] == 1)
            let metrics = try await stack.admin("GET", "/metrics").text
            #expect(metrics.contains(#"authgate_device_logins_total{session="default",outcome="approved"} 1"#), "\(metrics)")
            #expect(metrics.contains(#"authgate_device_polls_total{session="default",answer="issued"} 1"#))
            let unexplained = GatewayMetricsTests.Exposition(metrics).typeLinesWithoutHelpBefore
            #expect(unexplained.isEmpty, "no HELP for \(unexplained)")
            for code in await stack.authorization.issuedSecrets.all {
                #expect(!stack.logs.all.contains(code), "no token and no device code in the logs")
            }
            #expect(stack.logs.all.contains(userCode), "the user code is logged for whoever reads the logs to approve")
        }
    }

    @Test func aSecondDeviceLoginWhileOneWaitsIsRefused409NamingTheWaitingCode() async throws {
        try await Stack.run(clock: TestClock()) { stack in
            try await start(stack)
            let first = Stack.json(try await stack.admin("POST", "/auth/login", json: Self.deviceLogin))
            let second = try await stack.admin("POST", "/auth/login", json: Self.deviceLogin)
            #expect(second.status == 409)
            #expect(second.header("Content-Type") == "application/problem+json")
            let problem = Stack.json(second)
            #expect(problem["type"] as? String == "https://authgate.dev/problems/device-login-pending")
            #expect(problem["user_code"] as? String == first["user_code"] as? String)
            #expect(await stack.authorization.statistics.deviceAuthorizations == 1)
        }
    }

    @Test func aLogoutCancelsTheWaitingDeviceLoginAndAnApprovalAfterItLogsNobodyIn() async throws {
        try await Stack.run(clock: TestClock()) { stack in
            try await start(stack)
            let userCode = try #require(
                Stack.json(try await stack.admin("POST", "/auth/login", json: Self.deviceLogin))["user_code"] as? String)
            #expect(try await stack.admin("POST", "/auth/logout").status == 200)
            #expect(Stack.json(try await stack.admin("GET", "/auth/session"))["device_authorization"] == nil)
            #expect(await stack.authorization.approveDevice(userCode: userCode))
            stack.clock!.advance(by: .seconds(60))
            #expect(await stack.authorization.statistics.devicePolls == 0)
            #expect(Stack.json(try await stack.admin("GET", "/auth/session"))["state"] as? String == "logged_out")
            // A new one may start.
            #expect(try await stack.admin("POST", "/auth/login", json: Self.deviceLogin).status == 202)
        }
    }

    @Test func aDeclinedDeviceLoginEndsAndTheSessionShowsNoneWaiting() async throws {
        try await Stack.run(clock: TestClock()) { stack in
            try await start(stack)
            let service = try #require(stack.gateway.withLock { $0 })
            let events = service.session.events.subscribe()
            let userCode = try #require(
                Stack.json(try await stack.admin("POST", "/auth/login", json: Self.deviceLogin))["user_code"] as? String)
            #expect(await stack.authorization.denyDevice(userCode: userCode))
            await tick(stack, .seconds(5))
            var ended: DeviceLoginEnd?
            for await record in events {
                if case .deviceLoginEnded(let end) = record.event {
                    ended = end
                    break
                }
            }
            #expect(ended == .denied)
            let session = Stack.json(try await stack.admin("GET", "/auth/session"))
            #expect(session["device_authorization"] == nil)
            #expect(session["state"] as? String == "logged_out")
            let metrics = try await stack.admin("GET", "/metrics").text
            #expect(metrics.contains(#"authgate_device_logins_total{session="default",outcome="access_denied"} 1"#))
            #expect(metrics.contains(#"authgate_device_polls_total{session="default",answer="refused"} 1"#))
            #expect(!metrics.contains(#"outcome="approved""#))
        }
    }

    @Test func aSessionWithoutADeviceAuthorizationEndpointRefusesTheDeviceGrant() async throws {
        try await Stack.run { stack in
            try await stack.startGateway()
            let refused = try await stack.admin("POST", "/auth/login", json: Self.deviceLogin)
            #expect(refused.status == 422)
            let problem = Stack.json(refused)
            #expect(problem["type"] as? String == "https://authgate.dev/problems/unsupported-grant-type")
            #expect((problem["detail"] as? String)?.contains("deviceAuthorizationEndpoint") == true)
        }
    }

    @Test func aDeviceAuthorizationEndpointThatRefusesTheClientIsAPreciseLoginRejection() async throws {
        var fake = FakeAuthorizationServer.Configuration()
        fake.clients = ["authgate": "another secret"]
        try await Stack.run(fake: fake, clock: TestClock()) { stack in
            try await start(stack)
            let refused = try await stack.admin("POST", "/auth/login", json: Self.deviceLogin)
            #expect(refused.status == 401)
            let problem = Stack.json(refused)
            #expect(problem["type"] as? String == "https://authgate.dev/problems/login-rejected")
            #expect(problem["error"] as? String == "invalid_client")
            #expect(!stack.logs.all.contains("s3cret"))
            // The process stays up and a later, good attempt can still be made.
            #expect(try await stack.admin("GET", "/auth/session").status == 200)
        }
    }
}

/// `authorization.autoLogin` with the device grant: a device login starts at start and
/// waits for a person (its user code logged and shown by the session); `/readyz` says
/// `not_logged_in` until the approval.
@Suite struct DeviceAutoLoginTests {
    @Test func autoLoginStartsADeviceLoginAtStartAndIsReadyOnceApproved() async throws {
        try await Stack.run(clock: TestClock()) { stack in
            try await stack.startGateway {
                $0.authorization.deviceAuthorizationEndpoint =
                    "http://127.0.0.1:\(stack.authServer.port)/oauth/device_authorization"
                $0.authorization.autoLogin = .init(grant: "device")
            }
            #expect(await eventually { await !stack.authorization.pendingUserCodes.isEmpty })
            let userCode = try #require(await stack.authorization.pendingUserCodes.first)
            // The server issued the code; the session shows it once the answer is in.
            #expect(
                try await eventually {
                    let session = Stack.json(try await stack.admin("GET", "/auth/session"))
                    return (session["device_authorization"] as? [String: Any])?["user_code"] as? String == userCode
                })
            #expect(stack.logs.all.contains(userCode))
            let notReady = try await stack.admin("GET", "/readyz", token: nil)
            #expect(notReady.status == 503 && notReady.text.contains("not_logged_in"))
            #expect(await stack.authorization.approveDevice(userCode: userCode))
            _ = await eventually { stack.clock!.sleeperCount > 0 }
            stack.clock!.advance(by: .seconds(5))
            #expect(try await eventually { try await stack.admin("GET", "/readyz", token: nil).status == 200 })
            #expect(try await stack.proxy("GET", "/orders").status == 200)
        }
    }
}
