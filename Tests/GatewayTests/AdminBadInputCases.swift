/// One malformed admin API request and the answer it must get.
struct AdminBadInput: Sendable, CustomStringConvertible {
    var name: String
    var method = "POST"
    var target = "/auth/login"
    var headers = ["Content-Type: application/json"]
    var body: [UInt8] = []
    /// Send only the head, declaring a body this long (the refusal comes from the length).
    var declaredLength: Int?
    var status: Int
    /// The problem `type` code.
    var code: String
    /// What the detail, `field` or `parameter` must name.
    var names: String?
    /// The `Allow` header a 405 must carry.
    var allow: String?

    var description: String { name }

    init(
        _ name: String, _ method: String = "POST", _ target: String = "/auth/login", json: String? = nil, bytes: [UInt8]? = nil,
        headers: [String] = ["Content-Type: application/json"], declaredLength: Int? = nil, status: Int, code: String,
        names: String? = nil, allow: String? = nil
    ) {
        self.name = name
        self.method = method
        self.target = target
        self.headers = headers
        self.body = bytes ?? Array((json ?? "").utf8)
        self.declaredLength = declaredLength
        self.status = status
        self.code = code
        self.names = names
        self.allow = allow
    }
}

/// The battery: every endpoint that takes a body or a query, every way of getting it wrong.
enum AdminBadInputCases {
    /// Values that must never come back in an answer or a log line.
    static let password = "hunter2-SECRET-pw"
    static let importedToken = "IMPORTED-SECRET-token"
    static let refreshToken = "REFRESH-SECRET-token"
    static let code = "CODE-SECRET-value"
    static let secrets = [password, importedToken, refreshToken, code]

    /// The string members of each grant, with a value that is valid for each.
    static let grants: [(grant: String, members: [(String, String)])] = [
        ("password", [("username", "alice"), ("password", password), ("scope", "read write"), ("subject", "alice")]),
        (
            "authorization_code",
            [
                ("code", code), ("redirect_uri", "https://app.example/cb"),
                ("code_verifier", String(repeating: "v", count: 43)), ("subject", "alice"),
            ]
        ),
        ("client_credentials", [("scope", "read"), ("subject", "svc")]),
        (
            "import",
            [
                ("access_token", importedToken), ("refresh_token", refreshToken), ("token_type", "Bearer"), ("scope", "read"),
                ("subject", "alice"),
            ]
        ),
    ]

    /// A login body of `grant` with every member valid except `member`, written as `raw` JSON.
    static func body(_ grant: String, _ member: String, raw: String) -> String {
        let valid = grants.first { $0.grant == grant }!.members
        var parts = [#""grant_type":"\#(grant)""#]
        for (name, value) in valid where name != member { parts.append(#""\#(name)":"\#(value)""#) }
        parts.append(#""\#(member)":\#(raw)"#)
        return "{" + parts.joined(separator: ",") + "}"
    }

    static let goodPassword = #"{"grant_type":"password","username":"alice","password":"\#(password)"}"#

    static var malformedJSON: [AdminBadInput] {
        let nested = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        let nestedObjects = String(repeating: #"{"a":"#, count: 10_000) + "1" + String(repeating: "}", count: 10_000)
        var invalidUTF8 = Array(#"{"grant_type":"password","username":"al"#.utf8) + [0xFF, 0xFE]
        invalidUTF8 += Array(#"ice","password":"\#(password)"}"#.utf8)
        var rawNUL = Array(#"{"grant_type":"password","username":"a"#.utf8) + [0x00]
        rawNUL += Array(#"b","password":"\#(password)"}"#.utf8)
        let overlong: [UInt8] = Array(#"{"grant_type":"password","username":""#.utf8) + [0xC0, 0xAF] + Array(#""}"#.utf8)
        return [
            AdminBadInput(
                "truncated", json: String(goodPassword.dropLast(5)), status: 400, code: "malformed-json", names: "ends"),
            AdminBadInput("trailing garbage", json: goodPassword + " x", status: 400, code: "malformed-json", names: "after"),
            AdminBadInput("two objects", json: goodPassword + goodPassword, status: 400, code: "malformed-json", names: "after"),
            AdminBadInput("empty body", json: "", status: 400, code: "malformed-json", names: "empty"),
            AdminBadInput("only spaces", json: "  \r\n ", status: 400, code: "malformed-json", names: "empty"),
            AdminBadInput("10k nested arrays", json: nested, status: 400, code: "malformed-json", names: "nested"),
            AdminBadInput("10k nested objects", json: nestedObjects, status: 400, code: "malformed-json", names: "nested"),
            AdminBadInput(
                "duplicate password",
                json: #"{"grant_type":"password","username":"a","password":"x","password":"\#(password)"}"#, status: 400,
                code: "malformed-json", names: "password"),
            AdminBadInput(
                "duplicate grant_type", json: #"{"grant_type":"import","grant_type":"password"}"#, status: 400,
                code: "malformed-json", names: "grant_type"),
            AdminBadInput("invalid UTF-8", bytes: invalidUTF8, status: 400, code: "malformed-json", names: "UTF-8"),
            AdminBadInput("overlong UTF-8", bytes: overlong, status: 400, code: "malformed-json", names: "UTF-8"),
            AdminBadInput("raw NUL in a string", bytes: rawNUL, status: 400, code: "malformed-json", names: "NUL"),
            AdminBadInput(
                "raw newline in a string", json: "{\"grant_type\":\"pass\nword\"}", status: 400, code: "malformed-json",
                names: "control"),
            AdminBadInput(
                "single quotes", json: "{'grant_type':'password'}", status: 400, code: "malformed-json", names: "name"),
            AdminBadInput(
                "trailing comma", json: #"{"grant_type":"client_credentials",}"#, status: 400, code: "malformed-json",
                names: "name"),
            AdminBadInput(
                "comment", json: #"{"grant_type":"client_credentials"} // hi"#, status: 400, code: "malformed-json",
                names: "after"),
            AdminBadInput(
                "lone surrogate", json: #"{"grant_type":"password","username":"\ud800","password":"x"}"#, status: 400,
                code: "malformed-json", names: "surrogate"),
            AdminBadInput(
                "bad escape", json: #"{"grant_type":"password","username":"\x41","password":"x"}"#, status: 400,
                code: "malformed-json", names: "escape"),
            AdminBadInput(
                "NaN", json: #"{"grant_type":"import","access_token":"a","expires_in":NaN}"#, status: 400,
                code: "malformed-json", names: "value"),
            AdminBadInput(
                "leading zero", json: #"{"grant_type":"import","access_token":"a","expires_in":012}"#, status: 400,
                code: "malformed-json", names: "zero"),
            AdminBadInput(
                "unquoted name", json: #"{grant_type:"password"}"#, status: 400, code: "malformed-json", names: "name"),
            AdminBadInput(
                "UTF-16 body",
                bytes: Array(#"{"grant_type":"client_credentials"}"#.utf16).flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] },
                status: 400, code: "malformed-json", names: "UTF-8"),
        ]
    }

    static var notAnObject: [AdminBadInput] {
        [
            ("[]", "array"), (#"[{"grant_type":"client_credentials"}]"#, "array"), (#""password""#, "string"), ("42", "number"),
            ("null", "null"), ("true", "boolean"),
        ].map {
            AdminBadInput("top level \($0.1)", json: $0.0, status: 422, code: "invalid-body", names: $0.1)
        }
    }

    static var grantTypes: [AdminBadInput] {
        var cases = [
            AdminBadInput("no grant_type", json: "{}", status: 422, code: "missing-field", names: "grant_type"),
            AdminBadInput(
                "no grant_type, other members", json: #"{"username":"alice","password":"\#(password)"}"#, status: 422,
                code: "missing-field", names: "grant_type"),
        ]
        for g in [
            "magic", "refresh_token", "PASSWORD", "password ", "password\\u0000", "",
            "device_code", "urn:ietf:params:oauth:grant-type:saml2-bearer",
        ] {
            cases.append(
                AdminBadInput(
                    "grant_type \(g)", json: #"{"grant_type":"\#(g)","username":"a","password":"\#(password)"}"#, status: 422,
                    code: "unsupported-grant-type", names: "grant_type"))
        }
        for g in [
            "urn:ietf:params:oauth:grant-type:jwt-bearer", "urn:ietf:params:oauth:grant-type:token-exchange",
            "urn:ietf:params:oauth:grant-type:device_code",
        ] {
            // The assertion and subject token come from files, the device code from the
            // server; a body carrying one is refused.
            for member in ["assertion", "subject_token", "device_code", "username"] {
                cases.append(
                    AdminBadInput(
                        "grant_type \(g) with \(member)", json: #"{"grant_type":"\#(g)","\#(member)":"\#(password)"}"#,
                        status: 422, code: "unknown-field", names: member))
            }
        }
        for raw in ["7", "null", "true", #"["password"]"#, #"{"type":"password"}"#, "1e400"] {
            cases.append(
                AdminBadInput(
                    "grant_type \(raw)", json: #"{"grant_type":\#(raw)}"#, status: 422, code: "invalid-field", names: "grant_type"
                ))
        }
        return cases
    }

    /// Every string member of every grant: wrong types, empty, control characters.
    static var members: [AdminBadInput] {
        var cases: [AdminBadInput] = []
        let wrongTypes = ["7", "-1", "1e400", "true", "null", #"["x"]"#, #"{"a":"b"}"#, "99999999999999999999999999"]
        let controls = [#"\u0000"#, #"a\u0000b"#, #"a\r\nX-Evil: 1"#, #"\n"#, #"\t"#, #"\u001b[31m"#, #"\u007f"#, #"\u0085"#]
        for (grant, members) in grants {
            for (member, _) in members {
                for raw in wrongTypes {
                    cases.append(
                        AdminBadInput(
                            "\(grant) \(member) \(raw)", json: body(grant, member, raw: raw), status: 422, code: "invalid-field",
                            names: member))
                }
                cases.append(
                    AdminBadInput(
                        "\(grant) \(member) empty", json: body(grant, member, raw: #""""#), status: 422, code: "invalid-field",
                        names: member))
                for c in controls {
                    cases.append(
                        AdminBadInput(
                            "\(grant) \(member) control \(c)", json: body(grant, member, raw: #""secret\#(c)""#), status: 422,
                            code: "invalid-field", names: member))
                }
            }
        }
        return cases
    }

    static var numbersAndSyntax: [AdminBadInput] {
        var cases: [AdminBadInput] = []
        let imported = #""grant_type":"import","access_token":"\#(importedToken)""#
        for raw in [
            "0", "-1", "-0", "1.5", "1e400", "-1e400", "1e-400", "2147483648", "9223372036854775808",
            "123456789012345678901234567890",
        ] {
            cases.append(
                AdminBadInput(
                    "expires_in \(raw)", json: "{\(imported),\"expires_in\":\(raw)}", status: 422, code: "invalid-field",
                    names: "expires_in"))
        }
        for raw in [#""60""#, "true", "null", "[60]", #"{"s":60}"#] {
            cases.append(
                AdminBadInput(
                    "expires_in \(raw)", json: "{\(imported),\"expires_in\":\(raw)}", status: 422, code: "invalid-field",
                    names: "expires_in"))
        }
        let syntax: [(String, String, String)] = [
            ("import", "access_token", #""a b""#), ("import", "access_token", #""a=b""#), ("import", "access_token", #""tök""#),
            ("import", "token_type", #""Bearer x""#), ("import", "token_type", #""Bearer\"""#),
            ("import", "refresh_token", #""rëfresh""#), ("password", "scope", #""read  write""#),
            ("password", "scope", #"" read""#), ("password", "scope", #""a\"b""#), ("authorization_code", "code", #""cöde""#),
            ("authorization_code", "redirect_uri", #""https://app/c b""#),
            ("authorization_code", "code_verifier", #""short""#),
            ("authorization_code", "code_verifier", "\"\(String(repeating: "v", count: 129))\""),
            ("authorization_code", "code_verifier", "\"\(String(repeating: "v", count: 42))!\""),
        ]
        for (grant, member, raw) in syntax {
            cases.append(
                AdminBadInput(
                    "\(grant) \(member) syntax \(raw)", json: body(grant, member, raw: raw), status: 422, code: "invalid-field",
                    names: member))
        }
        return cases
    }

    static var missingAndUnknown: [AdminBadInput] {
        [
            AdminBadInput(
                "password without password", json: #"{"grant_type":"password","username":"alice"}"#, status: 422,
                code: "missing-field", names: "password"),
            AdminBadInput(
                "password without username", json: #"{"grant_type":"password","password":"\#(password)"}"#, status: 422,
                code: "missing-field", names: "username"),
            AdminBadInput(
                "code without code", json: #"{"grant_type":"authorization_code"}"#, status: 422, code: "missing-field",
                names: "code"),
            AdminBadInput(
                "import without access_token", json: #"{"grant_type":"import","refresh_token":"\#(refreshToken)"}"#,
                status: 422, code: "missing-field", names: "access_token"),
            AdminBadInput(
                "misspelt refresh_token",
                json: #"{"grant_type":"import","access_token":"\#(importedToken)","refresh_tokn":"\#(refreshToken)"}"#,
                status: 422, code: "unknown-field", names: "refresh_tokn"),
            AdminBadInput(
                "scopes", json: #"{"grant_type":"client_credentials","scopes":"read"}"#, status: 422, code: "unknown-field",
                names: "scopes"),
            AdminBadInput(
                "another grant's member", json: #"{"grant_type":"client_credentials","password":"\#(password)"}"#,
                status: 422, code: "unknown-field", names: "password"),
            AdminBadInput(
                "client_secret in the body", json: #"{"grant_type":"client_credentials","client_secret":"\#(password)"}"#,
                status: 422, code: "unknown-field", names: "client_secret"),
            AdminBadInput(
                "session in the body", json: #"{"grant_type":"password","username":"a","password":"b","session":"x"}"#,
                status: 422, code: "unknown-field", names: "session"),
            AdminBadInput(
                "a secret as a member name", json: #"{"grant_type":"client_credentials","\#(password) x":1}"#, status: 422,
                code: "unknown-field"),
            AdminBadInput(
                "a NUL member name", json: #"{"grant_type":"client_credentials","\u0000":1}"#, status: 422,
                code: "unknown-field"),
        ]
    }
}
