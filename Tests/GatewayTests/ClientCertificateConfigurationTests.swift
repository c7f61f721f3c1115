import Foundation
import Gateway
import Runtime
import TestSupport
import Testing

/// Client certificates in the configuration (RFC 8705): `tls_client_auth`,
/// `self_signed_tls_client_auth`, a session's certificate shown to its token endpoint and its
/// routes, a route's own; the files checked at start, each refusal naming the field and the
/// file, never the contents.
@Suite struct ClientCertificateConfigurationTests {
    static func configuration(
        _ authorization: [String: Any], routes: [[String: Any]] = [["prefix": "/", "upstream": "https://api.example.com"]]
    ) throws -> GatewayConfiguration {
        try AuthorizationFixture.configuration(authorization, routes: routes)
    }

    static func refusal(_ authorization: [String: Any], routes: [[String: Any]]? = nil) -> String? {
        AuthorizationFixture.refusal(authorization, routes: routes)
    }

    static let pair = ["clientCertificateFile": "/c.pem", "clientCertificateKeyFile": "/c.key"]

    @Test(
        arguments: [
            (["clientAuthentication": "tls_client_auth"], "authorization.clientCertificateFile is required by tls_client_auth"),
            (
                ["clientAuthentication": "self_signed_tls_client_auth"],
                "authorization.clientCertificateFile is required by self_signed_tls_client_auth"
            ),
            (["clientCertificateFile": "/c.pem"], "authorization.clientCertificateKeyFile is required"),
            (["clientCertificateKeyFile": "/c.key"], "authorization.clientCertificateFile is required"),
            (
                pair.merging(["clientAuthentication": "tls_client_auth", "clientSecretFile": "/s"]) { $1 },
                "authorization.clientSecretFile is not used by tls_client_auth"
            ),
            (
                pair.merging(["tokenEndpoint": "http://127.0.0.1:9000/token"]) { $1 },
                "authorization.tokenEndpoint must be https with authorization.clientCertificateFile"
            ),
            (
                pair.merging(["revocationEndpoint": "http://127.0.0.1:9000/revoke"]) { $1 },
                "authorization.revocationEndpoint must be https"
            ),
        ] as [([String: String], String)])
    func missingOrConflictingFieldsAreRefusedByName(fields: [String: String], expected: String) throws {
        let message = try #require(Self.refusal(fields), "\(fields) was accepted")
        #expect(message.contains(expected), "\(message)")
    }

    @Test func aRoutesCertificateNeedsItsKeyAndAnHTTPSUpstream() throws {
        let halfPair = try #require(
            Self.refusal([:], routes: [["prefix": "/", "upstream": "https://api.example.com", "clientCertificateFile": "/c"]]))
        #expect(halfPair.contains("routes[0].clientCertificateKeyFile is required"), "\(halfPair)")
        let plain = try #require(
            Self.refusal(
                [:],
                routes: [["prefix": "/", "upstream": "http://127.0.0.1:9000"].merging(Self.pair) { $1 }]))
        #expect(plain.contains("routes[0].clientCertificateFile needs an https upstream"), "\(plain)")
    }

    @Test func everyMethodWithItsCertificateIsAccepted() {
        for method in ["tls_client_auth", "self_signed_tls_client_auth", "basic", "none"] {
            #expect(Self.refusal(Self.pair.merging(["clientAuthentication": method]) { $1 }) == nil, "\(method)")
        }
    }

    @Test func authenticatedRoutesShowTheirSessionsCertificateUnlessTheyNameTheirOwn() throws {
        let c = try Self.configuration(
            Self.pair.merging(["clientAuthentication": "tls_client_auth"]) { $1 },
            routes: [
                ["prefix": "/bound", "upstream": "https://api.example.com"],
                [
                    "prefix": "/own", "upstream": "https://api.example.com", "clientCertificateFile": "/r.pem",
                    "clientCertificateKeyFile": "/r.key",
                ],
                ["prefix": "/public", "upstream": "https://cdn.example.com", "requiresAuthentication": false],
                ["prefix": "/loop", "upstream": "http://127.0.0.1:9000"],
            ])
        let identities = Dictionary(uniqueKeysWithValues: c.proxyRoutes.map { ($0.prefix, $0.clientIdentity) })
        #expect(identities["/bound"] == TLSClientIdentity(certificateFile: "/c.pem", keyFile: "/c.key"))
        #expect(identities["/own"] == TLSClientIdentity(certificateFile: "/r.pem", keyFile: "/r.key"))
        #expect(identities["/public"] == .some(nil), "a public route shows only its own certificate")
        #expect(identities["/loop"] == .some(nil), "plain text shows none")
    }

    @Test func certificateFilesAreCheckedNamingTheFieldNeverTheContents() throws {
        let files = try CertificateFiles()
        defer { files.remove() }
        func check(_ pair: (certificate: String, key: String)) -> String? {
            do {
                try GatewayConfiguration.checkCertificateFiles(certificate: pair.certificate, key: pair.key, at: "authorization")
                return nil
            } catch {
                return String(describing: error)
            }
        }
        let good = try files.selfSigned("good")
        #expect(check(good) == nil)

        let expired = try #require(check(try files.selfSigned("old", notBefore: Date() - 7200, notAfter: Date() - 3600)))
        #expect(expired.contains("authorization.clientCertificateFile") && expired.contains("expired on"), "\(expired)")
        let early = try #require(check(try files.selfSigned("early", notBefore: Date() + 3600)))
        #expect(early.contains("is not valid before"), "\(early)")

        let other = try files.selfSigned("other")
        let mismatch = try #require(check((good.certificate, other.key)))
        #expect(mismatch.contains("authorization.clientCertificateKeyFile") && mismatch.contains("is not the key of"))

        let keyText = try String(contentsOfFile: good.key, encoding: .utf8)
        let open = try #require(check((good.certificate, files.write("open.key", keyText, mode: 0o640))))
        #expect(open.contains("readable by others") && open.contains("chmod 600"), "\(open)")
        #expect(!open.contains(keyText.split(separator: "\n")[1]), "no byte of the key")

        let notPEM = try #require(check((files.write("junk.pem", "s3cret-value", mode: 0o644), good.key)))
        #expect(notPEM.contains("holds no PEM certificate") && !notPEM.contains("s3cret-value"), "\(notPEM)")
        let notKey = try #require(check((good.certificate, files.write("junk.key", "s3cret-value"))))
        #expect(notKey.contains("holds no unencrypted PEM private key") && !notKey.contains("s3cret-value"), "\(notKey)")
        let missing = try #require(check((files.directory + "/none.pem", good.key)))
        #expect(missing.contains("authorization.clientCertificateFile") && missing.contains("no such file"), "\(missing)")
    }

    @Test func anRSAKeyUnder2048BitsIsTooWeak() throws {
        let files = try CertificateFiles()
        defer { files.remove() }
        let key = files.directory + "/weak.key"
        let certificate = files.directory + "/weak.pem"
        try run("openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024", "-out", key)
        try run("openssl", "req", "-x509", "-key", key, "-out", certificate, "-days", "1", "-subj", "/CN=weak")
        chmod(key, 0o600)
        do {
            try GatewayConfiguration.checkCertificateFiles(certificate: certificate, key: key, at: "routes[0]")
            Issue.record("a 1,024-bit key was accepted")
        } catch {
            #expect(error.field == "routes[0].clientCertificateFile")
            #expect(error.message.contains("RSA of at least 2,048 bits"), "\(error.message)")
        }
    }
}
