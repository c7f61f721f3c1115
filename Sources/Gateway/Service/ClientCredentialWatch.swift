import Foundation
import Locking
import Logging

/// Whether the sessions' client key and assertion files can be used now, checked as at start
/// (``GatewayConfiguration/checkClientCredentialFiles(_:at:now:)``) each time `/readyz` asks.
/// A file that turns unusable is logged once, naming the field and the file, never its
/// contents; its recovery is logged too.
final class ClientCredentialWatch: Sendable {
    private let authorizations: [(field: String, authorization: GatewayConfiguration.Authorization)]
    private let logger: Logger
    private let failing = Locked<Set<String>>([])

    init(_ c: GatewayConfiguration, logger: Logger) {
        var list: [(String, GatewayConfiguration.Authorization)] = [("authorization", c.authorization)]
        for (i, s) in (c.sessions ?? []).enumerated() { list.append(("sessions[\(i)].authorization", s.authorization)) }
        authorizations = list.filter { $0.1.clientKeyFile != nil || $0.1.clientAssertionFile != nil }
        self.logger = logger
    }

    /// Whether every session's files can be used now.
    func usable() -> Bool {
        var ok = true
        for (field, authorization) in authorizations {
            do throws(ConfigurationError) {
                try GatewayConfiguration.checkClientCredentialFiles(authorization, at: field)
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
