import AuthCore
import Foundation
import Gateway
import Glibc
import Logging
import TestSupport
import Testing

/// A configuration error carries a stable code and the field at fault as values (nothing
/// parsed back out of its sentence), and its description never quotes a secret.
@Suite struct ConfigurationErrorTests {
    /// The error loading the minimal file with `edit` applied throws.
    static func error(_ edit: (inout [String: Any]) -> Void) -> GatewayError? {
        do {
            _ = try GatewayConfigurationTests.load(edit)
            return nil
        } catch {
            return error as? GatewayError
        }
    }

    /// The error the layers (minimal file, `env`, `flags`) throw.
    static func layeredError(env: [String: String] = [:], flags: [String] = []) -> GatewayError? {
        do {
            _ = try GatewayConfiguration.load(
                file: ("authgate.json", Data(GatewayConfigurationTests.minimal.utf8)), environment: env, arguments: flags)
            return nil
        } catch {
            return error as? GatewayError
        }
    }

    static func scratch() -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("age-\(UUID().uuidString)").path
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        return path
    }

    @Test func theConfigurationCodesAreTheOnesAServeExits78For() {
        #expect(GatewayError.Code.configuration.allSatisfy { $0.isConfiguration })
        #expect(GatewayError.Code.all.filter(\.isConfiguration) == GatewayError.Code.configuration)
        #expect(!GatewayError.Code.reloadRefused.isConfiguration && !GatewayError.Code.issuerUnusable.isConfiguration)
        #expect(GatewayError.Code.invalidValue.description == "invalid-value")
        #expect(GatewayError.invalid("maxReplays", "must be 0…10").code.isConfiguration)
    }

    @Test func decodingErrorsCarryCodeAndField() throws {
        let notJSON = try #require(
            #expect(throws: GatewayError.self) { try GatewayConfiguration.load(from: Data("{".utf8)) })
        #expect(notJSON.code == .invalidJSON && notJSON.field == nil && notJSON.underlying != nil)
        #expect(notJSON.description.hasPrefix("not valid JSON: "))

        let array = try #require(
            #expect(throws: GatewayError.self) { try GatewayConfiguration.load(from: Data("[]".utf8)) })
        #expect(array.code == .invalidJSON && array.field == nil)

        let type = try #require(Self.error { $0["proxy"] = ["host": "127.0.0.1", "port": "8080"] })
        #expect(type.code == .invalidValue && type.field == "proxy.port")
        #expect(type.description == "proxy.port must be an integer, not a string")

        let unknown = try #require(Self.error { $0["refreshLaed"] = "5m" })
        #expect(unknown.code == .unknownField && unknown.field == "refreshLaed")
        #expect(unknown.description == "unknown field refreshLaed")

        let missing = try #require(Self.error { $0["stateDirectory"] = nil })
        #expect(missing.code == .missingField && missing.field == "stateDirectory")
        #expect(missing.description == "missing field stateDirectory")

        let empty = try #require(Self.error { $0["routes"] = [["prefix": "", "upstream": "https://api.example.com"]] })
        #expect(empty.code == .invalidValue && empty.field == "routes[0].prefix")
    }

    @Test func validationErrorsCarryCodeAndField() throws {
        let range = try #require(Self.error { $0["maxReplays"] = 11 })
        #expect(range.code == .invalidValue && range.field == "maxReplays" && range.description == "maxReplays must be 0…10")

        let sharedPort = try #require(Self.error { $0["admin"] = ["host": "127.0.0.1", "port": 8080] })
        #expect(sharedPort.code == .conflict && sharedPort.field == "admin.port")
        #expect(sharedPort.description == "admin.port is also proxy.port")

        let required = try #require(Self.error { $0["adminTokenFile"] = nil })
        #expect(required.code == .missingField && required.field == "adminTokenFile")

        let unixProxy = try #require(Self.error { $0["proxy"] = ["unix": "relative.sock"] })
        #expect(unixProxy.field == "proxy.unix")

        let both = try #require(
            Self.error {
                $0["refreshLead"] = "50%"
                $0["refreshSkewSeconds"] = 30
            })
        #expect(both.code == .conflict && both.field == "refreshLead")
        #expect(both.description == "refreshLead and refreshSkewSeconds: set only one")
    }

    @Test func listenerErrorsCarryCodeAndField() throws {
        let listener = GatewayConfiguration.Listener(unix: "run/admin.sock")
        let error = try #require(listener.error(at: "admin"))
        #expect(error.code == .invalidValue && error.field == "admin.unix")
        #expect(error.description == "admin.unix must be an absolute path")
        #expect(GatewayConfiguration.Listener(host: "127.0.0.1", port: 0).error(at: "probes") == nil)

        let c = try GatewayConfigurationTests.load { $0["admin"] = ["unix": "/nonexistent-authgate-e/admin.sock"] }
        let missing = try #require(#expect(throws: GatewayError.self) { try c.checkListenerDirectories() })
        #expect(missing.code == .unusablePath && missing.field == "admin.unix")
    }

    @Test func secretFileErrorsCarryCodeAndFieldButNeverTheContent() throws {
        let root = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let absent = try #require(
            #expect(throws: GatewayError.self) {
                try SecretSources.readFile(root + "/absent", field: "adminTokenFile")
            })
        #expect(absent.code == .unreadableFile && absent.field == "adminTokenFile")
        #expect(absent.description == "adminTokenFile: cannot read \(root)/absent (no such file)")

        let secret = "s3cr3t-admin-token-7731"
        let twoLines = root + "/two-lines"
        #expect(FileManager.default.createFile(atPath: twoLines, contents: Data("\(secret)\u{1}more\n".utf8)))
        let control = try #require(
            #expect(throws: GatewayError.self) {
                try SecretSources.readFile(twoLines, field: "authorization.clientSecretFile")
            })
        #expect(control.code == .unreadableFile && control.field == "authorization.clientSecretFile")
        #expect(!control.description.contains(secret) && !control.message.contains(secret))
    }

    @Test func stateDirectoryErrorsCarryCodeAndField() throws {
        let root = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let file = root + "/file"
        #expect(FileManager.default.createFile(atPath: file, contents: Data()))
        let notDirectory = try #require(#expect(throws: GatewayError.self) { try StateDirectory.prepare(file) })
        #expect(notDirectory.code == .unusablePath && notDirectory.field == "stateDirectory")
        #expect(notDirectory.description == "the state directory \(file) is not a directory")

        let open = root + "/open"
        try FileManager.default.createDirectory(
            atPath: open, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o755])
        let unsafe = try #require(#expect(throws: GatewayError.self) { try StateDirectory.prepare(open) })
        #expect(unsafe.code == .unsafePermissions && unsafe.field == "stateDirectory")
        #expect(
            unsafe.description
                == "the state directory \(open) is accessible to its group or others (mode 0755); "
                + "it holds the sealed tokens: chmod 700 \(open)")

        let key = root + "/key"
        #expect(FileManager.default.createFile(atPath: key, contents: Data(), attributes: [.posixPermissions: 0o644]))
        let openKey = try #require(#expect(throws: GatewayError.self) { try StateDirectory.checkKeyFile(key) })
        #expect(openKey.code == .unsafePermissions && openKey.field == "keyFile")
        #expect(
            openKey.description == "the store key file \(key) is accessible to its group or others (mode 0644); chmod 600 \(key)")

        // Absent and not to be created (--check-config): nothing to refuse.
        try StateDirectory.prepare(root + "/absent", create: false)
        #expect(!FileManager.default.fileExists(atPath: root + "/absent"))

        // Met at a field: the field prefixed, the code kept, the first error underlying.
        let prefixed = unsafe.prefixed(with: "stateDirectory")
        #expect(prefixed.code == .unsafePermissions && prefixed.field == "stateDirectory")
        #expect(prefixed.description == "stateDirectory: \(unsafe.description)")
        #expect(prefixed.underlying as? GatewayError == unsafe)
    }

    @Test func variablesAndFlagsKeepTheFieldAndNameTheirLayer() throws {
        let env = try #require(Self.layeredError(env: ["AUTHGATE_MAX_REPLAYS": "11"]))
        #expect(env.code == .invalidValue && env.field == "maxReplays")
        #expect(env.source == .environment("AUTHGATE_MAX_REPLAYS"))
        #expect(env.message == "maxReplays must be 0…10")
        #expect(env.description == "maxReplays must be 0…10 (set by env AUTHGATE_MAX_REPLAYS)")

        let flag = try #require(Self.layeredError(flags: ["--max-replays", "11"]))
        #expect(flag.field == "maxReplays" && flag.source == .flag("--max-replays"))
        #expect(flag.description == "maxReplays must be 0…10 (set by flag --max-replays)")

        // A nested field set whole by a variable: the field named is the nested one.
        let nested = try #require(Self.layeredError(env: ["AUTHGATE_PROXY_PORT": "70000"]))
        #expect(nested.field == "proxy.port" && nested.source == .environment("AUTHGATE_PROXY_PORT"))

        // Set by the file: no layer named.
        let file = try #require(Self.error { $0["maxReplays"] = 11 })
        #expect(file.source == nil && file.description == file.message)

        let unknownFlag = try #require(Self.layeredError(flags: ["--no-such-field", "1"]))
        #expect(unknownFlag.code == .unknownField && unknownFlag.field == "--no-such-field")

        let unknownVariable = try #require(Self.layeredError(env: ["AUTHGATE_NO_SUCH_FIELD": "1"]))
        #expect(unknownVariable.code == .unknownField && unknownVariable.field == "AUTHGATE_NO_SUCH_FIELD")

        let secretFlag = try #require(Self.layeredError(flags: ["--admin-token", "hunter2-flag-secret"]))
        #expect(secretFlag.code == .secretExposed && secretFlag.field == "--admin-token")
        #expect(!secretFlag.description.contains("hunter2-flag-secret"))

        let badJSON = try #require(Self.layeredError(env: ["AUTHGATE_ROUTES": "[{"]))
        #expect(badJSON.code == .invalidJSON && badJSON.field == "AUTHGATE_ROUTES", "\(badJSON.field ?? "nil"): \(badJSON)")
    }

    @Test func storeErrorsCarryCodeAndFieldAndNeverThePassword() throws {
        let password = "hunter2-store-password"
        let withPassword = try #require(
            Self.error { $0["store"] = ["kind": "postgres", "url": "postgres://authgate:\(password)@db.example.com/authgate"] })
        #expect(withPassword.code == .secretExposed && withPassword.field == "store.url")
        #expect(!withPassword.description.contains(password))
        for odd in ["pa#ss", "pa/ss", "pa?ss", "pa@ss", "p#/?@", ""] {
            let secret = odd + password
            let error = try #require(
                Self.error {
                    $0["store"] = ["kind": "postgres", "url": "postgres://authgate:\(secret)@db.example.com/authgate"]
                },
                "\(odd)")
            #expect(error.code == .secretExposed && error.field == "store.url", "\(odd)")
            #expect(!error.description.contains(password))
        }

        let fileOnly = try #require(Self.error { $0["store"] = ["kind": "file", "table": "tokens"] })
        #expect(fileOnly.code == .conflict && fileOnly.field == "store.table")

        let noURL = try #require(Self.error { $0["store"] = ["kind": "postgres"] })
        #expect(noURL.code == .missingField && noURL.field == "store.url")

        let key = "not-a-key-but-secret-looking-\(UUID().uuidString)"
        let c = try GatewayConfigurationTests.load { _ in }
        let badKey = try #require(
            #expect(throws: GatewayError.self) {
                try SecretSources.resolve(c, environment: ["AUTHGATE_STORE_KEY": key])
            })
        #expect(badKey.code == .invalidValue && badKey.field == "AUTHGATE_STORE_KEY")
        #expect(!badKey.description.contains(key))
    }

    @Test func aStoreThatCannotBeReachedIsAConfigurationErrorNamingTheFieldNotThePassword() async throws {
        // Bound and not listening: a connection to it is refused, and nothing else can take the port.
        let (fd, port) = try refusingLoopbackPort()
        defer { close(fd) }
        let root = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let password = "db-password-\(UUID().uuidString)"
        #expect(FileManager.default.createFile(atPath: root + "/db-password", contents: Data(password.utf8)))
        let c = try GatewayConfigurationTests.load {
            $0["store"] = [
                "kind": "postgres", "url": "postgres://authgate@127.0.0.1:\(port)/authgate", "tlsMode": "disable",
                "passwordFile": root + "/db-password",
            ]
        }
        let error = try #require(
            await #expect(throws: GatewayError.self) {
                _ = try await GatewayStores.open(
                    c, key: TokenStoreKey.random(), logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
            })
        #expect(error.code == .storeUnavailable && error.field == "store.url", "\(error)")
        #expect(error.description.hasPrefix("store.url: ") && error.underlying != nil)
        #expect(!error.description.contains(password))
    }

    @Test func anotherErrorMetWhileReadingIsKeptUnderneath() {
        struct Broken: Error, CustomStringConvertible {
            var description: String { "the disk is on fire" }
        }
        let error = GatewayError.configurationFailed(Broken())
        #expect(error.code == .configurationFailed && error.field == nil && error.description == "the disk is on fire")
        #expect(error.underlying is Broken)
    }
}
