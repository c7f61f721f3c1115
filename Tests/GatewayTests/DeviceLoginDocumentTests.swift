import AuthCore
import Foundation
import Testing

@testable import Gateway

/// The device login (RFC 8628) as the admin API writes it, byte for byte, and as
/// `authgate login --grant device` and `authgate events` read it back.
@Suite struct DeviceLoginDocumentTests {
    static let pending = DeviceAuthorizationStatus(
        userCode: "BCDF-GHJK", verificationURI: "https://id.example.com/device",
        verificationURIComplete: "https://id.example.com/device?user_code=BCDF-GHJK",
        expiresAt: Date(timeIntervalSince1970: 600), interval: .seconds(5))
    static let pendingText =
        #"{"expires_at":"1970-01-01T00:10:00Z","interval":5,"user_code":"BCDF-GHJK","#
        + #""verification_uri":"https://id.example.com/device","#
        + #""verification_uri_complete":"https://id.example.com/device?user_code=BCDF-GHJK"}"#

    func text(_ document: some Encodable) throws -> String {
        String(decoding: try AdminJSON.encode(document), as: UTF8.self)
    }

    @Test func theAcceptedAnswerTheSessionAndTheEventsCarryTheUserCodeAndNothingElse() throws {
        #expect(try text(DeviceAuthorizationDocument(Self.pending)) == Self.pendingText)
        let accepted = try text(DeviceAuthorizationDocument(Self.pending, now: Date(timeIntervalSince1970: 100)))
        #expect(accepted.contains(#""expires_in":500"#))
        let status = SessionStatus(account: AccountID("default"), isLoggedIn: false, epoch: 1, deviceAuthorization: Self.pending)
        #expect(try text(SessionDocument(status)).contains(#""device_authorization":"# + Self.pendingText))
        #expect(try !text(SessionDocument(SessionStatus(account: .default, isLoggedIn: false))).contains("device"))
        let at = #"{"at":"1970-01-01T00:00:00Z","#
        func event(_ e: AuthEvent) throws -> String {
            try text(EventDocument(AuthEventRecord(id: 9, event: e, timestamp: Date(timeIntervalSince1970: 0))))
        }
        #expect(
            try event(.deviceAuthorization(Self.pending))
                == at + #""device_authorization":"# + Self.pendingText + #","id":9,"type":"device_authorization"}"#)
        #expect(
            try event(.deviceLoginEnded(.denied))
                == at + #""detail":"the login was declined at the verification URI","id":9,"reason":"access_denied","#
                + #""type":"device_login_ended"}"#)
    }

    @Test func theStatusCommandShowsAWaitingDeviceLogin() throws {
        let status = SessionStatus(account: .default, isLoggedIn: false, deviceAuthorization: Self.pending)
        let summary = SessionSummary.format(try text(SessionDocument(status)), now: Date(timeIntervalSince1970: 0))
        #expect(summary?.contains("device login waiting: enter BCDF-GHJK at https://id.example.com/device") == true)
    }

    @Test func theCommandLineReadsWhereToGoAndHowTheLoginEnded() throws {
        let accepted = try text(DeviceAuthorizationDocument(Self.pending, now: Date(timeIntervalSince1970: 0)))
        let instructions = try #require(DeviceLoginWatch.instructions(accepted))
        #expect(instructions.text.contains("visit https://id.example.com/device and enter the code BCDF-GHJK"))
        #expect(instructions.expiresIn == 600)
        func verdict(_ e: AuthEvent) throws -> DeviceLoginWatch.Verdict {
            let data = try text(EventDocument(AuthEventRecord(id: 1, event: e, timestamp: Date(timeIntervalSince1970: 0))))
            return DeviceLoginWatch.verdict(event: e.name, data: data)
        }
        #expect(try verdict(.deviceAuthorization(Self.pending)) == .waiting)
        #expect(try verdict(.refreshed(generation: TokenGeneration(2), persisted: true)) == .waiting)
        #expect(
            try verdict(.deviceLoginEnded(.expired))
                == .failed("expired_token (the user code expired before anyone approved the login)"))
        let loggedIn = SessionStatus(account: .default, isLoggedIn: true, subject: "alice", generation: TokenGeneration(1))
        #expect(try verdict(.loggedIn(loggedIn)) == .loggedIn("as alice, token generation 1"))
        let line = EventLine.format(
            event: "device_authorization",
            data: try text(
                EventDocument(
                    AuthEventRecord(id: 1, event: .deviceAuthorization(Self.pending), timestamp: Date(timeIntervalSince1970: 0)))),
            session: "default")
        #expect(
            line
                == "1970-01-01T00:00:00Z [default] device_authorization: enter BCDF-GHJK at https://id.example.com/device, expires 1970-01-01T00:10:00Z"
        )
    }
}
