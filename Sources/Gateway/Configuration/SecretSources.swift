public import AuthCore
import Foundation

/// Reads the secrets a configuration points at: files, the environment the executable
/// passes in (`AUTHGATE_STORE_KEY`, `CREDENTIALS_DIRECTORY`), and systemd credentials.
public enum SecretSources {
    /// The secret in the file at `path`, which the configuration names as `field`: one line
    /// of text, trimmed. Every refusal names the field and the path, never the content.
    public static func readFile(_ path: String, field: String) throws(GatewayError) -> String {
        let data = try readBytes(path, field: field)
        guard let text = String(data: data, encoding: .utf8) else {
            throw .at(field, .unreadableFile, "\(path) is not UTF-8 text")
        }
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw .at(field, .unreadableFile, "\(path) is empty") }
        guard !trimmed.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) else {
            throw .at(field, .unreadableFile, "\(path) holds control characters; it must hold the secret on one line")
        }
        return trimmed
    }

    /// The bytes of the file at `path`; a file that cannot be read is refused naming `field`
    /// and why (no such file, a directory, no permission).
    static func readBytes(_ path: String, field: String) throws(GatewayError) -> Data {
        do {
            return try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            var isDirectory: ObjCBool = false
            let reason =
                !FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
                ? "no such file" : isDirectory.boolValue ? "it is a directory" : "permission denied or unreadable"
            throw .unreadable(field, path: path, reason: reason, underlying: error)
        }
    }

    /// The store key: `AUTHGATE_STORE_KEY` (base64), a systemd credential named
    /// `authgate-store-key`, or the configured key file. The caller removes
    /// `AUTHGATE_STORE_KEY` from its process environment once it has read it, so nothing
    /// that reads it later (a child process, a crash reporter, getenv) finds the key there.
    static func storeKey(_ c: GatewayConfiguration, environment env: [String: String]) throws(GatewayError) -> TokenStoreKey {
        if let b64 = env["AUTHGATE_STORE_KEY"], !b64.isEmpty {
            do { return try TokenStoreKey(base64: b64) } catch {
                throw .invalid("AUTHGATE_STORE_KEY", "is not a base64 32-byte key")
            }
        }
        if let dir = env["CREDENTIALS_DIRECTORY"], FileManager.default.fileExists(atPath: "\(dir)/authgate-store-key") {
            return try loadKey(
                "\(dir)/authgate-store-key", create: false, field: "authgate-store-key",
                named: "the systemd credential authgate-store-key")
        }
        guard let file = c.keyFile else {
            throw GatewayError(
                .missingField, field: "keyFile",
                "no store key: set keyFile, AUTHGATE_STORE_KEY or a systemd credential authgate-store-key")
        }
        return try loadKey(file, create: c.createKey ?? false, field: "keyFile", named: "keyFile")
    }

    /// The key in the file at `path`, which `field` names (`keyFile`, or the systemd
    /// credential); `name` is how the message names it.
    private static func loadKey(_ path: String, create: Bool, field: String, named name: String) throws(GatewayError)
        -> TokenStoreKey
    {
        do {
            try StateDirectory.checkKeyFile(path)
        } catch {
            throw error.prefixed(with: field, named: name)
        }
        do { return try TokenStoreKey.load(fromFile: path, createIfMissing: create) } catch {
            throw GatewayError(
                .unreadableFile, field: field, "\(name): cannot use the store key file \(path): \(error)", underlying: error)
        }
    }

    /// Every secret `c` names; `environment` is the process environment as read at start.
    /// Throws a ``GatewayError`` naming the field, never quoting a secret.
    public static func resolve(_ c: GatewayConfiguration, environment: [String: String]) throws -> GatewayService.Secrets {
        try resolve(c, keeping: try storeKey(c, environment: environment))
    }

    /// The secret files `c` names, read again, with the store key the process already holds
    /// (a reload: the key never changes without a restart). Throws a ``GatewayError``
    /// naming the field, never quoting a secret.
    public static func resolve(_ c: GatewayConfiguration, keeping storeKey: TokenStoreKey) throws -> GatewayService.Secrets {
        let clientSecret = try c.authorization.clientSecretFile.map { try readFile($0, field: "authorization.clientSecretFile") }
        try GatewayConfiguration.checkClientCredentialFiles(c.authorization, at: "authorization")
        let adminToken = try c.adminTokenFile.map { try readFile($0, field: "adminTokenFile") }
        var sessionSecrets: [String: String] = [:]
        for (i, s) in (c.sessions ?? []).enumerated() {
            try GatewayConfiguration.checkClientCredentialFiles(s.authorization, at: "sessions[\(i)].authorization")
            if let file = s.authorization.clientSecretFile {
                sessionSecrets[s.name] = try readFile(file, field: "sessions[\(i)].authorization.clientSecretFile")
            }
        }
        for (i, r) in c.routes.enumerated() {
            guard let certificate = r.clientCertificateFile, let key = r.clientCertificateKeyFile else { continue }
            try GatewayConfiguration.checkCertificateFiles(certificate: certificate, key: key, at: "routes[\(i)]")
        }
        return GatewayService.Secrets(
            clientSecret: clientSecret, adminToken: adminToken, storeKey: storeKey, sessionClientSecrets: sessionSecrets)
    }
}
