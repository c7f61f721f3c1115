public import AuthCore
public import Foundation
public import Runtime
import X509

extension GatewayConfiguration {
    /// The rules between a certificate field and its key field at `field` (no file is read):
    /// both or neither.
    static func validateCertificatePair(certificate: String?, key: String?, at field: String) throws(GatewayError) {
        switch (certificate, key) {
        case (.some, nil):
            throw .required("\(field).clientCertificateKeyFile", "is required with \(field).clientCertificateFile")
        case (nil, .some):
            throw .required("\(field).clientCertificateFile", "is required with \(field).clientCertificateKeyFile")
        default:
            break
        }
    }

    /// Reads the certificate and key files at `field` and checks they can be shown in a
    /// handshake now: a PEM certificate valid at `now` with a key of a kind TLS signs with
    /// (RSA of at least 2,048 bits, EC P-256, P-384 or P-521, Ed25519), and its key,
    /// readable by its owner only. The error names the field and the file,
    /// never the contents.
    public static func checkCertificateFiles(certificate: String, key: String, at field: String, now: Date = Date())
        throws(GatewayError)
    {
        let certificateField = "\(field).clientCertificateFile"
        let keyField = "\(field).clientCertificateKeyFile"
        let pem = String(decoding: try SecretSources.readBytes(certificate, field: certificateField), as: UTF8.self)
        guard let first = firstCertificateBlock(pem) else {
            throw .invalid(certificateField, "\(certificate) holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
        }
        let parsed: Certificate
        do { parsed = try Certificate(pemEncoded: first) } catch {
            // swift-crypto refuses RSA keys under 2,048 bits, so a weak key ends up here too.
            throw .invalid(
                certificateField,
                "\(certificate) holds no X.509 certificate with a supported key "
                    + "(RSA of at least 2,048 bits, EC P-256/384/521, Ed25519)")
        }
        if parsed.notValidAfter < now {
            throw .invalid(certificateField, "\(certificate) expired on \(RFC3339.format(parsed.notValidAfter))")
        }
        if parsed.notValidBefore > now {
            throw .invalid(certificateField, "\(certificate) is not valid before \(RFC3339.format(parsed.notValidBefore))")
        }
        let keyData = try SecretSources.readBytes(key, field: keyField)
        let attributes = try? FileManager.default.attributesOfItem(atPath: key)
        if let mode = (attributes?[.posixPermissions] as? NSNumber)?.uint16Value, mode & 0o077 != 0 {
            throw .invalid(keyField, "\(key) is readable by others (mode \(String(mode & 0o777, radix: 8))); chmod 600 it")
        }
        let privateKey: Certificate.PrivateKey
        do { privateKey = try Certificate.PrivateKey(pemEncoded: String(decoding: keyData, as: UTF8.self)) } catch {
            throw .invalid(
                keyField, "\(key) holds no unencrypted PEM private key of a supported kind (RSA, EC P-256/384/521, Ed25519)")
        }
        guard privateKey.publicKey == parsed.publicKey else {
            throw .conflict(keyField, "\(key) is not the key of the certificate in \(certificate)")
        }
    }

    /// The first `CERTIFICATE` block of a PEM text (a chain file starts with the leaf).
    private static func firstCertificateBlock(_ pem: String) -> String? {
        let begin = "-----BEGIN CERTIFICATE-----"
        let end = "-----END CERTIFICATE-----"
        guard let start = pem.range(of: begin), let stop = pem.range(of: end, range: start.upperBound..<pem.endIndex)
        else { return nil }
        return String(pem[start.lowerBound..<stop.upperBound])
    }

    /// The certificate `a` names for its token endpoint, if any.
    static func clientCertificate(_ a: Authorization) -> ClientCertificate? {
        guard let certificate = a.clientCertificateFile, let key = a.clientCertificateKeyFile else { return nil }
        return ClientCertificate(certificateFile: certificate, keyFile: key)
    }

    /// Where the DPoP key of `a` comes from, if it uses DPoP.
    static func dpopKeySource(_ a: Authorization) -> DPoPKeySource? {
        guard let dpop = a.dpop else { return nil }
        let algorithm = dpop.algorithm.flatMap(ClientKey.Algorithm.init(rawValue:))
        if let path = dpop.keyFile { return .file(DPoPKey(path: path, algorithm: algorithm)) }
        return .generated(algorithm ?? .es256)
    }

    /// The authorization of the session route `r` names.
    private func authorization(of r: Route) -> Authorization? {
        let session = r.session ?? Self.defaultSession
        return session == Self.defaultSession ? authorization : sessions?.first { $0.name == session }?.authorization
    }

    /// What route `r` shows its upstream: its own certificate, else (an authenticated route)
    /// its session's.
    func upstreamIdentity(of r: Route) -> TLSClientIdentity? {
        if let certificate = r.clientCertificateFile, let key = r.clientCertificateKeyFile {
            return TLSClientIdentity(certificateFile: certificate, keyFile: key)
        }
        guard r.requiresAuthentication ?? true, r.upstream.lowercased().hasPrefix("https://") else { return nil }
        return authorization(of: r).flatMap(Self.clientCertificate).map {
            TLSClientIdentity(certificateFile: $0.certificateFile, keyFile: $0.keyFile)
        }
    }
}
