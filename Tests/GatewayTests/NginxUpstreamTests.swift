import Foundation
import Gateway
import Runtime
import TestSupport
import Testing

/// The proxy against real nginx upstreams, plain and TLS (HTTP/2, mTLS), on loopback.
@Suite(.serialized) struct NginxUpstreamTests {
    @Test func proxiesToNginxOverPlainHTTP() async throws {
        let nginx = try Nginx(
            serverBlock: #"location / { return 200 "nginx $request_uri host=$http_host xff=$http_x_forwarded_for"; }"#)
        defer { nginx.stop() }
        let proxy = try await Proxy(routes: [ProxyRoute(prefix: "/", upstream: UpstreamOrigin("http://127.0.0.1:\(nginx.port)")!)]
        )
        defer { proxy.stop() }
        let c = try RawClient(port: proxy.port)
        for i in 0..<20 {
            try c.send("GET /item/\(i)?q=\(i) HTTP/1.1\r\nHost: front\r\n\r\n")
            let r = try c.readResponse()
            #expect(r.status == 200)
            #expect(r.text == "nginx /item/\(i)?q=\(i) host=127.0.0.1:\(nginx.port) xff=127.0.0.1")
        }
    }

    @Test func proxiesToNginxOverTLSWithHTTP2AndATestCA() async throws {
        let pki = try TestCertificates()
        defer { pki.remove() }
        let nginx = try Nginx(
            serverBlock: #"location / { return 200 "tls $server_protocol $ssl_protocol"; }"#,
            tls: (pki.serverCert, pki.serverKey))
        defer { nginx.stop() }
        var cfg = UpstreamClientConfiguration()
        cfg.caFile = pki.caCert
        let proxy = try await Proxy(
            routes: [ProxyRoute(prefix: "/", upstream: UpstreamOrigin("https://127.0.0.1:\(nginx.port)")!)], client: cfg)
        defer { proxy.stop() }
        let c = try RawClient(port: proxy.port)
        try c.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        let r = try c.readResponse()
        #expect(r.status == 200)
        #expect(r.text.hasPrefix("tls HTTP/2.0 TLSv1."))
    }

    @Test func untrustedUpstreamCertificateIs502() async throws {
        let pki = try TestCertificates()
        defer { pki.remove() }
        let nginx = try Nginx(serverBlock: #"location / { return 200 "x"; }"#, tls: (pki.serverCert, pki.serverKey))
        defer { nginx.stop() }
        // No caFile: the system store does not know the test CA.
        let proxy = try await Proxy(routes: [
            ProxyRoute(prefix: "/", upstream: UpstreamOrigin("https://127.0.0.1:\(nginx.port)")!)
        ])
        defer { proxy.stop() }
        let c = try RawClient(port: proxy.port)
        try c.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        let r = try c.readResponse()
        #expect(r.status == 502)
        #expect(r.text.contains("upstream-tls-failed"))
    }

    @Test func mutualTLSPresentsTheClientCertificate() async throws {
        let pki = try TestCertificates()
        defer { pki.remove() }
        let nginx = try Nginx(
            serverBlock: """
                ssl_client_certificate \(pki.caCert);
                ssl_verify_client on;
                location / { return 200 "client=$ssl_client_s_dn"; }
                """,
            tls: (pki.serverCert, pki.serverKey))
        defer { nginx.stop() }
        var cfg = UpstreamClientConfiguration()
        cfg.caFile = pki.caCert
        cfg.clientCertificate = pki.clientCert
        cfg.clientKey = pki.clientKey
        let proxy = try await Proxy(
            routes: [ProxyRoute(prefix: "/", upstream: UpstreamOrigin("https://127.0.0.1:\(nginx.port)")!)], client: cfg)
        defer { proxy.stop() }
        let c = try RawClient(port: proxy.port)
        try c.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        let r = try c.readResponse()
        #expect(r.status == 200)
        #expect(r.text == "client=CN=client")

        var noCert = UpstreamClientConfiguration()
        noCert.caFile = pki.caCert
        let bare = try await Proxy(
            routes: [ProxyRoute(prefix: "/", upstream: UpstreamOrigin("https://127.0.0.1:\(nginx.port)")!)], client: noCert)
        defer { bare.stop() }
        let c2 = try RawClient(port: bare.port)
        try c2.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        #expect(try c2.readResponse().status == 400, "nginx refuses a client without a certificate")
    }

    @Test func eachRouteShowsItsOwnCertificateOverConnectionsNeverShared() async throws {
        let pki = try TestCertificates()
        defer { pki.remove() }
        let other = try pki.issueClient("other")
        let nginx = try Nginx(
            serverBlock: """
                ssl_client_certificate \(pki.caCert);
                ssl_verify_client optional;
                location / { return 200 "client=$ssl_client_s_dn"; }
                """,
            tls: (pki.serverCert, pki.serverKey))
        defer { nginx.stop() }
        var cfg = UpstreamClientConfiguration()
        cfg.caFile = pki.caCert
        let origin = UpstreamOrigin("https://127.0.0.1:\(nginx.port)")!
        let proxy = try await Proxy(
            routes: [
                ProxyRoute(
                    prefix: "/a", upstream: origin,
                    clientIdentity: TLSClientIdentity(certificateFile: pki.clientCert, keyFile: pki.clientKey)),
                ProxyRoute(
                    prefix: "/b", upstream: origin,
                    clientIdentity: TLSClientIdentity(certificateFile: other.cert, keyFile: other.key)),
                ProxyRoute(prefix: "/", upstream: origin),
            ], client: cfg, loops: 1)
        defer { proxy.stop() }
        // One client connection and one loop: every exchange could reuse the same upstream
        // connection (HTTP/2 would multiplex them) were identities not kept apart.
        let c = try RawClient(port: proxy.port)
        for round in 0..<5 {
            for (path, expected) in [("/a", "client=CN=client"), ("/b", "client=CN=other"), ("/none", "client=")] {
                try c.send("GET \(path) HTTP/1.1\r\nHost: a\r\n\r\n")
                let r = try c.readResponse()
                #expect(r.status == 200)
                #expect(r.text == expected, "round \(round), \(path)")
            }
        }
    }

    @Test func aCertificateRenewedOnDiskIsShownWithoutARestartOverNewConnections() async throws {
        let pki = try TestCertificates()
        defer { pki.remove() }
        let renewed = try pki.issueClient("renewed")
        let nginx = try Nginx(
            serverBlock: """
                ssl_client_certificate \(pki.caCert);
                ssl_verify_client on;
                keepalive_timeout 300s;
                location / { return 200 "client=$ssl_client_s_dn"; }
                """,
            tls: (pki.serverCert, pki.serverKey))
        defer { nginx.stop() }
        let certificate = pki.directory + "/shown.pem"
        let key = pki.directory + "/shown.key"
        func install(_ pair: (cert: String, key: String)) throws {
            // As a secret volume does: new files renamed over the old ones.
            for (from, to) in [(pair.cert, certificate), (pair.key, key)] {
                try? FileManager.default.removeItem(atPath: to + ".new")
                try FileManager.default.copyItem(atPath: from, toPath: to + ".new")
                #expect(rename(to + ".new", to) == 0)
            }
        }
        try install((pki.clientCert, pki.clientKey))
        var cfg = UpstreamClientConfiguration()
        cfg.caFile = pki.caCert
        let proxy = try await Proxy(
            routes: [
                ProxyRoute(
                    prefix: "/", upstream: UpstreamOrigin("https://127.0.0.1:\(nginx.port)")!,
                    clientIdentity: TLSClientIdentity(certificateFile: certificate, keyFile: key))
            ], client: cfg, loops: 1)
        defer { proxy.stop() }
        let c = try RawClient(port: proxy.port)
        func shown() throws -> String {
            try c.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
            return try c.readResponse().text
        }
        #expect(try shown() == "client=CN=client")
        try install(renewed)
        // The files are looked at again within a second; the open upstream connection, made
        // with the old certificate, must not carry the new one's requests.
        let shownRenewed = try await eventually(timeout: .seconds(20), interval: .milliseconds(100)) {
            try shown() == "client=CN=renewed"
        }
        #expect(shownRenewed, "the renewed certificate is shown")
        for _ in 0..<3 { #expect(try shown() == "client=CN=renewed", "never the old certificate again") }
    }
}
