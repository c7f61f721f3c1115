import Foundation
@testable import Gateway
import HTTPWire
import Testing

/// Login bodies the OpenAPI description (`openapi/authgate.yaml`) calls invalid are refused
/// with 400, and the valid ones parse.
@Suite struct AdminAPISpecTests {
    func parse(_ json: String, contentType: String? = "application/json") throws(WireError) -> LoginRequest {
        try LoginRequest.parse(contentType: contentType, body: Array(json.utf8)).0
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
            #expect(status(#"{"grant_type":"import","access_token":"a","expires_in":\#(bad)}"#) == 400, "\(bad)")
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
            #expect(status(body) == 400, "\(body)")
            let text = detail(body) ?? ""
            #expect(text.contains(field) && !text.contains("Evil") && !text.contains("abc"), "\(text)")
        }
        #expect(status(#"{"grant_type":"import","access_token":"a.b-c_d~e+f/g==","token_type":"DPoP","refresh_token":"r s"}"#) == nil)
    }

    @Test func refusalsNameTheProblem() {
        #expect(status("{}", contentType: "text/plain") == 415)
        #expect(status("{}", contentType: nil) == 415)
        #expect(status("[]") == 400)
        #expect(status("{") == 400)
        #expect(status(#"{"grant_type":"magic"}"#) == 400)
        #expect(status(#"{"grant_type":"password","username":"a"}"#) == 400)
        #expect(status(#"{"grant_type":"password","username":"a","password":""}"#) == 400)
        #expect(status(#"{"grant_type":"client_credentials","subject":7}"#) == 400)
        #expect(status(#"{"grant_type":"client_credentials"}"#, contentType: "Application/JSON; charset=utf-8") == nil)
        #expect(status(#"{"grant_type":"authorization_code","code":"c","code_verifier":"v","redirect_uri":"r"}"#) == nil)
    }
}

/// The session document's dates stay RFC 3339 date-times, whatever a token claims.
@Suite struct AdminJSONDateTests {
    @Test func datesOutsideFourDigitYearsAreClamped() {
        #expect(AdminJSON.date(nil) == "null")
        #expect(AdminJSON.date(Date(timeIntervalSince1970: 0)) == #""1970-01-01T00:00:00Z""#)
        #expect(AdminJSON.date(Date(timeIntervalSince1970: 99_999_999_999_999)) == #""9999-12-31T23:59:59Z""#)
        #expect(AdminJSON.date(Date(timeIntervalSince1970: .infinity)) == "null")
        let early = AdminJSON.date(Date(timeIntervalSince1970: -99_999_999_999_999))
        #expect(early.hasPrefix(#""0001-"#) || early.hasPrefix(#""0000-"#), "\(early)")
    }
}
