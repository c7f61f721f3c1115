public import AuthCore
public import Foundation

extension GatewayConfiguration {
    /// The client authentication methods `authorization.clientAuthentication` names.
    static let clientAuthenticationMethods = [
        "basic", "post", "none", "private_key_jwt", "client_secret_jwt", "tls_client_auth", "self_signed_tls_client_auth",
    ]

    /// The rules between the client authentication fields of `a` (no file is read).
    static func validateClientAuthentication(_ a: Authorization, at field: String) throws(GatewayError) {
        let method = a.clientAuthentication ?? "basic"
        guard clientAuthenticationMethods.contains(method) else {
            throw .invalid(
                "\(field).clientAuthentication",
                "must be basic, post, none, private_key_jwt, client_secret_jwt, tls_client_auth or self_signed_tls_client_auth")
        }
        try validateCertificatePair(certificate: a.clientCertificateFile, key: a.clientCertificateKeyFile, at: field)
        if let algorithm = a.dpop?.algorithm, algorithm != "ES256" && algorithm != "PS256" {
            throw .invalid("\(field).dpop.algorithm", "must be ES256 or PS256")
        }
        if let dpop = a.dpop {
            switch (dpop.keyFile, dpop.generate ?? false) {
            case (nil, false): throw .invalid("\(field).dpop", "needs keyFile, or generate: true")
            case (.some, true): throw .conflict("\(field).dpop.generate", "cannot be true beside \(field).dpop.keyFile")
            default: break
            }
        }
        let keyFields = [
            ("clientKeyFile", a.clientKeyFile), ("clientKeyAlgorithm", a.clientKeyAlgorithm), ("clientKeyID", a.clientKeyID),
            ("clientAssertionFile", a.clientAssertionFile),
        ]
        if method != "private_key_jwt" {
            for (name, value) in keyFields where value != nil {
                throw .conflict("\(field).\(name)", "is used only with \(field).clientAuthentication private_key_jwt")
            }
        }
        if method != "private_key_jwt" && method != "client_secret_jwt" && a.clientAssertionAudience != nil {
            throw .conflict(
                "\(field).clientAssertionAudience", "is used only with clientAuthentication private_key_jwt or client_secret_jwt")
        }
        if let audience = a.clientAssertionAudience {
            guard audience == "tokenEndpoint" || audience == "issuer" else {
                throw .invalid("\(field).clientAssertionAudience", "must be tokenEndpoint or issuer")
            }
            if audience == "issuer" && a.issuer == nil {
                throw .required("\(field).issuer", "is required when \(field).clientAssertionAudience is issuer")
            }
        }
        switch method {
        case "private_key_jwt":
            guard a.clientID != nil else { throw .required("\(field).clientID", "is required by private_key_jwt") }
            switch (a.clientKeyFile, a.clientAssertionFile) {
            case (nil, nil):
                throw .required("\(field).clientKeyFile", "or \(field).clientAssertionFile is required by private_key_jwt")
            case (.some, .some):
                throw .conflict("\(field).clientAssertionFile", "and \(field).clientKeyFile exclude each other")
            case (nil, .some):
                if a.clientKeyAlgorithm != nil || a.clientKeyID != nil {
                    throw .conflict("\(field).clientKeyAlgorithm", "and clientKeyID describe a clientKeyFile, which is not set")
                }
            case (.some, nil):
                break
            }
            if let algorithm = a.clientKeyAlgorithm, ClientKey.Algorithm(rawValue: algorithm) == nil {
                throw .invalid("\(field).clientKeyAlgorithm", "must be ES256, PS256 or RS256")
            }
            if let kid = a.clientKeyID, kid.isEmpty || kid.unicodeScalars.contains(where: { $0.value < 0x20 }) {
                throw .invalid("\(field).clientKeyID", "must be a non-empty string without control characters")
            }
        case "tls_client_auth", "self_signed_tls_client_auth":
            guard a.clientID != nil else { throw .required("\(field).clientID", "is required by \(method)") }
            guard a.clientCertificateFile != nil else {
                throw .required("\(field).clientCertificateFile", "is required by \(method) (the client's credential)")
            }
            if a.clientSecretFile != nil {
                throw .conflict("\(field).clientSecretFile", "is not used by \(method): the certificate is the credential")
            }
        case "client_secret_jwt":
            guard a.clientID != nil else { throw .required("\(field).clientID", "is required by client_secret_jwt") }
            guard a.clientSecretFile != nil else {
                throw .required("\(field).clientSecretFile", "is required by client_secret_jwt (the HS256 key)")
            }
        default:
            break
        }
    }

    /// Reads the key, certificate or assertion files `a` names and checks they can be used
    /// now: a key file readable by its owner only, holding an EC P-256 or RSA (≥ 2,048 bits)
    /// key that can sign with the configured algorithm; a certificate valid now with its
    /// own key (``checkCertificateFiles(certificate:key:at:now:)``); an assertion file
    /// holding one compact JWT that has not expired. The error names the field and the
    /// file, never its contents.
    public static func checkClientCredentialFiles(_ a: Authorization, at field: String, now: Date = Date())
        throws(GatewayError)
    {
        if let path = a.clientKeyFile {
            try checkSigningKeyFile(path, field: "\(field).clientKeyFile", algorithmField: "\(field).clientKeyAlgorithm") {
                a.clientKeyAlgorithm.flatMap(ClientKey.Algorithm.init(rawValue:)) ?? $0.defaultAlgorithm
            }
        }
        if let dpop = a.dpop, let path = dpop.keyFile {
            let algorithm = dpop.algorithm.flatMap(ClientKey.Algorithm.init(rawValue:))
            try checkSigningKeyFile(path, field: "\(field).dpop.keyFile", algorithmField: "\(field).dpop.algorithm") { key in
                DPoPKey(path: path, algorithm: algorithm).algorithm(for: key)
            }
        }
        if let certificate = a.clientCertificateFile, let key = a.clientCertificateKeyFile {
            try checkCertificateFiles(certificate: certificate, key: key, at: field, now: now)
        }
        try checkLoginGrantFiles(a, at: field, now: now)
        if let path = a.clientAssertionFile {
            let name = "\(field).clientAssertionFile"
            let data = try SecretSources.readBytes(path, field: name)
            do { _ = try ClientAssertion.checkedAssertion(data, path: path, now: now) } catch {
                throw .invalid(name, error.description)
            }
        }
    }

    /// Checks the signing key in the file at `path`, which `field` names: readable by its
    /// owner only, an EC P-256 or RSA (≥ 2,048 bits) key that can sign with the algorithm
    /// `algorithm` picks for it (`algorithmField` names that setting).
    static func checkSigningKeyFile(
        _ path: String, field name: String, algorithmField: String, algorithm: (ClientKey) -> ClientKey.Algorithm
    ) throws(GatewayError) {
        let data = try SecretSources.readBytes(path, field: name)
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        if let mode = (attributes?[.posixPermissions] as? NSNumber)?.uint16Value, mode & 0o077 != 0 {
            throw .invalid(name, "\(path) is readable by others (mode \(String(mode & 0o777, radix: 8))); chmod 600 it")
        }
        let key: ClientKey
        do { key = try ClientKey(pem: String(decoding: data, as: UTF8.self)) } catch {
            throw .invalid(name, "\(path) \(error.message)")
        }
        let chosen = algorithm(key)
        guard key.supports(chosen) else {
            throw .conflict(algorithmField, "\(chosen.rawValue) cannot be signed with the key in \(path)")
        }
    }

    /// The client authentication of `a` for the token client, once `a`'s endpoints are
    /// resolved (discovery done).
    static func clientAuthentication(_ a: Authorization) -> (ClientAuthentication, ClientAssertion?) {
        let method = ClientAuthentication(rawValue: a.clientAuthentication ?? "basic") ?? .basic
        let audience = (a.clientAssertionAudience == "issuer" ? a.issuer : a.tokenEndpoint) ?? ""
        switch method {
        case .privateKeyJWT:
            let source: ClientAssertion.Source =
                if let path = a.clientAssertionFile {
                    .file(path: path)
                } else {
                    .privateKey(
                        path: a.clientKeyFile ?? "", algorithm: a.clientKeyAlgorithm.flatMap(ClientKey.Algorithm.init(rawValue:)),
                        keyID: a.clientKeyID)
                }
            return (method, ClientAssertion(source: source, audience: audience))
        case .clientSecretJWT:
            return (method, ClientAssertion(source: .secret, audience: audience))
        case .basic, .post, .none, .tlsClientAuth, .selfSignedTLSClientAuth:
            return (method, nil)
        }
    }
}
