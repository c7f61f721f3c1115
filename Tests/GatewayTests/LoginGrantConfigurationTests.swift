import AuthCore
import Foundation
import Testing

@testable import Gateway

/// `authorization.jwtBearer`, `tokenExchange` and `autoLogin`: the rules between the fields
/// (each refusal naming its field), the files checked at start naming the file and never its
/// contents, what autoLogin does on each session event, and where `/readyz` puts it.
@Suite struct LoginGrantConfigurationTests {
    static func load(_ authorization: [String: Any]) -> String? { AuthorizationFixture.refusal(authorization) }

    @Test(
        arguments: [
            (#"{"autoLogin":{"grant":"password"}}"#, "authorization.autoLogin.grant"),
            (#"{"autoLogin":{"grant":"jwt-bearer"}}"#, "authorization.jwtBearer is required"),
            (#"{"autoLogin":{"grant":"token-exchange"}}"#, "authorization.tokenExchange is required"),
            (#"{"autoLogin":{"grant":"device"}}"#, "authorization.deviceAuthorizationEndpoint is required"),
            (
                #"{"deviceAuthorizationEndpoint":"http://10.0.0.1/device"}"#,
                "authorization.deviceAuthorizationEndpoint must be https"
            ),
            (#"{"deviceAuthorizationEndpoint":"device"}"#, "authorization.deviceAuthorizationEndpoint must be"),
            (#"{"jwtBearer":{"assertionFile":"/t","assertion":"x"}}"#, "authorization.jwtBearer.assertion"),
            (#"{"jwtBearer":{}}"#, "authorization.jwtBearer.assertionFile"),
            (
                #"{"tokenExchange":{"subjectTokenFile":"/t","subjectTokenType":"jwt"}}"#,
                "authorization.tokenExchange.subjectTokenType"
            ),
            (
                #"{"tokenExchange":{"subjectTokenFile":"/t","requestedTokenType":"access token"}}"#,
                "authorization.tokenExchange.requestedTokenType"
            ),
            (
                #"{"tokenExchange":{"subjectTokenFile":"/t","resource":"https://api.example.com/#x"}}"#,
                "authorization.tokenExchange.resource"
            ),
            (#"{"tokenExchange":{"subjectTokenFile":"/t","resource":"/relative"}}"#, "authorization.tokenExchange.resource"),
            (
                #"{"tokenExchange":{"subjectTokenFile":"/t","resource":["https://a.example/","/relative"]}}"#,
                "authorization.tokenExchange.resource[1] must be an absolute URI"
            ),
            (
                #"{"tokenExchange":{"subjectTokenFile":"/t","audience":[]}}"#,
                "authorization.tokenExchange.audience must name at least one audience"
            ),
            (
                #"{"tokenExchange":{"subjectTokenFile":"/t","audience":["orders","orders"]}}"#,
                "authorization.tokenExchange.audience lists the same audience twice"
            ),
            (
                #"{"tokenExchange":{"subjectTokenFile":"/t","audience":{"name":"orders"}}}"#,
                "authorization.tokenExchange.audience must be a string or an array of strings, not an object"
            ),
            (
                #"{"tokenExchange":{"subjectTokenFile":"/t","resource":7}}"#,
                "authorization.tokenExchange.resource must be a string or an array of strings, not a number"
            ),
        ])
    func conflictingOrMissingFieldsAreRefused(json: String, expected: String) throws {
        let fields = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let message = try #require(Self.load(fields), "\(json) was accepted")
        #expect(message.contains(expected), "\(message)")
    }

    @Test func completeSettingsAreAccepted() {
        #expect(
            Self.load([
                "jwtBearer": ["assertionFile": "/var/run/secrets/tokens/token", "scope": "api"],
                "autoLogin": ["grant": "jwt-bearer"],
            ]) == nil)
        #expect(
            Self.load([
                "tokenExchange": [
                    "subjectTokenFile": "/t", "subjectTokenType": "urn:ietf:params:oauth:token-type:access_token",
                    "audience": "orders", "resource": "https://orders.example.com/", "scope": "a b",
                    "requestedTokenType": "urn:ietf:params:oauth:token-type:access_token",
                ],
                "autoLogin": ["grant": "token-exchange", "scope": "a"],
            ]) == nil)
        #expect(Self.load(["autoLogin": ["grant": "client_credentials"]]) == nil)
        #expect(
            Self.load(["tokenExchange": ["subjectTokenFile": "/t", "audience": ["orders"], "resource": []]])?.contains(
                "authorization.tokenExchange.resource must name at least one resource") == true)
        #expect(
            Self.load([
                "deviceAuthorizationEndpoint": "https://id.example.com/device", "autoLogin": ["grant": "device", "scope": "a"],
            ]) == nil)
        #expect(Self.load(["deviceAuthorizationEndpoint": "http://127.0.0.1:9/device"]) == nil, "loopback may be http")
    }

    /// `audience` and `resource` take one string, as they always did, or a list (RFC 8693
    /// §2.1 lets both repeat); the token client gets every value, in order.
    @Test func audienceAndResourceTakeAStringOrAList() throws {
        let one = try AuthorizationFixture.configuration([
            "tokenExchange": ["subjectTokenFile": "/t", "audience": "orders", "resource": "https://orders.example.com/"]
        ])
        #expect(one.authorization.tokenExchange?.audience == "orders")
        #expect(one.authorization.tokenExchangeSettings?.audiences == ["orders"])
        #expect(one.authorization.tokenExchangeSettings?.resources == ["https://orders.example.com/"])
        let several = try AuthorizationFixture.configuration([
            "tokenExchange": [
                "subjectTokenFile": "/t", "audience": ["orders", "reports"],
                "resource": ["https://orders.example.com/", "urn:example:reports"],
            ]
        ])
        #expect(several.authorization.tokenExchangeSettings?.audiences == ["orders", "reports"])
        #expect(several.authorization.tokenExchangeSettings?.resources == ["https://orders.example.com/", "urn:example:reports"])
        #expect(
            try AuthorizationFixture.configuration(["tokenExchange": ["subjectTokenFile": "/t"]]).authorization
                .tokenExchangeSettings?.audiences == [])
        // Written back as given: one value as a string, several as a list.
        let encoded = try #require(
            String(data: try JSONEncoder().encode(several.authorization.tokenExchange), encoding: .utf8))
        #expect(encoded.contains(#""audience":["orders","reports"]"#), "\(encoded)")
        let single = try #require(String(data: try JSONEncoder().encode(one.authorization.tokenExchange), encoding: .utf8))
        #expect(single.contains(#""audience":"orders""#), "\(single)")
    }

    @Test func grantFilesAreCheckedAtStartNamingTheFieldNotTheContents() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ag-grantcfg-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        func write(_ name: String, _ text: String) -> String {
            let path = dir + "/" + name
            #expect(FileManager.default.createFile(atPath: path, contents: Data(text.utf8)))
            return path
        }
        func check(_ a: GatewayConfiguration.Authorization) -> String? {
            do {
                try GatewayConfiguration.checkClientCredentialFiles(a, at: "authorization")
                return nil
            } catch {
                return String(describing: error)
            }
        }
        func part(_ json: String) -> String {
            Data(json.utf8).base64EncodedString().replacingOccurrences(of: "=", with: "").replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_")
        }
        let good = "\(part(#"{"alg":"ES256"}"#)).\(part(#"{"exp":\#(Int(Date().timeIntervalSince1970) + 600)}"#)).c2ln"
        let expired = "\(part(#"{"alg":"ES256"}"#)).\(part(#"{"exp":1000}"#)).c2ln"
        var a = GatewayConfiguration.Authorization(tokenEndpoint: "https://id.example.com/token", clientID: "gate")
        a.jwtBearer = .init(assertionFile: write("good", good))
        #expect(check(a) == nil)
        a.jwtBearer = .init(assertionFile: write("old", expired))
        let old = try #require(check(a))
        #expect(old.contains("authorization.jwtBearer.assertionFile") && old.contains("expired"))
        a.jwtBearer = .init(assertionFile: write("text", "s3cret-value"))
        let text = try #require(check(a))
        #expect(text.contains("does not hold one compact JWT") && !text.contains("s3cret-value"))
        a.jwtBearer = nil
        a.tokenExchange = .init(subjectTokenFile: dir + "/none")
        let missing = try #require(check(a))
        #expect(missing.contains("authorization.tokenExchange.subjectTokenFile") && missing.contains("no such file"))
        a.tokenExchange = .init(
            subjectTokenFile: write("opaque", "at_123\n"), subjectTokenType: "urn:ietf:params:oauth:token-type:access_token")
        #expect(check(a) == nil)
    }

    @Test func autoLoginLogsInWhenTheSessionEndsButNotAfterAnOperatorsLogout() {
        let out = SessionStatus(account: .default, isLoggedIn: false)
        let inside = SessionStatus(account: .default, isLoggedIn: true)
        #expect(AutoLoginRule.decide(.state(out)) == .logIn)
        #expect(AutoLoginRule.decide(.restored(out)) == .logIn)
        #expect(AutoLoginRule.decide(.state(inside)) == .loggedIn)
        #expect(AutoLoginRule.decide(.loggedIn(inside)) == .loggedIn)
        #expect(AutoLoginRule.decide(.loggedOut(reason: .userInitiated, epoch: 2)) == .pause)
        #expect(AutoLoginRule.decide(.loggedOut(reason: .refreshRejected(code: "invalid_grant"), epoch: 2)) == .logIn)
        #expect(AutoLoginRule.decide(.loggedOut(reason: .expiredWithoutRefreshToken, epoch: 2)) == .logIn)
        #expect(AutoLoginRule.decide(.loggedOut(reason: .userInfoRejected(status: 401), epoch: 2)) == .logIn)
        #expect(AutoLoginRule.decide(.loggedOut(reason: .tokensMissing, epoch: 2)) == .logIn)
        #expect(AutoLoginRule.decide(.loggedOut(reason: .replacedByLogin, epoch: 2)) == .none)
        #expect(AutoLoginRule.decide(.loggedOut(reason: .endedElsewhere, epoch: 2)) == .none)
        #expect(AutoLoginRule.decide(.refreshed(generation: TokenGeneration(3), persisted: true)) == .none)
    }

    @Test func autoLoginStartsAnotherDeviceLoginWhenOneEndsUnapprovedButNotWhenCancelledOrReplaced() {
        let pending = DeviceAuthorizationStatus(
            userCode: "BCDF-GHJK", verificationURI: "https://id.example.com/device", expiresAt: Date(), interval: .seconds(5))
        #expect(AutoLoginRule.decide(.deviceAuthorization(pending)) == .none)
        for end in [DeviceLoginEnd.expired, .denied, .rejected(code: "invalid_grant"), .storeFailed] {
            #expect(AutoLoginRule.decide(.deviceLoginEnded(end)) == .logIn, "\(end)")
        }
        #expect(AutoLoginRule.decide(.deviceLoginEnded(.cancelled)) == .none)
        #expect(AutoLoginRule.decide(.deviceLoginEnded(.replaced)) == .none)
    }

    @Test func notLoggedInComesAfterUnusableCredentialsAndBeforeAPendingUserInfoCall() {
        var i = Readiness.Inputs(
            restored: true, writable: true, freeBytes: 1 << 30, unsavedCredentials: false, userInfoPending: true,
            notLoggedIn: true)
        #expect(Readiness.decide(i) == .notLoggedIn)
        i.clientCredentialsUnusable = true
        #expect(Readiness.decide(i) == .clientCredentialsUnusable)
        i.clientCredentialsUnusable = false
        i.notLoggedIn = false
        #expect(Readiness.decide(i) == .userInfoPending)
    }
}
