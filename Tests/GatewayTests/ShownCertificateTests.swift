import AuthCore
import Crypto
import Foundation
import Testing
import X509

@testable import Gateway

/// What a session records of the certificate it shows: the `x5t#S256` of the leaf's DER
/// and its `notBefore`, following the files when they are renewed on disk.
@Suite struct ShownCertificateTests {
    @Test func theBindingIsTheLeafsThumbprintAndStart() throws {
        let files = try CertificateFiles()
        defer { files.remove() }
        let notBefore = Date(timeIntervalSince1970: 1_790_000_000)
        let pair = try files.selfSigned("leaf", notBefore: notBefore, notAfter: notBefore + 86_400 * 365 * 20)
        let pem = try String(contentsOfFile: pair.certificate, encoding: .utf8)
        let der = try Certificate(pemEncoded: pem).serializeAsPEM().derBytes
        let binding = try #require(
            ShownCertificate(ClientCertificate(certificateFile: pair.certificate, keyFile: pair.key)).current())
        #expect(binding.thumbprint == Base64URL.encode(SHA256.hash(data: der)))
        #expect(binding.notBefore == notBefore)
        // A chain file: the leaf comes first and is the one bound, not what follows it.
        let other = try String(contentsOfFile: try files.selfSigned("intermediate").certificate, encoding: .utf8)
        #expect(ShownCertificate.binding(ofPEM: Array((pem + other).utf8)) == binding)
        #expect(ShownCertificate.binding(ofPEM: Array((other + pem).utf8)) != binding)
    }

    @Test func aFileWithNoCertificateHasNoBinding() throws {
        let files = try CertificateFiles()
        defer { files.remove() }
        let path = files.write("empty.pem", "not a certificate\n", mode: 0o644)
        #expect(ShownCertificate.binding(ofPEM: Array("not a certificate\n".utf8)) == nil)
        #expect(ShownCertificate(ClientCertificate(certificateFile: path, keyFile: path)).current() == nil)
    }
}
