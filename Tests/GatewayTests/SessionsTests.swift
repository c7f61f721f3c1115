import AuthCore
import AuthGateTesting
import Foundation
import Gateway
import TestSupport
import Testing

/// Several named sessions in one gateway: each route gets the token of its own session,
/// and the admin API addresses a session with `?session=`.
@Suite(.serialized) struct SessionsTests {
    /// A second client (`billing`) and user (`bob`) at the same fake authorization server.
    static var fake: FakeAuthorizationServer.Configuration {
        var c = FakeAuthorizationServer.Configuration()
        c.clients["billing"] = "b1ll"
        c.users["bob"] = "builder"
        return c
    }

    func start(_ stack: Stack) async throws {
        let endpoint = "http://127.0.0.1:\(stack.authServer.port)/oauth/token"
        let api = "http://127.0.0.1:\(stack.apiServer.port)"
        try await stack.startGateway(sessionSecrets: ["billing": "b1ll"]) { c in
            c.sessions = [.init(name: "billing", authorization: .init(tokenEndpoint: endpoint, clientID: "billing"))]
            c.routes.insert(.init(prefix: "/billing", upstream: api, requiresAuthentication: true, session: "billing"), at: 0)
        }
    }

    func loginBob(_ stack: Stack) async throws -> TestResponse {
        try await stack.admin(
            "POST", "/auth/login?session=billing", json: #"{"grant_type":"password","username":"bob","password":"builder"}"#)
    }

    @Test func eachRouteGetsItsOwnSessionsTokenAndSessionsLiveApart() async throws {
        try await Stack.run(fake: Self.fake) { stack in
            try await start(stack)
            #expect(try await stack.loginAlice().status == 200)
            #expect(try await stack.proxy("GET", "/api/x").status == 200)
            let none = try await stack.proxy("GET", "/billing/x")
            #expect(none.status == 401 && none.text.contains("login-required"), "billing has no session yet")

            let bob = try await loginBob(stack)
            #expect(bob.status == 200)
            #expect(Stack.json(bob)["account"] as? String == "billing")
            #expect(Stack.json(bob)["subject"] as? String == "bob")
            #expect(try await stack.proxy("GET", "/billing/x").status == 200)
            #expect(stack.api.seenTokens.count == 2, "two sessions, two tokens")

            let all = Stack.json(try await stack.admin("GET", "/auth/sessions"))["sessions"] as? [[String: Any]] ?? []
            #expect(all.map { $0["account"] as? String } == ["billing", "default"])
            #expect(all.map { $0["subject"] as? String } == ["bob", "alice"])

            // Logging one session out leaves the other alone.
            let out = Stack.json(try await stack.admin("POST", "/auth/logout?session=billing"))
            #expect(out["state"] as? String == "logged_out")
            #expect(Stack.json(try await stack.admin("GET", "/auth/session"))["state"] as? String == "logged_in")
            #expect(try await stack.proxy("GET", "/api/y").status == 200)
            #expect(try await stack.proxy("GET", "/billing/y").status == 401)

            let metrics = try await stack.admin("GET", "/metrics").text
            #expect(metrics.contains(#"authgate_session_logged_in{session="billing"} 0.0"#))
            #expect(metrics.contains(#"authgate_session_logged_in{session="default"} 1.0"#))
            #expect(metrics.contains(#"authgate_logouts_total{session="billing",reason="user_initiated"} 1"#))
        }
    }

    @Test func everySessionIsRestoredAtStartAndEventsAreKeptApart() async throws {
        try await Stack.run(fake: Self.fake) { stack in
            try await start(stack)
            let billingEvents = stack.gateway.withLock { $0! }.sessions["billing"]!.actor.events.subscribe()
            #expect(try await loginBob(stack).status == 200)
            #expect(try await stack.loginAlice().status == 200)
            var seen: [String] = []
            for await record in billingEvents {
                seen.append(record.event.name)
                if record.event.name == "logged_in" { break }
            }
            #expect(seen == ["state", "logged_in"], "alice's login is not in billing's stream")
            await stack.stopGateway()
            try await start(stack)
            let all = Stack.json(try await stack.admin("GET", "/auth/sessions"))["sessions"] as? [[String: Any]] ?? []
            #expect(all.map { $0["state"] as? String } == ["logged_in", "logged_in"])
            #expect(try await stack.proxy("GET", "/billing/after-restart").status == 200)
            #expect(try await stack.admin("GET", "/readyz", token: nil).status == 200)
        }
    }

    @Test func anUnknownSessionIsA404NamingTheSessionsThereAre() async throws {
        try await Stack.run(fake: Self.fake) { stack in
            try await start(stack)
            for path in ["/auth/session?session=nope", "/auth/events?session=nope"] {
                let r = try await stack.admin("GET", path)
                #expect(r.status == 404)
                #expect(r.header("content-type") == "application/problem+json")
                #expect(r.text.contains("unknown-session") && r.text.contains("billing, default"), "\(r.text)")
            }
            #expect(try await stack.admin("GET", "/auth/session?session=").status == 400, "present but empty is not the default")
            #expect(
                Stack.json(try await stack.admin("GET", "/auth/session?session=%62illing"))["account"] as? String == "billing",
                "percent-decoded")
            let odd = try await stack.admin("POST", "/auth/logout?session=%3Cscript%3E")
            #expect(odd.status == 400, "a value that cannot name a session is malformed, not unknown")
            #expect(!odd.text.contains("script"), "a name that cannot be a session is not echoed")
        }
    }
}
