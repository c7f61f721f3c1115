import Foundation
import Gateway
import Testing

/// Every way of getting the configuration file wrong is refused with the field at fault
/// named by its JSON path, and the message repeats nothing the file holds but names.
@Suite struct ConfigurationBadInputTests {
    /// The minimal file, with a second session and a second route to reach into.
    static var base: [String: Any] {
        [
            "proxy": ["host": "127.0.0.1", "port": 8080],
            "admin": ["host": "127.0.0.1", "port": 8081],
            "adminTokenFile": "/run/admin-token",
            "authorization": ["tokenEndpoint": "https://id.example.com/oauth/token", "clientID": "gate"],
            "sessions": [
                ["name": "billing", "authorization": ["tokenEndpoint": "https://billing.example.com/token"]],
                ["name": "reports", "authorization": ["tokenEndpoint": "https://reports.example.com/token"]],
            ],
            "routes": [
                ["prefix": "/", "upstream": "https://api.example.com"],
                ["prefix": "/billing", "upstream": "https://billing.example.com", "session": "billing"],
            ],
            "stateDirectory": "/var/lib/authgate",
        ]
    }

    /// `base` with `value` set at `path` (dotted, `[i]` for array elements; nil removes).
    static func edited(_ path: String, _ value: Any?) -> [String: Any] {
        func set(_ node: Any, _ keys: ArraySlice<String>) -> Any? {
            guard let key = keys.first else { return value }
            if key.hasPrefix("["), let i = Int(key.dropFirst().dropLast()), var array = node as? [Any] {
                if let v = set(array[i], keys.dropFirst()) { array[i] = v } else { array.remove(at: i) }
                return array
            }
            var object = node as? [String: Any] ?? [:]
            object[key] = set(object[key] ?? [String: Any](), keys.dropFirst())
            return object
        }
        let keys = path.replacingOccurrences(of: "[", with: ".[").split(separator: ".").map(String.init)
        return set(base, keys[...]) as! [String: Any]
    }

    static func message(_ data: Data) -> String? {
        do {
            _ = try GatewayConfiguration.load(from: data)
            return nil
        } catch {
            return String(describing: error)
        }
    }

    static func message(_ path: String, _ value: Any?) -> String? {
        message(try! JSONSerialization.data(withJSONObject: edited(path, value)))
    }

    /// (path, value, what the message must contain; nil: the value is accepted).
    static var edits: [(String, Any?, String?)] {
        [
            // Wrong types.
            ("proxy", "127.0.0.1:8080", "proxy must be an object, not a string"),
            ("proxy.port", "8080", "proxy.port must be an integer, not a string"),
            ("proxy.host", 127, "proxy.host must be a string, not a number"),
            ("admin.port", 8081.5, "admin.port must be an integer"),
            ("adminTokenFile", true, "adminTokenFile must be a string, not a boolean"),
            ("adminTokenDisabled", "yes", "adminTokenDisabled must be true or false, not a string"),
            ("authorization", [Any](), "authorization must be an object, not an array"),
            ("authorization.tokenEndpoint", 1, "authorization.tokenEndpoint must be a string, not a number"),
            ("authorization.clientID", ["gate"], "authorization.clientID must be a string, not an array"),
            ("authorization.mapping", "standard", "authorization.mapping must be an object, not a string"),
            ("authorization.mapping.terminalStatuses", "401", "authorization.mapping.terminalStatuses must be an array"),
            ("authorization.mapping.terminalStatuses", ["401"], "authorization.mapping.terminalStatuses[0] must be an integer"),
            ("authorization.mapping.requestBody", "xml", "authorization.mapping.requestBody"),
            ("routes", ["prefix": "/"], "routes must be an array, not an object"),
            ("routes[1]", "/billing", "routes[1] must be an object, not a string"),
            ("routes[1].stripPrefix", "true", "routes[1].stripPrefix must be true or false, not a string"),
            ("routes[0].requiresAuthentication", 1, "routes[0].requiresAuthentication must be true or false, not a number"),
            ("sessions", ["name": "billing"], "sessions must be an array, not an object"),
            ("sessions[1].name", 5, "sessions[1].name must be a string, not a number"),
            ("sessions[1].authorization.tokenEndpoint", false, "sessions[1].authorization.tokenEndpoint must be a string"),
            ("stateDirectory", NSNull(), "stateDirectory"),
            ("loops", "2", "loops must be an integer, not a string"),
            ("maxReplays", [3], "maxReplays must be an integer, not an array"),
            ("trustForwardedFrom", "10.0.0.1", "trustForwardedFrom must be an array, not a string"),
            ("upstreamRejection.statuses", 401, "upstreamRejection.statuses must be an array"),
            ("userInfo", "https://api.example.com/me", "userInfo must be an object, not a string"),
            ("userInfo.url", 5, "userInfo.url must be a string, not a number"),
            ("refreshLead", true, "refreshLead"),
            ("refreshLead", "soon", "refreshLead"),
            // Numbers out of range, huge, negative, fractional.
            ("proxy.port", -1, "proxy.port must be 0…65535"),
            ("proxy.port", 65536, "proxy.port must be 0…65535"),
            ("loops", 0, "loops must be 1…256"),
            ("loops", 257, "loops must be 1…256"),
            ("loops", Decimal(string: "99999999999999999999999")!, "loops must be an integer"),
            ("maxReplays", 11, "maxReplays must be 0…10"),
            ("maxReplays", -1, "maxReplays must be 0…10"),
            ("tokenEndpointTimeoutSeconds", 0, "tokenEndpointTimeoutSeconds must be 1…300"),
            ("tokenEndpointTimeoutSeconds", 301, "tokenEndpointTimeoutSeconds must be 1…300"),
            ("connectTimeoutSeconds", 0, "connectTimeoutSeconds must be 1…300"),
            ("upstreamTimeoutSeconds", 86_401, "upstreamTimeoutSeconds must be 1…86400"),
            ("replayLimitBytes", -1, "replayLimitBytes must be 0…67108864"),
            ("replayLimitBytes", (64 << 20) + 1, "replayLimitBytes must be 0…67108864"),
            ("refreshSkewSeconds", -1, "refreshSkewSeconds must be 0…86400"),
            ("refreshJitterSeconds", -1, "refreshJitterSeconds must be 0…3600"),
            ("refreshJitterSeconds", 3_601, "refreshJitterSeconds must be 0…3600"),
            ("refreshJitterSeconds", 0, nil),
            ("refreshLoopLimit", 0, "refreshLoopLimit must be 1…1000000"),
            ("refreshLoopLimit", 1_000_000, nil),
            ("refreshLead", "100%", "refreshLead"),
            ("refreshLead", 86_401, "refreshLead"),
            ("userInfo", ["url": "https://api.example.com/me", "maxRetrySeconds": 0], "userInfo.maxRetrySeconds"),
            ("userInfo", ["url": "https://api.example.com/me", "maxRetrySeconds": 3601], "userInfo.maxRetrySeconds"),
            ("userInfo", ["url": "https://api.example.com/me", "needsSignUpStatuses": [200]], "userInfo.needsSignUpStatuses"),
            ("upstreamRejection.statuses", [500], "upstreamRejection"),
            ("authorization.mapping.terminalStatuses", [200], "authorization.mapping.terminalStatuses"),
            // Unknown keys, at every depth.
            ("refreshLaed", "50%", "unknown field refreshLaed"),
            ("proxy.hots", "x", "unknown field proxy.hots"),
            ("authorization.tokenEndpont", "https://id.example.com/t", "unknown field authorization.tokenEndpont"),
            ("authorization.clientSecret", "s3cret-inline", "unknown field authorization.clientSecret"),
            ("routes[1].requiresAuth", false, "unknown field routes[1].requiresAuth"),
            ("sessions[1].authorization.clientSecretFil", "/x", "unknown field sessions[1].authorization.clientSecretFil"),
            ("sessions[0].userinfo", ["url": "https://x.example"], "unknown field sessions[0].userinfo"),
            ("upstreamRejection.realm", ["api"], "unknown field upstreamRejection.realm"),
            ("authorization.mapping.paths.acessToken", "x", "unknown field authorization.mapping.paths.acessToken"),
            ("authorization.mapping.requestFieldNames.usernme", "login", "authorization.mapping.requestFieldNames.usernme"),
            // Control characters, empty strings.
            ("proxy.host", "127.0.0.1\n", "proxy.host must not contain control characters"),
            ("authorization.clientID", "gate\u{0}", "authorization.clientID must not contain control characters"),
            ("routes[1].prefix", "/billing\r\nX-Evil: 1", "routes[1].prefix must not contain control characters"),
            ("sessions[1].name", "rep\torts", "sessions[1].name must not contain control characters"),
            ("stateDirectory", "/var/lib/\u{1B}[31mx", "stateDirectory must not contain control characters"),
            ("trustForwardedFrom", ["10.0.0.1\u{0}"], "trustForwardedFrom[0] must not contain control characters"),
            ("authorization.mapping.extraFields.audience", "api\u{7}", "authorization.mapping.extraFields.audience must not"),
            ("authorization.mapping.extraFields.audience", "", nil),
            ("proxy.host", "", "proxy.host must not be empty"),
            ("stateDirectory", "", "stateDirectory must not be empty"),
            ("adminTokenFile", "", "adminTokenFile must not be empty"),
            ("keyFile", "", "keyFile must not be empty"),
            ("caFile", "", "caFile must not be empty"),
            ("authorization.clientID", "", "authorization.clientID must not be empty"),
            ("sessions[0].authorization.clientSecretFile", "", "sessions[0].authorization.clientSecretFile must not be empty"),
            ("routes[0].upstream", "", "routes[0].upstream must not be empty"),
            ("sessions[1].name", "", "sessions[1].name must not be empty"),
            ("trustForwardedFrom", [""], "trustForwardedFrom[0] must not be empty"),
            ("proxyLivenessPath", "", "proxyLivenessPath must not be empty"),
            ("proxyLivenessPath", "healthz", "proxyLivenessPath must start with /"),
            // Names used twice.
            ("sessions[1].name", "billing", "sessions[1].name billing is used twice"),
            ("sessions[0].name", "default", "sessions[0].name must be"),
            ("routes[1].prefix", "/", "routes[1].prefix is the same as an earlier route's"),
            // Listeners.
            ("proxy.host", "localhost", "proxy.host must be an IPv4 or IPv6 address"),
            ("admin.host", "[::1]", "admin.host must be an IPv4 or IPv6 address"),
            ("admin.host", "999.1.1.1", "admin.host must be an IPv4 or IPv6 address"),
            ("admin.host", "::1", nil),
            // URLs.
            ("authorization.tokenEndpoint", "ftp://id.example.com/t", "authorization.tokenEndpoint must be an http or https URL"),
            ("authorization.tokenEndpoint", "https://", "authorization.tokenEndpoint must be an http or https URL"),
            (
                "authorization.tokenEndpoint", "https://id example.com/t",
                "authorization.tokenEndpoint must be an http or https URL"
            ),
            ("authorization.tokenEndpoint", "https://user:pa55w0rd@id.example.com/t", "authorization.tokenEndpoint must be"),
            ("authorization.tokenEndpoint", "https://id.example.com/t#frag", "authorization.tokenEndpoint must be"),
            ("authorization.tokenEndpoint", "id.example.com/token", "authorization.tokenEndpoint must be"),
            ("authorization.tokenEndpoint", "https://:443/t", "authorization.tokenEndpoint must be"),
            ("authorization.tokenEndpoint", "http://id.example.com/t", "authorization.tokenEndpoint must be https"),
            ("authorization.tokenEndpoint", "https://id.example.com/t?p=b2c_1_signin", nil),
            ("sessions[1].authorization.tokenEndpoint", "not a url", "sessions[1].authorization.tokenEndpoint must be an http"),
            ("sessions[0].authorization.revocationEndpoint", "revoke", "sessions[0].authorization.revocationEndpoint must be"),
            ("authorization.mapping.refreshURL", "/refresh", "authorization.mapping.refreshURL must be an http"),
            ("authorization.issuer", "https://id.example.com/?tenant=x", "authorization.issuer must be"),
            ("userInfo.url", "http:/api.example.com/me", "userInfo.url must be an http"),
            ("routes[0].upstream", "https://api.example.com?x=1", "routes[0].upstream must be"),
            ("routes[0].upstream", "https://api example.com", "routes[0].upstream must be"),
            ("routes[0].upstream", "https://u:pa55w0rd@api.example.com", "routes[0].upstream must be"),
            // The origin is parsed once, at load: a port no request could use is refused here.
            (
                "routes[0].upstream", "http://127.0.0.1:99999",
                "routes[0].upstream must be an http or https URL with a host and a port"
            ),
            ("routes[0].upstream", "http://127.0.0.1:0/v1", "routes[0].upstream must be"),
            ("routes[0].upstream", "https://api.example.com:/v1", "routes[0].upstream must be"),
            ("routes[0].upstream", "http://[::1/v1", "routes[0].upstream must be"),
            ("routes[1].prefix", "billing", "routes[1].prefix must start with /"),
            ("routes[1].prefix", "/bill ing", "routes[1].prefix must start with /"),
            // The mapping.
            ("authorization.mapping.accessTokenHeader", "X Token", "authorization.mapping.accessTokenHeader"),
            (
                "authorization.mapping.refreshSendsExpiredAccessToken", true,
                "authorization.mapping.refreshSendsExpiredAccessToken"
            ),
        ]
    }

    @Test func everyMistakeNamesItsField() {
        #expect(Self.message(try! JSONSerialization.data(withJSONObject: Self.base)) == nil, "the base loads")
        for (path, value, expected) in Self.edits {
            let text = Self.message(path, value)
            guard let expected else {
                #expect(text == nil, "\(path) = \(String(describing: value)) was refused: \(text ?? "")")
                continue
            }
            guard let text else {
                Issue.record("\(path) = \(String(describing: value)) was accepted")
                continue
            }
            #expect(text.contains(expected), "\(path) = \(String(describing: value)): \(text)")
            #expect(!text.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }, "\(path): \(text)")
            #expect(!text.contains("pa55w0rd") && !text.contains("s3cret-inline"), "\(path): \(text)")
        }
    }

    /// A file that sets every field there is.
    static let everyField = #"""
        {
          "proxy": {"host": "127.0.0.1", "port": 8080}, "admin": {"host": "::1", "port": 8081},
          "adminTokenFile": "/run/admin-token", "adminTokenDisabled": false,
          "authorization": {
            "issuer": "https://id.example.com", "tokenEndpoint": "https://id.example.com/token", "clientID": "gate",
            "clientSecretFile": "/run/secret", "clientAuthentication": "post", "revocationEndpoint": "https://id.example.com/revoke",
            "mapping": {
              "requestBody": "json", "refreshURL": "https://id.example.com/refresh", "omitGrantType": true,
              "requestFieldNames": {"refresh_token": "refreshToken"}, "extraFields": {"audience": "api"},
              "refreshSendsExpiredAccessToken": true, "accessTokenHeader": "Authorization",
              "paths": {"accessToken": "a", "refreshToken": "r", "expiresIn": "e", "tokenType": "t", "scope": "s",
                        "idToken": "i", "error": "err", "errorDescription": "desc"},
              "terminalStatuses": [401]
            }
          },
          "sessions": [{"name": "billing", "authorization": {"tokenEndpoint": "https://b.example.com/token"},
                        "userInfo": {"url": "https://b.example.com/me", "needsSignUpStatuses": [404], "maxRetrySeconds": 30}}],
          "routes": [{"prefix": "/", "upstream": "https://api.example.com", "stripPrefix": false, "requiresAuthentication": true,
                      "forwardClientAuthorization": false, "session": "billing"}],
          "stateDirectory": "/var/lib/authgate", "keyFile": "/run/key", "createKey": false, "loops": 2, "refreshLead": "50%",
          "refreshJitterSeconds": 0, "refreshLoopLimit": 5,
          "maxReplays": 3, "tokenEndpointTimeoutSeconds": 10, "replayLimitBytes": 1024, "caFile": "/etc/ca.pem",
          "upstreamRejection": {"statuses": [401], "realms": ["api"], "bareUnauthorizedMeansTokenRejected": true},
          "userInfo": {"url": "https://api.example.com/me", "needsSignUpStatuses": [404], "maxRetrySeconds": 30},
          "proxyLivenessPath": "/livez", "connectTimeoutSeconds": 5, "upstreamTimeoutSeconds": 60,
          "allowInsecureHTTP": false, "trustForwardedFrom": ["10.0.0.1"]
        }
        """#

    /// Every field, set to a value of another type, is refused naming its path.
    @Test func everyFieldOfTheWrongTypeIsNamed() throws {
        let full = try JSONSerialization.jsonObject(with: Data(Self.everyField.utf8))
        #expect(Self.message(Data(Self.everyField.utf8)) == nil, "the file with every field loads")
        var checked = 0
        func sweep(_ node: Any, _ path: String, _ replace: (Any) -> Any) {
            // Each value in turn replaced by one of another type (a string for a number or a
            // boolean; refreshLead, which takes a number or a string, a boolean).
            let wrong: Any =
                path == "refreshLead" ? true : node is String ? 7 : node is NSNumber ? "7" : node is [Any] ? ["x": 1] : ["x"]
            let text = Self.message(try! JSONSerialization.data(withJSONObject: replace(wrong)))
            #expect(text?.hasPrefix(path) == true || text?.contains(" \(path)") == true, "\(path): \(text ?? "accepted")")
            checked += 1
            if let object = node as? [String: Any] {
                for (key, value) in object {
                    sweep(value, path.isEmpty ? key : "\(path).\(key)") { v in
                        var o = object
                        o[key] = v
                        return replace(o)
                    }
                }
            } else if let array = node as? [Any] {
                for (i, value) in array.enumerated() {
                    sweep(value, "\(path)[\(i)]") { v in
                        var a = array
                        a[i] = v
                        return replace(a)
                    }
                }
            }
        }
        for (key, value) in full as! [String: Any] {
            sweep(value, key) { v in
                var o = full as! [String: Any]
                o[key] = v
                return o
            }
        }
        #expect(checked >= 80, "every field was tried")
    }

    /// Text that is not strict JSON: (text, what the message must contain).
    static let texts: [(String, String)] = [
        ("", "not valid JSON: no JSON value"),
        (
            "{\n  \"proxy\": {\"host\": \"127.0.0.1\", \"port\": 8080},\n  \"admin\": ",
            "not valid JSON: the text ends where a value should start at line 3"
        ),
        ("{\"loops\": 2,\n}", "not valid JSON: expected a member name in double quotes at line 2, column 1"),
        ("{\"loops\": 2} // two loops", "not valid JSON: unexpected text after the JSON value at line 1, column 14"),
        ("{\"routes\": [],\n \"routes\": []}", #"the member "routes" appears twice in one object at line 2, column 2"#),
        ("[]", "the configuration must be a JSON object, not an array"),
        ("\"authgate\"", "the configuration must be a JSON object, not a string"),
        ("{\"loops\": 012}", "leading zeros"),
        ("{\"loops\": 1e400}", "loops must be an integer"),
        ("{\"st\u{0}ateDirectory\": 1}", "NUL"),
        ("{\"a\\u0000\": 1}", "the configuration has a member name that is empty or has control characters"),
        (String(repeating: "[", count: 10_000), "nested deeper than 64 levels"),
    ]

    @Test func textThatIsNotStrictJSONIsRefusedWithItsPlace() {
        for (text, expected) in Self.texts {
            let m = Self.message(Data(text.utf8)) ?? "(accepted)"
            #expect(m.contains(expected), "\(text.prefix(40)): \(m)")
        }
        let latin1 = Self.message(Data([0x7B, 0x22, 0xE9, 0x22, 0x3A, 0x31, 0x7D])) ?? ""
        #expect(latin1.contains("invalid UTF-8 at line 1, column 3"), "\(latin1)")
    }
}
