public import Foundation

extension OAuth2Client {
    /// Builds the device authorization request (RFC 8628 §3.1; pure, no I/O): `scope` and
    /// the client's authentication, exactly as a token request authenticates it (Basic, the
    /// body, an assertion, a certificate).
    public func makeDeviceAuthorizationRequest(scope: String?, assertion: String? = nil) throws -> HTTPRequestValue {
        guard let endpoint = configuration.deviceAuthorizationEndpoint else {
            throw AuthError.tokenEndpoint(
                .invalidConfiguration, .terminal, message: "no device authorization endpoint is configured")
        }
        var headers: [(name: String, value: String)] = [("Accept", "application/json")]
        var fields: [(String, String)] = []
        if let scope { fields.append(("scope", scope)) }
        try authenticate(&headers, &fields, assertion: assertion)
        // §3.1: a public client identifies itself with client_id in the body.
        if configuration.authentication == .basic, configuration.clientID == nil {
            throw AuthError.tokenEndpoint(
                .invalidConfiguration, .terminal, message: "a device authorization request needs a client id")
        }
        headers.append(("Content-Type", "application/x-www-form-urlencoded"))
        return HTTPRequestValue(
            method: "POST", url: endpoint, headers: headers, body: Array(FormURLEncoding.encode(fields).utf8),
            clientCertificate: configuration.certificate)
    }

    /// Reads a device authorization answer (RFC 8628 §3.2; pure). A refusal is an
    /// ``AuthError`` as a token endpoint's would be (§3.2 uses RFC 6749 §5.2 errors); a
    /// success without `device_code`, `user_code`, `verification_uri` or a positive
    /// `expires_in` is ``AuthError/Code/malformedResponse``, naming the member, never its
    /// value. `verification_url`, which some servers send instead, is taken too.
    public func parseDeviceAuthorization(_ response: HTTPResponseValue, now: Date) throws -> DeviceAuthorization {
        guard (200..<300).contains(response.status) else {
            // The same rules as a token endpoint's errors; the answer is not a token response,
            // so parse only ever throws here.
            _ = try parse(response, for: .clientCredentials(), now: now)
            throw AuthError.tokenEndpoint(.unexpectedStatus, .transient, status: response.status)
        }
        guard let object = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any] else {
            throw AuthError.tokenEndpoint(
                .malformedResponse, .transient, status: response.status,
                message: "the device authorization answer is not a JSON object")
        }
        func text(_ name: String) throws -> String {
            guard let value = object[name] as? String, !value.isEmpty else {
                throw AuthError.tokenEndpoint(
                    .malformedResponse, .transient, status: response.status,
                    message: "the device authorization answer has no \(name) (RFC 8628 §3.2)")
            }
            return value
        }
        let deviceCode = try text("device_code")
        let userCode = try text("user_code")
        let uri =
            try (object["verification_uri"] == nil && object["verification_url"] != nil)
            ? text("verification_url") : text("verification_uri")
        guard let seconds = (object["expires_in"] as? NSNumber)?.doubleValue, seconds > 0, seconds.isFinite else {
            throw AuthError.tokenEndpoint(
                .malformedResponse, .transient, status: response.status,
                message: "the device authorization answer has no positive expires_in (RFC 8628 §3.2)")
        }
        var interval = DeviceAuthorization.defaultInterval
        if let value = (object["interval"] as? NSNumber)?.doubleValue, value.isFinite, value >= 0 {
            interval = .milliseconds(Int64(min(value, 3600) * 1000))
        }
        // The user code and URIs are shown to people and written into logs and documents:
        // visible ASCII only, as every server issues them.
        for (name, value) in [("user_code", userCode), ("verification_uri", uri)] where !Self.isShowable(value) {
            throw AuthError.tokenEndpoint(
                .malformedResponse, .transient, status: response.status,
                message: "the device authorization answer's \(name) is not visible ASCII")
        }
        let complete = (object["verification_uri_complete"] as? String).flatMap { Self.isShowable($0) ? $0 : nil }
        guard TokenSyntax.isRefreshToken(deviceCode) else {
            throw AuthError.tokenEndpoint(
                .invalidTokenSyntax, .transient, status: response.status,
                message: "the device_code must be visible ASCII; the answer was not used", field: "device_code")
        }
        return DeviceAuthorization(
            deviceCode: deviceCode, userCode: userCode, verificationURI: uri, verificationURIComplete: complete,
            expiresIn: .milliseconds(Int64(min(seconds, 86_400) * 1000)), interval: interval)
    }

    /// Asks the device authorization endpoint for a device code and a user code (RFC 8628
    /// §3.1), with the client's authentication. No DPoP proof goes there (RFC 9449 defines
    /// none for it): the tokens are bound by the proof of the token request that polls.
    public func requestDeviceAuthorization(scope: String?) async throws -> DeviceAuthorization {
        let request = try makeDeviceAuthorizationRequest(scope: scope, assertion: try currentAssertion())
        let response = try await send(request)
        return try parseDeviceAuthorization(response, now: clock.wallNow)
    }

    /// Whether `text` is non-empty visible ASCII (and spaces), fit to show and log.
    static func isShowable(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 2048 && text.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F }
    }
}
