import AuthCore
import Foundation
import Gateway

/// Reads the secrets a configuration points at. Environment variables are read here, in
/// the executable, and nowhere else.
enum SecretSources {
    static func readFile(_ path: String, what: String) throws -> String {
        do {
            let text = try String(contentsOfFile: path, encoding: .utf8)
            let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !trimmed.isEmpty else { throw ConfigurationError("\(what) file \(path) is empty") }
            return trimmed
        } catch let e as ConfigurationError {
            throw e
        } catch {
            throw ConfigurationError("cannot read the \(what) file \(path)")
        }
    }

    /// The store key: `AUTHGATE_STORE_KEY` (base64), a systemd credential named
    /// `authgate-store-key`, or the configured key file.
    static func storeKey(_ c: GatewayConfiguration) throws -> TokenStoreKey {
        let env = ProcessInfo.processInfo.environment
        if let b64 = env["AUTHGATE_STORE_KEY"], !b64.isEmpty {
            // Read once: out of the environment, so nothing that reads it later (a child
            // process, a crash reporter, getenv) finds the key there.
            unsetenv("AUTHGATE_STORE_KEY")
            do { return try TokenStoreKey(base64: b64) } catch {
                throw ConfigurationError("AUTHGATE_STORE_KEY is not a base64 32-byte key")
            }
        }
        if let dir = env["CREDENTIALS_DIRECTORY"], FileManager.default.fileExists(atPath: "\(dir)/authgate-store-key") {
            return try loadKey("\(dir)/authgate-store-key", create: false)
        }
        guard let file = c.keyFile else {
            throw ConfigurationError("no store key: set keyFile, AUTHGATE_STORE_KEY or a systemd credential authgate-store-key")
        }
        return try loadKey(file, create: c.createKey ?? false)
    }

    private static func loadKey(_ path: String, create: Bool) throws -> TokenStoreKey {
        try StateDirectory.checkKeyFile(path)
        do { return try TokenStoreKey.load(fromFile: path, createIfMissing: create) } catch {
            throw ConfigurationError("cannot use the store key file \(path): \(error)")
        }
    }

    static func resolve(_ c: GatewayConfiguration) throws -> GatewayService.Secrets {
        let clientSecret = try c.authorization.clientSecretFile.map { try readFile($0, what: "client secret") }
        let adminToken = try c.adminTokenFile.map { try readFile($0, what: "admin token") }
        var sessionSecrets: [String: String] = [:]
        for s in c.sessions ?? [] {
            if let file = s.authorization.clientSecretFile {
                sessionSecrets[s.name] = try readFile(file, what: "client secret of the session \(s.name)")
            }
        }
        return GatewayService.Secrets(
            clientSecret: clientSecret, adminToken: adminToken, storeKey: try storeKey(c), sessionClientSecrets: sessionSecrets)
    }
}
