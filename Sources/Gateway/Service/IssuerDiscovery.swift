public import AuthCore
public import Logging

/// Fills in an ``GatewayConfiguration/Authorization`` that names an `issuer` from the
/// issuer's OpenID Connect discovery document, at start, before any session is restored.
///
/// Endpoints set explicitly in the configuration win over discovered ones. An unreachable
/// provider (no answer, 5xx) is asked again with backoff until `patience` runs out; a
/// document that answers but cannot be used (another issuer, no token endpoint, not JSON,
/// 4xx) fails at once. Either throws a ``GatewayError`` that names the configuration field:
/// ``GatewayError/Code/issuerUnusable`` or ``GatewayError/Code/issuerUnreachable``.
public struct IssuerDiscovery: Sendable {
    let transport: any HTTPTransport
    let logger: Logger
    let patience: Duration
    let allowInsecureHTTP: Bool

    /// Creates a resolver that asks through `transport`; discovered endpoints must be https
    /// unless on loopback or `allowInsecureHTTP`.
    public init(
        transport: any HTTPTransport, logger: Logger, patience: Duration = .seconds(30), allowInsecureHTTP: Bool = false
    ) {
        self.transport = transport
        self.logger = logger
        self.patience = patience
        self.allowInsecureHTTP = allowInsecureHTTP
    }

    /// `authorization` with its endpoints filled in; unchanged when it names no issuer.
    public func resolve(
        _ authorization: GatewayConfiguration.Authorization, field: String
    ) async throws -> GatewayConfiguration.Authorization {
        guard let issuer = authorization.issuer else { return authorization }
        let document = try await fetch(issuer: issuer, field: field)
        var resolved = authorization
        // A client that shows a certificate uses the provider's mutual-TLS aliases, where it
        // names them (RFC 8705 §5).
        let aliases =
            authorization.clientCertificateFile != nil ? document.mutualTLSAliases : OIDCDiscovery.MutualTLSAliases()
        if resolved.tokenEndpoint == nil { resolved.tokenEndpoint = aliases.tokenEndpoint ?? document.tokenEndpoint }
        if resolved.revocationEndpoint == nil {
            resolved.revocationEndpoint = aliases.revocationEndpoint ?? document.revocationEndpoint
        }
        let deviceDiscovered = resolved.deviceAuthorizationEndpoint == nil
        if deviceDiscovered {
            resolved.deviceAuthorizationEndpoint = aliases.deviceAuthorizationEndpoint ?? document.deviceAuthorizationEndpoint
        }
        do {
            try GatewayConfiguration.validate(resolved, at: field, insecure: allowInsecureHTTP)
        } catch {
            // A device endpoint nobody asked for that this client cannot use (plain HTTP
            // where a certificate must be shown) is left out: device logins are off.
            var withoutDevice = resolved
            withoutDevice.deviceAuthorizationEndpoint = nil
            guard deviceDiscovered, resolved.deviceAuthorizationEndpoint != nil, !(resolved.autoLogin?.isDevice ?? false),
                (try? GatewayConfiguration.validate(withoutDevice, at: field, insecure: allowInsecureHTTP)) != nil
            else {
                throw GatewayError.issuerUnusable("\(error) (as discovered from \(issuer))", underlying: error)
            }
            logger.notice(
                "the discovered device authorization endpoint is left out: device logins are off",
                metadata: ["auth.issuer": "\(issuer)", "reason": "\(error)"])
            resolved = withoutDevice
        }
        logger.info(
            "issuer discovered",
            metadata: [
                "auth.issuer": "\(issuer)", "auth.token_endpoint": "\(resolved.tokenEndpoint ?? "")",
                "auth.revocation_endpoint": "\(resolved.revocationEndpoint ?? "none")",
                "auth.device_authorization_endpoint": "\(resolved.deviceAuthorizationEndpoint ?? "none")",
            ])
        return resolved
    }

    private func fetch(issuer: String, field: String) async throws -> OIDCDiscovery {
        let url = OIDCDiscovery.documentURL(forIssuer: issuer)
        let deadline = ContinuousClock.now + patience
        var delay = Duration.milliseconds(250)
        while true {
            let problem: String
            do {
                let response = try await transport.send(
                    HTTPRequestValue(method: "GET", url: url, headers: [("Accept", "application/json")]))
                switch response.status {
                case 200:
                    do {
                        return try OIDCDiscovery.parse(response.body, expectedIssuer: issuer)
                    } catch {
                        throw GatewayError.issuerUnusable("\(field).issuer: \(error.message) (\(url))", underlying: error)
                    }
                case 500...599, 429:
                    problem = "HTTP \(response.status)"
                default:
                    throw GatewayError.issuerUnusable("\(field).issuer: \(url) answered HTTP \(response.status)")
                }
            } catch let failure as GatewayError {
                throw failure
            } catch {
                problem = "no answer"
            }
            guard ContinuousClock.now + delay < deadline else {
                throw GatewayError.issuerUnreachable(
                    "\(field).issuer: the discovery document at \(url) could not be fetched (\(problem))")
            }
            logger.notice(
                "issuer discovery failed; retrying",
                metadata: [
                    "auth.issuer": "\(issuer)", "error": "\(problem)",
                    "retry.ms": "\(delay.components.seconds * 1000 + delay.components.attoseconds / 1_000_000_000_000_000)",
                ])
            try await Task.sleep(for: delay)
            delay = min(delay * 2, .seconds(4))
        }
    }
}
