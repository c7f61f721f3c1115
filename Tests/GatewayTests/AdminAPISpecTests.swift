import Foundation
import HTTPWire
import Testing

@testable import Gateway

/// Login bodies the OpenAPI description (`openapi/authgate.yaml`) calls invalid are refused
/// (400 when not JSON, 415 when not sent as JSON, 422 when not a valid login), and the valid
/// ones parse.
@Suite struct AdminAPISpecTests {
    func parse(_ json: String, contentType: String? = "application/json") throws(AdminRequestError) -> LoginRequest {
        try LoginRequest.parse(contentTypes: contentType.map { [$0] } ?? [], body: Array(json.utf8)).0
    }

    func status(_ json: String, contentType: String? = "application/json") -> Int? {
        do {
            _ = try parse(json, contentType: contentType)
            return nil
        } catch {
            return error.status
        }
    }

    @Test func importExpiresInMustBeAnIntegerInRange() throws {
        for bad in ["true", "false", "0", "-1", "1.5", "\"60\"", "2147483648", "9223372036854775808", "1e30"] {
            #expect(status(#"{"grant_type":"import","access_token":"a","expires_in":\#(bad)}"#) == 422, "\(bad)")
        }
        for good in ["1", "60", "2147483647"] {
            let request = try parse(#"{"grant_type":"import","access_token":"a","expires_in":\#(good)}"#)
            guard case .imported(let response) = request else {
                Issue.record("not an import")
                continue
            }
            #expect(response.expiresIn == .seconds(Int(good)!))
        }
    }

    func detail(_ json: String) -> String? {
        do {
            _ = try parse(json)
            return nil
        } catch {
            return error.detail
        }
    }

    @Test func importedTokensThatCouldSplitAHeaderAreRefusedNamingTheField() {
        let evil = #"abc\r\nX-Evil: 1"#
        let cases = [
            (#"{"grant_type":"import","access_token":"\#(evil)"}"#, "access_token"),
            (#"{"grant_type":"import","access_token":"a b"}"#, "access_token"),
            (#"{"grant_type":"import","access_token":"a","token_type":"Bearer\#(evil)"}"#, "token_type"),
            (#"{"grant_type":"import","access_token":"a","refresh_token":"\#(evil)"}"#, "refresh_token"),
        ]
        for (body, field) in cases {
            #expect(status(body) == 422, "\(body)")
            let text = detail(body) ?? ""
            #expect(text.contains(field) && !text.contains("Evil") && !text.contains("abc"), "\(text)")
        }
        #expect(
            status(#"{"grant_type":"import","access_token":"a.b-c_d~e+f/g==","token_type":"DPoP","refresh_token":"r s"}"#) == nil)
    }

    @Test func refusalsNameTheProblem() {
        #expect(status("{}", contentType: "text/plain") == 415)
        #expect(status("{}", contentType: nil) == 415)
        #expect(status("[]") == 422)
        #expect(status("{") == 400)
        #expect(status(#"{"grant_type":"magic"}"#) == 422)
        #expect(status(#"{"grant_type":"password","username":"a"}"#) == 422)
        #expect(status(#"{"grant_type":"password","username":"a","password":""}"#) == 422)
        #expect(status(#"{"grant_type":"client_credentials","subject":7}"#) == 422)
        #expect(status(#"{"grant_type":"client_credentials"}"#, contentType: "Application/JSON; charset=utf-8") == nil)
        #expect(status(#"{"grant_type":"client_credentials"}"#, contentType: #"application/json ; charset="UTF-8""#) == nil)
        #expect(status(#"{"grant_type":"client_credentials"}"#, contentType: "application/json;") == nil)
        #expect(status(#"{"grant_type":"client_credentials"}"#, contentType: "application/json; charset=latin1") == 415)
        #expect(status(#"{"grant_type":"password","username":"al ice","password":"päss wörd","scope":"a b:c"}"#) == nil)
        let verifier = String(repeating: "v", count: 43)
        #expect(
            status(#"{"grant_type":"authorization_code","code":"c","code_verifier":"\#(verifier)","redirect_uri":"r"}"#) == nil)
    }
}

/// The session document's dates stay RFC 3339 date-times, whatever a token claims.
@Suite struct AdminJSONDateTests {
    /// A date as the admin encoder writes it: a JSON string, or `null`.
    func date(_ d: Date?) -> String {
        (try? AdminJSON.encode(AdminJSON.rfc3339(d))).map { String(decoding: $0, as: UTF8.self) } ?? "not encoded"
    }

    @Test func datesOutsideFourDigitYearsAreClamped() {
        #expect(date(nil) == "null")
        #expect(date(Date(timeIntervalSince1970: 0)) == #""1970-01-01T00:00:00Z""#)
        #expect(date(Date(timeIntervalSince1970: 99_999_999_999_999)) == #""9999-12-31T23:59:59Z""#)
        #expect(date(Date(timeIntervalSince1970: .infinity)) == "null")
        let early = date(Date(timeIntervalSince1970: -99_999_999_999_999))
        #expect(early.hasPrefix(#""0001-"#) || early.hasPrefix(#""0000-"#), "\(early)")
    }
}

/// Which requests reach an admin endpoint, decided on the head alone.
@Suite struct AdminRouteTests {
    func decide(_ method: String, _ target: String, body: Int = 0) -> AdminRoute.Decision {
        AdminRoute.decide(method: method, target: target, bodyBytes: body)
    }

    func query(_ target: String) -> [String: String]? {
        guard case .serve(_, let query) = decide(target.hasPrefix("/auth/login") ? "POST" : "GET", target) else { return nil }
        return query
    }

    @Test func wellFormedRequestsAreServedWithTheirParameters() {
        #expect(query("/auth/session") == [:])
        #expect(query("/auth/session?session=billing") == ["session": "billing"])
        #expect(query("/auth/session?session=%62illing&") == ["session": "billing"])
        #expect(query("/auth/events?last_event_id=0&session=default") == ["last_event_id": "0", "session": "default"])
        #expect(query("/auth/login?session=a-b_9") == ["session": "a-b_9"])
        #expect(query("/metrics?name[]=up") == [:], "a scraper's parameters are not refused")
        guard case .serve = decide("GET", "/metrics", body: 3) else {
            Issue.record("a scraper's body was refused")
            return
        }
        #expect(AdminRoute.lastEventID("18446744073709551615") == UInt64.max)
        guard case .serve(let login, _) = decide("POST", "/auth/login", body: 10) else {
            Issue.record("a login body was refused")
            return
        }
        #expect(login.endpoint == .login)
    }

    @Test func theOrderIsPathThenMethodThenQueryThenBody() {
        #expect(decide("GET", "/auth/nope?x=1") == .noRoute)
        #expect(decide("GET", "/auth/logout?x=1", body: 5) == .methodNotAllowed(allow: ["POST"]))
        guard case .refused(let query) = decide("POST", "/auth/logout?x=1", body: 5) else {
            Issue.record("an unknown parameter was served")
            return
        }
        #expect(query.code == .invalidQuery && query.parameter == "x")
        guard case .refused(let body) = decide("POST", "/auth/logout", body: 5) else {
            Issue.record("a body to logout was served")
            return
        }
        #expect(body.code == .unexpectedBody && body.status == 400)
    }
}
