import Foundation
import Logging
import Testing

@testable import Gateway

/// `/readyz` and the client credential files: a certificate that turns unusable at run time
/// (expired, its key replaced) makes the process not ready, and ready again once put right.
@Suite struct ClientCredentialWatchTests {
    @Test func certificatesOfSessionsAndRoutesAreWatched() throws {
        let files = try CertificateFiles()
        defer { files.remove() }
        let session = try files.selfSigned("session")
        let route = try files.selfSigned("route")
        let c = try ClientCertificateConfigurationTests.configuration(
            [
                "clientAuthentication": "tls_client_auth", "clientCertificateFile": session.certificate,
                "clientCertificateKeyFile": session.key,
            ],
            routes: [
                [
                    "prefix": "/", "upstream": "https://api.example.com", "clientCertificateFile": route.certificate,
                    "clientCertificateKeyFile": route.key,
                ]
            ])
        let watch = ClientCredentialWatch(c, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        #expect(watch.usable())

        let sessionCertificate = try String(contentsOfFile: session.certificate, encoding: .utf8)
        let expired = try files.selfSigned("expired", notBefore: Date() - 7200, notAfter: Date() - 3600)
        try FileManager.default.removeItem(atPath: session.certificate)
        try FileManager.default.copyItem(atPath: expired.certificate, toPath: session.certificate)
        #expect(!watch.usable(), "an expired session certificate")
        try FileManager.default.removeItem(atPath: session.certificate)
        files.write("session.pem", sessionCertificate, mode: 0o644)
        #expect(watch.usable(), "put right")

        let other = try files.selfSigned("other")
        let routeKey = try String(contentsOfFile: route.key, encoding: .utf8)
        try FileManager.default.removeItem(atPath: route.key)
        try FileManager.default.copyItem(atPath: other.key, toPath: route.key)
        #expect(!watch.usable(), "a route's key that is not its certificate's")
        try FileManager.default.removeItem(atPath: route.key)
        files.write("route.key", routeKey)
        #expect(watch.usable())
    }
}
