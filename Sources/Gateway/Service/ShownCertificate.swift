import AuthCore
import Foundation
import Locking
import Runtime
import X509

/// What the certificate a session shows its token endpoint is: its `x5t#S256` and the start
/// of its validity, as ``AuthCore/CertificateBinding``. It reads the bytes the transport
/// shows (``Runtime/TLSClientIdentity/shownCertificatePEM()``), so a certificate renewed on
/// disk is seen when requests start showing it, and parses them again only when they change.
final class ShownCertificate: Sendable {
    private let identity: TLSClientIdentity
    private let parsed = Locked<(pem: [UInt8], binding: CertificateBinding?)?>(nil)

    init(_ certificate: ClientCertificate) {
        identity = TLSClientIdentity(certificateFile: certificate.certificateFile, keyFile: certificate.keyFile)
    }

    /// The binding of the certificate shown now; nil when its files cannot be read or hold
    /// no certificate.
    func current() -> CertificateBinding? {
        guard let pem = identity.shownCertificatePEM() else { return nil }
        if let cached = parsed.withLock({ p -> CertificateBinding?? in p?.pem == pem ? .some(p?.binding) : .none }) {
            return cached
        }
        let binding = Self.binding(ofPEM: pem)
        parsed.withLock { $0 = (pem, binding) }
        return binding
    }

    /// The binding of the first certificate of a PEM text (a chain file starts with the leaf).
    static func binding(ofPEM pem: [UInt8]) -> CertificateBinding? {
        let text = String(decoding: pem, as: UTF8.self)
        let begin = "-----BEGIN CERTIFICATE-----"
        let end = "-----END CERTIFICATE-----"
        guard let start = text.range(of: begin), let stop = text.range(of: end, range: start.upperBound..<text.endIndex),
            let der = Data(base64Encoded: String(text[start.upperBound..<stop.lowerBound]), options: .ignoreUnknownCharacters),
            let certificate = try? Certificate(pemEncoded: String(text[start.lowerBound..<stop.upperBound]))
        else { return nil }
        return CertificateBinding(der: Array(der), notBefore: certificate.notValidBefore)
    }
}
