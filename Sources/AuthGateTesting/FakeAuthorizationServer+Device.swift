internal import AuthCore
internal import Foundation

extension FakeAuthorizationServer {
    /// One device authorization (RFC 8628) as the server keeps it.
    struct DeviceGrant {
        let userCode: String
        let clientID: String?
        let scope: String?
        let deadline: MonotonicInstant
        var interval: Duration
        var lastPoll: MonotonicInstant?
        var decision: Decision = .pending

        enum Decision: Equatable {
            case pending
            case approved(subject: String)
            case denied
            case used
        }
    }

    /// The characters of a user code: consonants only, upper case, so that no word is
    /// spelt and nothing is mistaken for another character (RFC 8628 §6.1).
    static let userCodeAlphabet = Array("BCDFGHJKLMNPQRSTVWXZ")

    /// The device authorization endpoint (RFC 8628 §3.1, §3.2): the client authenticates as
    /// at the token endpoint; the answer names a device code, a user code (`XXXX-XXXX`),
    /// the verification URI (`/device` beside this endpoint) with and without the code,
    /// `expires_in` and `interval`.
    func deviceAuthorization(_ request: HTTPRequestValue) -> HTTPResponseValue {
        guard request.method == "POST" else { return HTTPResponseValue(status: 405, headers: [("Allow", "POST")]) }
        let fields = formFields(request)
        let clientID: String?
        switch authenticateClient(request, fields) {
        case .success(let id): clientID = id
        case .failure(let box): return box.response
        }
        guard clientID != nil || configuration.clients.isEmpty else {
            return oauthError(401, "invalid_client", "client authentication required")
        }
        counters.deviceAuthorizations += 1
        let deviceCode = "dc_" + randomHex(16)
        issued.deviceCodes.append(deviceCode)
        var letters: [Character] = []
        for _ in 0..<8 { letters.append(Self.userCodeAlphabet.randomElement(using: &random)!) }
        let userCode = String(letters[0..<4]) + "-" + String(letters[4..<8])
        devices[deviceCode] = DeviceGrant(
            userCode: userCode, clientID: clientID, scope: fields["scope"],
            deadline: clock.now + configuration.deviceCodeLifetime,
            interval: configuration.deviceInterval)
        let base = String(endpoint(of: request).dropLast("/device_authorization".count))
        let verification = base + "/device"
        let object: [String: Any] = [
            "device_code": deviceCode, "user_code": userCode, "verification_uri": verification,
            "verification_uri_complete": verification + "?user_code=" + userCode,
            "expires_in": Int(configuration.deviceCodeLifetime.components.seconds),
            "interval": Int((configuration.deviceIntervalAdvertised ?? configuration.deviceInterval).components.seconds),
        ]
        return HTTPResponseValue(
            status: 200, headers: [("Content-Type", "application/json"), ("Cache-Control", "no-store")],
            body: Self.json(object))
    }

    /// The device access token request (RFC 8628 §3.4, §3.5): the code must be one this
    /// server issued to this client; before its expiry it is `authorization_pending` until
    /// someone approves (`access_denied` once declined), and a poll sooner than the interval
    /// after the previous one is `slow_down`, which adds 5 s to the interval. After expiry
    /// it is `expired_token`; an approved code gives tokens once.
    func deviceCodeGrant(_ fields: [String: String], clientID: String?, jkt: String?) -> HTTPResponseValue {
        counters.devicePolls += 1
        guard let code = fields["device_code"], var grant = devices[code], grant.clientID == clientID else {
            return oauthError(400, "invalid_grant", "unknown device_code")
        }
        let now = clock.now
        defer { devices[code] = grant }
        let tooSoon = grant.lastPoll.map { now < $0 + grant.interval } ?? false
        grant.lastPoll = now
        if grant.decision == .used { return oauthError(400, "invalid_grant", "device_code already used") }
        if now >= grant.deadline { return oauthError(400, "expired_token", "the device code has expired") }
        switch grant.decision {
        case .denied:
            return oauthError(400, "access_denied", "the user declined")
        case .approved(let subject):
            grant.decision = .used
            counters.grants[Grant.deviceCodeType, default: 0] += 1
            return tokenJSON(newFamily(subject: subject, clientID: clientID, scope: grant.scope, jkt: jkt))
        case .pending, .used:
            if tooSoon {
                grant.interval += .seconds(5)
                counters.slowDowns += 1
                return oauthError(400, "slow_down", "polling too fast")
            }
            return oauthError(400, "authorization_pending", "waiting for the user")
        }
    }

    /// The verification page, as a form post: `user_code`, `decision` (`approve` or `deny`)
    /// and `subject` (the user who approves; default `alice`). 200 when the code was waiting,
    /// 404 otherwise.
    func deviceVerification(_ request: HTTPRequestValue) -> HTTPResponseValue {
        let fields = formFields(request)
        guard let userCode = fields["user_code"] else { return oauthError(400, "invalid_request", "user_code missing") }
        let approve = fields["decision"] != "deny"
        let done =
            approve ? approveDevice(userCode: userCode, subject: fields["subject"] ?? "alice") : denyDevice(userCode: userCode)
        return done ? HTTPResponseValue(status: 200) : oauthError(404, "invalid_request", "no device login waits for this code")
    }

    /// Approves the device login waiting with `userCode`, as `subject` would at the
    /// verification URI; false when no login waits with that code (unknown, expired,
    /// decided).
    @discardableResult
    public func approveDevice(userCode: String, subject: String = "alice") -> Bool {
        decide(userCode, .approved(subject: subject))
    }

    /// Declines the device login waiting with `userCode`; false when none waits with it.
    @discardableResult
    public func denyDevice(userCode: String) -> Bool {
        decide(userCode, .denied)
    }

    /// The user codes of device logins waiting for a decision and not expired.
    public var pendingUserCodes: [String] {
        let now = clock.now
        return devices.values.filter { $0.decision == .pending && now < $0.deadline }.map(\.userCode).sorted()
    }

    private func decide(_ userCode: String, _ decision: DeviceGrant.Decision) -> Bool {
        let now = clock.now
        guard let (code, grant) = devices.first(where: { $0.value.userCode == userCode.uppercased() }),
            grant.decision == .pending, now < grant.deadline
        else { return false }
        devices[code]?.decision = decision
        return true
    }
}
