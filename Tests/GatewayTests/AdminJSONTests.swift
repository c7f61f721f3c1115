import AuthCore
import Foundation
import Testing

@testable import Gateway

/// The admin documents, byte for byte: the members and values they had when they were
/// written by hand, sorted by name, `null` for a missing value, `/` unescaped, compact.
@Suite struct AdminJSONTests {
    static let epoch = Date(timeIntervalSince1970: 0)

    func text(_ document: some Encodable) throws -> String {
        String(decoding: try AdminJSON.encode(document), as: UTF8.self)
    }

    static let loggedIn = SessionStatus(
        account: AccountID("default"), isLoggedIn: true, subject: #"al/ice "the" \ one"#,
        generation: TokenGeneration(3), expiresAt: Date(timeIntervalSince1970: 3600), lastLogin: epoch, epoch: 2)
    static let loggedInHead =
        #"{"account":"default","epoch":2,"expires_at":"1970-01-01T01:00:00Z","generation":3,"guest":false,"#
        + #""last_login":"1970-01-01T00:00:00Z","#
    static let loggedInTail = #""state":"logged_in","subject":"al/ice \"the\" \\ one"}"#
    static let loggedInText = loggedInHead + loggedInTail

    @Test func sessionDocumentsKeepTheirMembers() throws {
        #expect(try text(SessionDocument(Self.loggedIn)) == Self.loggedInText)
        #expect(
            try text(SessionDocument(Self.loggedIn, registration: .needsSignUp))
                == Self.loggedInHead + #""registration":"needs_sign_up","# + Self.loggedInTail)
        let out = SessionStatus(account: AccountID("billing"), isLoggedIn: false, isGuest: true, epoch: 5)
        let outText =
            #"{"account":"billing","epoch":5,"expires_at":null,"generation":null,"guest":true,"last_login":null,"#
            + #""state":"guest","subject":null}"#
        #expect(try text(SessionDocument(out, registration: .signedUp)) == outText, "registration only while logged in")
        var exchanged = Self.loggedIn
        exchanged.issuedTokenType = "urn:ietf:params:oauth:token-type:access_token"
        #expect(
            try text(SessionDocument(exchanged))
                == #"{"account":"default","epoch":2,"expires_at":"1970-01-01T01:00:00Z","generation":3,"guest":false,"#
                + #""issued_token_type":"urn:ietf:params:oauth:token-type:access_token","#
                + #""last_login":"1970-01-01T00:00:00Z","# + Self.loggedInTail)
        var ended = out
        ended.issuedTokenType = exchanged.issuedTokenType
        #expect(try text(SessionDocument(ended)) == outText, "issued_token_type only while logged in")
        #expect(
            try text(SessionListDocument(sessions: [SessionDocument(out), SessionDocument(Self.loggedIn)]))
                == #"{"sessions":["# + outText + "," + Self.loggedInText + "]}")
    }

    @Test func eventDocumentsKeepTheirMembers() throws {
        func event(_ id: UInt64, _ e: AuthEvent) throws -> String {
            try text(EventDocument(AuthEventRecord(id: id, event: e, timestamp: Self.epoch)))
        }
        let at = #"{"at":"1970-01-01T00:00:00Z","#
        #expect(try event(1, .state(Self.loggedIn)) == at + #""id":1,"session":"# + Self.loggedInText + #","type":"state"}"#)
        #expect(try event(2, .restored(Self.loggedIn)).hasSuffix(#","type":"restored"}"#))
        #expect(try event(3, .loggedIn(Self.loggedIn)).hasSuffix(#","type":"logged_in"}"#))
        #expect(
            try event(4, .refreshed(generation: TokenGeneration(5), persisted: true))
                == at + #""generation":5,"id":4,"persisted":true,"type":"refreshed"}"#)
        #expect(
            try event(5, .refreshFailed(code: "server_error", retryAfter: .milliseconds(2500)))
                == at + #""code":"server_error","id":5,"retry_after_seconds":2,"type":"refresh_failed"}"#)
        #expect(
            try event(6, .loggedOut(reason: .refreshRejected(code: "invalid_grant"), epoch: 4))
                == at + #""detail":"refresh_rejected(invalid_grant)","epoch":4,"id":6,"reason":"refresh_rejected","#
                + #""type":"logged_out"}"#)
    }

    /// The client commands read what the admin API writes: every member of a session
    /// document and of each kind of event comes back under its name.
    @Test func theClientReadsEveryMemberTheAPIWrites() throws {
        let store = StoreDocument(
            kind: "postgres", replica: "b/2/9", reachable: true,
            lease: .init(holder: "a/1/7", thisReplica: false, remaining: .milliseconds(2_500)))
        let session = AdminEventPayload.Session(
            account: "default", state: "logged_in", subject: #"al/ice "the" \ one"#, expiresAt: "1970-01-01T01:00:00Z",
            generation: 3, lastLogin: "1970-01-01T00:00:00Z", guest: false, epoch: 2)
        var full = session
        full.registration = "needs_sign_up"
        full.store = store
        #expect(
            AdminEventPayload.decodeSession(try text(SessionDocument(Self.loggedIn, registration: .needsSignUp, store: store)))
                == full)
        var exchanged = Self.loggedIn
        exchanged.issuedTokenType = "urn:ietf:params:oauth:token-type:jwt"
        #expect(
            AdminEventPayload.decodeSession(try text(SessionDocument(exchanged)))?.issuedTokenType
                == "urn:ietf:params:oauth:token-type:jwt")

        func read(_ e: AuthEvent) throws -> AdminEventPayload? {
            AdminEventPayload.decode(try text(EventDocument(AuthEventRecord(id: 7, event: e, timestamp: Self.epoch))))
        }
        let at = "1970-01-01T00:00:00Z"
        #expect(try read(.state(Self.loggedIn)) == AdminEventPayload(id: 7, type: "state", at: at, session: session))
        #expect(
            try read(.refreshed(generation: TokenGeneration(5), persisted: true))
                == AdminEventPayload(id: 7, type: "refreshed", at: at, generation: 5, persisted: true))
        #expect(
            try read(.refreshFailed(code: "server_error", retryAfter: .milliseconds(2500)))
                == AdminEventPayload(id: 7, type: "refresh_failed", at: at, code: "server_error", retryAfterSeconds: 2))
        #expect(
            try read(.loggedOut(reason: .refreshRejected(code: "invalid_grant"), epoch: 4))
                == AdminEventPayload(
                    id: 7, type: "logged_out", at: at, reason: "refresh_rejected", detail: "refresh_rejected(invalid_grant)",
                    epoch: 4))
    }

    @Test func healthDocumentsKeepTheirMembers() throws {
        #expect(try text(HealthEndpoints.Health(status: "ok")) == #"{"status":"ok"}"#)
        #expect(try text(HealthEndpoints.Health(status: "ready")) == #"{"status":"ready"}"#)
        #expect(
            try text(HealthEndpoints.Health(status: "not_ready", reason: "session_not_restored"))
                == #"{"reason":"session_not_restored","status":"not_ready"}"#)
    }
}

/// The admin API's refusals keep their problem `type` codes and statuses (documented in
/// `openapi/authgate.yaml`), and their details never repeat what a client sent.
@Suite struct AdminRequestErrorCodeTests {
    static let table: [(String, Int)] = [
        ("invalid-query", 400), ("unexpected-body", 400), ("malformed-json", 400), ("unsupported-media-type", 415),
        ("unknown-session", 404), ("invalid-body", 422), ("missing-field", 422), ("unknown-field", 422),
        ("invalid-field", 422), ("unsupported-grant-type", 422),
    ]

    @Test func codesAreStable() {
        #expect(AdminRequestError.Code.allCases.map(\.rawValue) == Self.table.map(\.0))
        for code in AdminRequestError.Code.allCases {
            #expect(code.status == Self.table.first { $0.0 == code.rawValue }?.1)
            #expect(AdminRequestError(code, "refused").problem.type == "https://authgate.dev/problems/\(code.rawValue)")
        }
    }

    @Test func aSecretSentInALoginIsNotRepeated() {
        let secret = "cs_live_9a8b7c6d5e4f3a2b1c0d"
        let bodies = [
            #"{"grant_type":"password","username":"a","password":"x","password":"\#(secret)"}"#,
            #"{"grant_type":"\#(secret)"}"#, #"{"grant_type":"import","access_token":"\#(secret)\u0001"}"#,
            #"{"\#(secret)":"x","grant_type":"client_credentials"}"#, #"{"grant_type":"password","password":"\#(secret)""#,
        ]
        for body in bodies {
            do {
                _ = try LoginRequest.parse(contentTypes: ["application/json"], body: Array(body.utf8))
                Issue.record("accepted \(body)")
            } catch {
                #expect(!"\(error)".contains(secret), "\(error)")
                #expect(!String(decoding: error.problem.json, as: UTF8.self).contains(secret), "\(body)")
            }
        }
    }
}
