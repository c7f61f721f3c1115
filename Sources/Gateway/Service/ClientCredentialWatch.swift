import Foundation
import Locking
import Logging

/// Whether the sessions' client key, certificate and assertion files, and the routes' client
/// certificates, can be used now, checked as at start
/// (``GatewayConfiguration/checkClientCredentialFiles(_:at:now:)``) each time `/readyz` asks.
/// A file that turns unusable is logged once, naming the field and the file, never its
/// contents; its recovery is logged too.
final class ClientCredentialWatch: Sendable {
    private let checks: [(field: String, check: @Sendable () throws(GatewayError) -> Void)]
    private let logger: Logger
    private let failing = Locked<Set<String>>([])

    init(_ c: GatewayConfiguration, logger: Logger) {
        var list: [(String, GatewayConfiguration.Authorization)] = [("authorization", c.authorization)]
        for (i, s) in (c.sessions ?? []).enumerated() { list.append(("sessions[\(i)].authorization", s.authorization)) }
        var checks: [(field: String, check: @Sendable () throws(GatewayError) -> Void)] = []
        for (field, a) in list
        where a.clientKeyFile != nil || a.clientAssertionFile != nil || a.clientCertificateFile != nil || a.dpop != nil
            || a.jwtBearer != nil || a.tokenExchange != nil
        {
            checks.append(
                (field, { () throws(GatewayError) in try GatewayConfiguration.checkClientCredentialFiles(a, at: field) }))
        }
        for (i, r) in c.routes.enumerated() {
            guard let certificate = r.clientCertificateFile, let key = r.clientCertificateKeyFile else { continue }
            checks.append(
                (
                    "routes[\(i)]",
                    { () throws(GatewayError) in
                        try GatewayConfiguration.checkCertificateFiles(certificate: certificate, key: key, at: "routes[\(i)]")
                    }
                ))
        }
        self.checks = checks
        self.logger = logger
    }

    /// Whether every file can be used now.
    func usable() -> Bool {
        var ok = true
        for (field, check) in checks {
            do throws(GatewayError) {
                try check()
                if failing.withLock({ $0.remove(field) }) != nil {
                    logger.info("client credentials usable again", metadata: ["field": "\(field)"])
                }
            } catch {
                ok = false
                if failing.withLock({ $0.insert(field).inserted }) {
                    logger.error("client credentials unusable", metadata: ["field": "\(field)", "reason": "\(error)"])
                }
            }
        }
        return ok
    }
}
