import Crypto
import Foundation
import Testing
import X509

/// Certificates and keys written to a temporary directory for one test, made in process
/// (P-256, self-signed or issued by a throwaway CA) so that any validity window can be had.
struct CertificateFiles {
    let directory: String

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("ag-cert-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    func remove() { try? FileManager.default.removeItem(atPath: directory) }

    /// Writes `text` to `name` with `mode`; returns the path.
    @discardableResult
    func write(_ name: String, _ text: String, mode: Int = 0o600) -> String {
        let path = directory + "/" + name
        #expect(FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: mode]))
        return path
    }

    /// A self-signed certificate for `commonName` valid from `notBefore` to `notAfter`, and
    /// its key: the paths of both PEM files (the key readable by its owner only).
    func selfSigned(
        _ name: String, commonName: String = "gate", notBefore: Date = Date() - 3600, notAfter: Date = Date() + 86_400
    ) throws -> (certificate: String, key: String) {
        let key = P256.Signing.PrivateKey()
        let subject = try DistinguishedName { CommonName(commonName) }
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(key.publicKey),
            notValidBefore: notBefore, notValidAfter: notAfter, issuer: subject, subject: subject,
            signatureAlgorithm: .ecdsaWithSHA256, extensions: Certificate.Extensions(), issuerPrivateKey: .init(key))
        return (
            write("\(name).pem", try certificate.serializeAsPEM().pemString, mode: 0o644),
            write("\(name).key", key.pemRepresentation)
        )
    }
}
