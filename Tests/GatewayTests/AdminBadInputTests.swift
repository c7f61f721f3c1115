import AuthCore
import Foundation
import Gateway
import TestSupport
import Testing

/// Every malformed admin API call gets its precise status and a problem document naming what
/// was wrong, repeats no secret it carried, and leaves the process serving and the logged-in
/// session exactly as it was (same generation, same stored tokens).
@Suite(.serialized) struct AdminBadInputTests {
    typealias C = AdminBadInputCases

    /// Media types, methods, query parameters, bodies where none is taken, sizes.
    static var requestCases: [AdminBadInput] {
        let good = C.goodPassword
        let long = String(repeating: "a", count: 64)
        var cases = [
            AdminBadInput(
                "no Content-Type", json: good, headers: [], status: 415, code: "unsupported-media-type", names: "Content-Type"),
            AdminBadInput(
                "text/plain", json: good, headers: ["Content-Type: text/plain"], status: 415, code: "unsupported-media-type",
                names: "application/json"),
            AdminBadInput(
                "a form", json: "grant_type=password&username=alice&password=\(C.password)",
                headers: ["Content-Type: application/x-www-form-urlencoded"], status: 415, code: "unsupported-media-type"),
            AdminBadInput(
                "latin-1 JSON", json: good, headers: ["Content-Type: application/json; charset=iso-8859-1"], status: 415,
                code: "unsupported-media-type", names: "UTF-8"),
            AdminBadInput(
                "application/jsonx", json: good, headers: ["Content-Type: application/jsonx"], status: 415,
                code: "unsupported-media-type"),
            AdminBadInput(
                "two Content-Types", json: good, headers: ["Content-Type: application/json", "Content-Type: text/plain"],
                status: 415, code: "unsupported-media-type"),
            AdminBadInput(
                "a body of 1 MiB", json: #"{"grant_type":"password","username":"alice","password":""#,
                declaredLength: 1 << 20, status: 413, code: "body-too-large", names: "bytes"),
            AdminBadInput(
                "an import of a 100 KiB token", json: #"{"grant_type":"import","access_token":""#,
                declaredLength: 100 << 10, status: 413, code: "body-too-large", names: "bytes"),
            AdminBadInput(
                "a body to logout", "POST", "/auth/logout", json: #"{"session":"default"}"#, status: 400, code: "unexpected-body",
                names: "?session="),
            AdminBadInput(
                "a body to refresh", "POST", "/auth/refresh", json: "{}", status: 400, code: "unexpected-body", names: "body"),
            AdminBadInput(
                "a body to guest", "DELETE", "/auth/guest", json: "x", headers: [], status: 400, code: "unexpected-body",
                names: "body"),
            AdminBadInput("a body to session", "GET", "/auth/session", json: "{}", status: 400, code: "unexpected-body"),
        ]
        for (method, target, allow) in [
            ("GET", "/auth/login", "POST"), ("PUT", "/auth/login", "POST"), ("DELETE", "/auth/login", "POST"),
            ("PATCH", "/auth/login", "POST"), ("GET", "/auth/logout", "POST"), ("DELETE", "/auth/logout", "POST"),
            ("POST", "/auth/session", "GET, HEAD"), ("DELETE", "/auth/session?session=default", "GET, HEAD"),
            ("GET", "/auth/refresh", "POST"), ("PUT", "/auth/guest", "POST, DELETE"), ("POST", "/auth/events", "GET"),
            ("HEAD", "/auth/events", "GET"), ("POST", "/auth/sessions", "GET, HEAD"), ("POST", "/metrics", "GET"),
            ("OPTIONS", "/auth/login", "POST"), ("TRACE", "/auth/session", "GET, HEAD"), ("POST", "/livez", "GET, HEAD"),
        ] {
            cases.append(
                AdminBadInput(
                    "\(method) \(target)", method, target, headers: [], status: 405, code: "method-not-allowed", names: method,
                    allow: allow))
        }
        let queries: [(String, String, Int, String, String)] = [
            ("GET", "/auth/session?session=nope", 404, "unknown-session", "session"),
            ("POST", "/auth/logout?session=nope", 404, "unknown-session", "session"),
            ("POST", "/auth/refresh?session=nope", 404, "unknown-session", "session"),
            ("GET", "/auth/events?session=nope", 404, "unknown-session", "session"),
            ("POST", "/auth/guest?session=nope", 404, "unknown-session", "session"),
            ("GET", "/auth/session?session=", 400, "invalid-query", "session"),
            ("GET", "/auth/session?session", 400, "invalid-query", "session"),
            ("GET", "/auth/session?session=Default", 400, "invalid-query", "session"),
            ("GET", "/auth/session?session=a%20b", 400, "invalid-query", "session"),
            ("GET", "/auth/session?session=a+b", 400, "invalid-query", "session"),
            ("GET", "/auth/session?session=%00", 400, "invalid-query", "session"),
            ("GET", "/auth/session?session=default%0d%0aX-Evil:%201", 400, "invalid-query", "session"),
            ("GET", "/auth/session?session=%ff", 400, "invalid-query", "session"),
            ("GET", "/auth/session?session=%zz", 400, "invalid-query", "session"),
            ("GET", "/auth/session?session=-x", 400, "invalid-query", "session"),
            ("GET", "/auth/session?session=\(long)", 400, "invalid-query", "session"),
            ("GET", "/auth/session?session=\(String(repeating: "a", count: 4000))", 400, "invalid-query", "session"),
            ("GET", "/auth/session?session=default&session=default", 400, "invalid-query", "more than once"),
            ("POST", "/auth/logout?sesion=default", 400, "invalid-query", "sesion"),
            ("POST", "/auth/logout?session=default&all=1", 400, "invalid-query", "all"),
            ("GET", "/auth/sessions?session=default", 400, "invalid-query", "takes none"),
            ("GET", "/auth/session?%ff=1", 400, "invalid-query", "UTF-8"),
            ("GET", "/auth/events?last_event_id=abc", 400, "invalid-query", "last_event_id"),
            ("GET", "/auth/events?last_event_id=-1", 400, "invalid-query", "last_event_id"),
            ("GET", "/auth/events?last_event_id=%2B1", 400, "invalid-query", "last_event_id"),
            ("GET", "/auth/events?last_event_id=1.5", 400, "invalid-query", "last_event_id"),
            ("GET", "/auth/events?last_event_id=", 400, "invalid-query", "last_event_id"),
            ("GET", "/auth/events?last_event_id=18446744073709551616", 400, "invalid-query", "last_event_id"),
            ("GET", "/auth/events?last_event_id=1&last_event_id=2", 400, "invalid-query", "last_event_id"),
            ("GET", "/auth/nothing-here", 404, "no-route", "endpoint"),
        ]
        for (method, target, status, code, names) in queries {
            cases.append(
                AdminBadInput(
                    "\(method) \(target.prefix(80))", method, target, headers: [], status: status, code: code, names: names))
        }
        // A valid login addressed to a session that does not exist must not log anyone in.
        cases.append(
            AdminBadInput(
                "login to an unknown session", "POST", "/auth/login?session=nope", json: good, status: 404,
                code: "unknown-session", names: "nope"))
        cases.append(
            AdminBadInput(
                "login with a bad session name", "POST", "/auth/login?session=NOPE", json: good, status: 400,
                code: "invalid-query", names: "session"))
        return cases
    }

    static var allCases: [AdminBadInput] {
        C.malformedJSON + C.notAnObject + C.grantTypes + C.members + C.numbersAndSyntax + C.missingAndUnknown + requestCases
    }

    @Test func everyBadRequestIsRefusedPreciselyAndTheSessionSurvives() async throws {
        let cases = Self.allCases
        #expect(cases.count > 300)
        try await Stack.run { stack in
            try await stack.startGateway()
            #expect(try await stack.loginAlice().status == 200)
            let store = try EncryptedFileTokenStore(
                directory: stack.stateDirectory, key: TokenStoreKey.load(fromFile: stack.keyFile, createIfMissing: false))
            let before = try #require(try await store.load(for: .default))
            let generation = Stack.json(try await stack.admin("GET", "/auth/session"))["generation"] as? Int
            let forbidden = C.secrets + [before.accessToken, before.refreshToken ?? "-", "s3cret", Stack.adminToken]
            for c in cases {
                let r = try await send(c, port: stack.adminPort)
                check(r, c, forbidden: forbidden)
                let session = Stack.json(try await stack.admin("GET", "/auth/session"))
                #expect(session["state"] as? String == "logged_in", "\(c): the session was lost")
                #expect(session["generation"] as? Int == generation, "\(c): the session changed")
                #expect(try await store.load(for: .default) == before, "\(c): the stored tokens changed")
            }
            #expect(try await stack.proxy("GET", "/api/orders").status == 200, "the session still works")
            let logs = stack.logs.all
            for secret in C.secrets { #expect(!logs.contains(secret), "a secret sent in a bad request was logged") }
        }
    }

    func check(_ r: TestResponse, _ c: AdminBadInput, forbidden: [String]) {
        #expect(r.status == c.status, "\(c): \(r.status) \(r.text)")
        #expect(r.header("content-type") == "application/problem+json", "\(c)")
        if let allow = c.allow { #expect(r.header("allow") == allow, "\(c)") }
        let raw = r.headers.map { "\($0.0): \($0.1)" }.joined(separator: "\n") + r.text
        for secret in forbidden { #expect(!raw.contains(secret), "\(c): the answer repeats a secret") }
        guard c.method != "HEAD" else { return }
        let json = Stack.json(r)
        #expect(json["status"] as? Int == c.status, "\(c): \(r.text)")
        #expect(json["type"] as? String == "https://authgate.dev/problems/\(c.code)", "\(c): \(r.text)")
        let detail = json["detail"] as? String ?? ""
        #expect(!detail.isEmpty, "\(c)")
        if let names = c.names {
            let said = [detail, json["field"] as? String ?? "", json["parameter"] as? String ?? ""].joined(separator: " ")
            #expect(said.contains(names), "\(c): \(r.text)")
        }
    }

    /// Sends `c` on a fresh connection with the admin token and reads the answer.
    func send(_ c: AdminBadInput, port: Int) async throws -> TestResponse {
        try await onThread {
            let client = try RawClient(port: port, timeoutSeconds: 180)
            var head = "\(c.method) \(c.target) HTTP/1.1\r\nHost: test\r\nConnection: close\r\n"
            head += "Authorization: Bearer \(Stack.adminToken)\r\n"
            for h in c.headers { head += h + "\r\n" }
            if let declared = c.declaredLength {
                // The refusal comes from the declared length: the body is not sent, so the
                // answer cannot be lost to a reset.
                try client.send(Array((head + "Content-Length: \(declared)\r\n\r\n").utf8) + c.body)
            } else {
                if !c.body.isEmpty || c.method == "POST" { head += "Content-Length: \(c.body.count)\r\n" }
                try client.send(Array((head + "\r\n").utf8) + c.body)
            }
            return try client.readResponse(headRequest: c.method == "HEAD")
        }
    }
}
