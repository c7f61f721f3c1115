import Configuration
import Foundation
import Gateway
import Testing

/// The file, then `AUTHGATE_*` variables, then flags: for every field the configuration's
/// types have, found from the types (none is listed here by hand).
struct ConfigurationLayersTests {
    static var file: Data { Data(GatewayConfigurationTests.minimal.utf8) }
    static var layers: ConfigurationLayers<GatewayConfiguration> { ConfigurationLayers(GatewayConfiguration.self) }

    /// Every field that takes one scalar, with arrays at element 0.
    static func scalarPaths(_ node: ConfigurationSchema.Node = layers.schema.root, _ path: [String] = []) -> [(
        [String], ConfigurationSchema.Node
    )] {
        switch node {
        case .object(let fields): fields.flatMap { scalarPaths($0.node, path + [$0.name]) }
        case .array(let element) where !element.isScalar: scalarPaths(element, path + ["0"])
        default: node.isLeaf ? [(path, node)] : []
        }
    }

    static func merged(env: [String: String] = [:], flags: [String] = []) throws -> (
        JSONValueProbe, [String: ConfigurationSource]
    ) {
        let m = try layers.merge(file: ("authgate.json", file), environment: env, arguments: flags)
        return (JSONValueProbe(m.document), m.sources)
    }

    /// Reads a merged document by path.
    struct JSONValueProbe {
        let object: Any
        init(_ data: Data) { object = try! JSONSerialization.jsonObject(with: data) }
        subscript(_ path: [String]) -> Any? {
            var here: Any? = object
            for c in path {
                if let i = Int(c), let a = here as? [Any] {
                    here = a.indices.contains(i) ? a[i] : nil
                } else {
                    here = (here as? [String: Any])?[c]
                }
            }
            return here
        }
    }

    @Test func theSchemaHasEveryFieldNestedOnesAndArrayElements() {
        let paths = Set(Self.scalarPaths().map { ConfigurationNames.display($0.0) })
        for expected in [
            "authorization.tokenEndpoint", "authorization.mapping.paths.accessToken", "routes[0].upstream", "sessions[0].name",
            "sessions[0].authorization.clientSecretFile", "metrics.port", "upstreamRejection.statuses", "refreshLead",
            "trustForwardedFrom", "userInfo.needsSignUpStatuses",
        ] {
            #expect(paths.contains(expected), "\(expected)")
        }
        #expect(paths.count > 80)
        #expect(Self.layers.schema.node(at: ["authorization", "mapping", "extraFields"]) == .map)
        // A string or a list: a list of strings to the layers, so `a,b` gives both.
        #expect(Self.layers.schema.node(at: ["authorization", "tokenExchange", "audience"]) == .array(.string))
        #expect(Self.layers.schema.node(at: ["authorization", "tokenExchange", "resource"]) == .array(.string))
    }

    @Test func theNamesAreTheOnesSwiftConfigurationsProvidersLookUp() throws {
        for (path, _) in Self.scalarPaths() {
            let key = ConfigKey(path)
            let env = EnvironmentVariablesProvider(environmentVariables: [ConfigurationNames.environmentName(path): "v"])
                .prefixKeys(with: ConfigKey(["authgate"]))
            #expect(try env.value(forKey: AbsoluteConfigKey(key), type: .string).value != nil, "\(path)")
            let cli = CommandLineArgumentsProvider(arguments: ["authgate", ConfigurationNames.flagName(path), "v"])
            #expect(try cli.value(forKey: AbsoluteConfigKey(key), type: .string).value != nil, "\(path)")
        }
        #expect(
            ConfigurationNames.environmentName(["authorization", "tokenEndpoint"]) == "AUTHGATE_AUTHORIZATION_TOKEN_ENDPOINT")
        #expect(ConfigurationNames.flagName(["authorization", "clientID"]) == "--authorization-client-id")
    }

    static func canonical(_ value: Any?) -> String {
        guard let value, let data = try? JSONSerialization.data(withJSONObject: [value]) else { return "nil" }
        return String(decoding: data, as: UTF8.self)
    }

    @Test func everyScalarFieldCanBeSetByAVariableAndByAFlag() throws {
        for (path, node) in Self.scalarPaths() {
            let text: String
            let expected: Any
            switch node {
            case .integer, .scalar: (text, expected) = ("7", 7)
            case .bool: (text, expected) = ("true", true)
            case .array(.integer): (text, expected) = ("7,8", [7, 8])
            case .array: (text, expected) = ("a,b", ["a", "b"])
            default: (text, expected) = ("v", "v")
            }
            let env = ConfigurationNames.environmentName(path)
            let flag = ConfigurationNames.flagName(path)
            let display = ConfigurationNames.display(path)
            let (byEnv, envSources) = try Self.merged(env: [env: text])
            #expect(Self.canonical(byEnv[path]) == Self.canonical(expected), "\(env)")
            #expect(envSources[display] == .environment(env), "\(display)")
            let (byFlag, flagSources) = try Self.merged(env: [env: "ignored"], flags: [flag, text])
            #expect(Self.canonical(byFlag[path]) == Self.canonical(expected), "\(flag)")
            #expect(flagSources[display] == .flag(flag), "\(display)")
        }
    }

    @Test func eachLayerOverridesTheOneBefore() throws {
        let path = ["authorization", "tokenEndpoint"]
        let (file, s0) = try Self.merged()
        #expect(file[path] as? String == "https://id.example.com/oauth/token")
        #expect(s0["authorization.tokenEndpoint"] == .file("authgate.json"))
        let env = ["AUTHGATE_AUTHORIZATION_TOKEN_ENDPOINT": "https://env.example.com/t"]
        #expect(try Self.merged(env: env).0[path] as? String == "https://env.example.com/t")
        let (both, s2) = try Self.merged(env: env, flags: ["--authorization-token-endpoint=https://flag.example.com/t"])
        #expect(both[path] as? String == "https://flag.example.com/t")
        #expect(s2["authorization.tokenEndpoint"] == .flag("--authorization-token-endpoint"))
        // What no layer sets stays as the file has it.
        #expect(both[["proxy", "port"]] as? Int == 8080)
        // A whole array from a higher layer hides a lower layer's element fields.
        let (whole, s3) = try Self.merged(
            env: ["AUTHGATE_ROUTES_0_PREFIX": "/env"],
            flags: ["--routes", #"[{"prefix":"/flag","upstream":"https://f.example.com"}]"#])
        #expect(whole[["routes", "0", "prefix"]] as? String == "/flag")
        #expect(s3["routes"] == .flag("--routes") && s3["routes[0].prefix"] == nil)
    }

    @Test func anythingThatNamesNoFieldIsRefusedByName() {
        func error(env: [String: String] = [:], flags: [String] = []) -> String? {
            do {
                _ = try Self.merged(env: env, flags: flags)
                return nil
            } catch { return "\(error)" }
        }
        #expect(error(env: ["AUTHGATE_LOPS": "2"])?.hasPrefix("unknown environment variable AUTHGATE_LOPS") == true)
        #expect(
            error(env: ["AUTHGATE_ROUTES_X_PREFIX": "/"])?.hasPrefix("unknown environment variable AUTHGATE_ROUTES_X_PREFIX")
                == true)
        #expect(error(env: ["AUTHGATE_STORE_KEY": "k", "AUTHGATE_ADMIN_TOKEN": "t", "AUTHGATE_BIN": "b", "OTHER": "x"]) == nil)
        // Kubernetes' service links for a Service called authgate are not configuration.
        let links = [
            "AUTHGATE_SERVICE_HOST": "10.0.0.1", "AUTHGATE_SERVICE_PORT": "80", "AUTHGATE_SERVICE_PORT_METRICS": "9090",
            "AUTHGATE_PORT": "tcp://10.0.0.1:80", "AUTHGATE_PORT_80_TCP": "tcp://10.0.0.1:80",
            "AUTHGATE_PORT_80_TCP_ADDR": "10.0.0.1",
        ]
        #expect(error(env: links) == nil)
        #expect(error(env: ["AUTHGATE_PORT_80": "x"])?.hasPrefix("unknown environment variable AUTHGATE_PORT_80") == true)
        #expect(error(flags: ["--lops", "2"])?.hasPrefix("unknown flag --lops") == true)
        #expect(
            error(flags: ["stray"])
                == "argument 1 of the field flags: a value without a flag before it (each value follows its flag, such as --loops 2)"
        )
        #expect(error(flags: ["-l"])?.hasPrefix("-l: configuration flags are long options") == true)
        #expect(
            error(flags: ["--loops", "2", "-abcd"])
                == "argument 3 of the field flags: configuration flags are long options, such as --loops 2")
        for secret in ["--client-secret", "--authorization-client-secret", "--admin-token", "--store-key", "--password"] {
            #expect(error(flags: [secret, "x"])?.hasPrefix("\(secret): secrets are never taken from flags") == true, "\(secret)")
        }
        #expect(error(flags: ["--admin-token-file", "/run/t"]) == nil, "a path to a secret is not one")
        #expect(error(flags: ["--routes-2-prefix", "/x"])?.contains("there is no element 2 to set") == true)
        #expect(error(env: ["AUTHGATE_ROUTES": "[{"])?.hasPrefix("env AUTHGATE_ROUTES: not valid JSON") == true)
        #expect(error(env: ["AUTHGATE_AUTHORIZATION_MAPPING_EXTRA_FIELDS": "audience"])?.contains("takes a JSON object") == true)
    }

    @Test(
        arguments: [
            (["stray"], 1, "each value follows its flag, such as --loops 2"),
            (["stray", "--loops", "2"], 1, "each value follows its flag, such as --loops 2"),
            (["--loops", "2", "stray"], 3, "after --loops and its one value"),
            (["--loops=2", "stray"], 2, "after --loops=…, which holds its value"),
            (["--proxy-port", "8080", "--loops", "2", "3"], 5, "after --loops and its one value"),
            (["--routes-0-strip-prefix", "true", "yes"], 3, "after --routes-0-strip-prefix and its one value"),
            (
                ["--trust-forwarded-from", "10.0.0.0/8", "10.1.0.0/16", "--loops=2", "x"], 5,
                "after --loops=…, which holds its value"
            ),
        ] as [([String], Int, String)])
    func aValueNoFlagTakesIsRefusedByItsPositionAndTheFlagBeforeIt(flags: [String], position: Int, after: String) throws {
        let error = try #require(throws: GatewayError.self) { try Self.merged(flags: flags) }
        #expect(error.code == .invalidValue)
        #expect(error.field == nil)
        #expect("\(error)" == "argument \(position) of the field flags: a value without a flag before it (\(after))")
    }

    @Test(arguments: [
        ["--trust-forwarded-from", "10.0.0.0/8", "10.1.0.0/16"],  // a list takes several values
        ["--routes-0-strip-prefix", "--loops", "2"],  // a flag with no value is true
        ["--loops", "-1"],  // a negative number is a value
        ["--loops=2", "--proxy-port", "8080"],
    ])
    func everyValueAFlagTakesIsNotStray(flags: [String]) throws {
        _ = try Self.merged(flags: flags)
    }

    @Test func aSecretTypedWithoutItsFlagNeverAppearsInTheError() throws {
        let secret = "-sk_live_51HxQe9SECRETvalue"  // base64url: may start with -
        for flags in [
            [secret], [String(secret.dropFirst())], ["--loops", "2", secret], ["--loops=2", secret],
            ["--admin-token-file", "/run/t", String(secret.dropFirst())], ["--admin-token-file=/run/t", secret],
            ["--loops", String(secret.dropFirst()), "x"],  // nor the value of the flag before it
        ] {
            let error = try #require(throws: GatewayError.self, "\(flags)") {
                _ = try GatewayConfiguration.load(file: ("authgate.json", Self.file), environment: [:], arguments: flags)
            }
            for text in ["\(error)", error.message, String(reflecting: error), error.field ?? ""] {
                #expect(!text.contains("sk_live"), "\(flags): \(text)")
            }
            #expect(error.underlying == nil)
        }
    }

    @Test func theCheckedConfigurationNamesTheLayerThatSetABadValue() throws {
        func error(env: [String: String] = [:], flags: [String] = []) -> String? {
            do {
                _ = try GatewayConfiguration.load(file: ("authgate.json", Self.file), environment: env, arguments: flags)
                return nil
            } catch { return "\(error)" }
        }
        #expect(
            error(env: ["AUTHGATE_PROXY_PORT": "abc"])
                == "proxy.port must be an integer, not a string (set by env AUTHGATE_PROXY_PORT)")
        #expect(error(flags: ["--proxy-port", "70000"]) == "proxy.port must be 0…65535 (set by flag --proxy-port)")
        #expect(
            error(env: ["AUTHGATE_ROUTES": #"[{"prefix":"/"}]"#])
                == "missing field routes[0].upstream (set by env AUTHGATE_ROUTES)")
        #expect(error(flags: ["--routes-0-upstream", "ftp://x"])?.hasSuffix("(set by flag --routes-0-upstream)") == true)
        #expect(error(flags: ["--loops", "0"])?.hasPrefix("loops") == true)
        #expect(error(env: ["AUTHGATE_REFRESH_LEAD": "50%"], flags: ["--upstream-rejection-statuses", "401,419"]) == nil)
        let c = try GatewayConfiguration.load(
            file: ("authgate.json", Self.file), environment: ["AUTHGATE_REFRESH_LEAD": "50%"],
            arguments: ["--upstream-rejection-statuses", "401,419", "--allow-insecure-http"]
        ).configuration
        #expect(c.refreshLead == .percent(50))
        #expect(c.upstreamRejection?.statuses == [401, 419])
        #expect(c.allowInsecureHTTP == true)
    }

    /// A configuration type the gateway does not have: a section added later (such as a
    /// `store`) is covered without a line of layering code.
    struct Later: Decodable {
        struct Store: Decodable {
            struct Postgres: Decodable {
                var url: String
                var poolSize: Int?
                var tls: Bool?
            }
            var kind: String?
            var postgres: Postgres?
        }
        var name: String
        var store: Store?
    }

    @Test func aSectionAddedLaterIsCoveredWithoutNewCode() throws {
        let layers = ConfigurationLayers(Later.self)
        let m = try layers.merge(
            file: ("later.json", Data(#"{"name":"x","store":{"kind":"file"}}"#.utf8)),
            environment: ["AUTHGATE_STORE_POSTGRES_URL": "postgres://db/authgate", "AUTHGATE_STORE_KIND": "postgres"],
            arguments: ["--store-postgres-pool-size", "8", "--store-postgres-tls"])
        let object = try JSONSerialization.jsonObject(with: m.document) as? [String: Any]
        let store = object?["store"] as? [String: Any]
        #expect(store?["kind"] as? String == "postgres")
        let postgres = store?["postgres"] as? [String: Any]
        #expect(postgres?["url"] as? String == "postgres://db/authgate")
        #expect(postgres?["poolSize"] as? Int == 8)
        #expect(postgres?["tls"] as? Bool == true)
        #expect(m.sources["store.postgres.poolSize"] == .flag("--store-postgres-pool-size"))
        #expect(throws: GatewayError.self) {
            try layers.merge(file: nil, environment: ["AUTHGATE_STORE_POSTGRES_USER": "u"], arguments: [])
        }
    }
}
