public import Foundation

extension TokenSealer {
    /// What is sealed of a ``SharedDeviceLogin``: everything but its id and outcome, which
    /// stay readable beside it (they are no secret, and every process compares them).
    private struct DeviceLoginBox: Codable {
        var deviceCode: String
        var userCode: String
        var verificationURI: String
        var verificationURIComplete: String?
        var expiresAt: Date
        var intervalMilliseconds: Int64
        var subject: String?
    }

    private func deviceAssociatedData(_ id: String, for account: AccountID) -> [UInt8] {
        Array("authgate.device.v1:\(account.rawValue):\(id)".utf8)
    }

    /// The sealed bytes of `login` for `account`: its device code is a secret (whoever holds
    /// it receives the tokens once a person approves). The account and the login's id are
    /// authenticated data: sealed bytes copied to another account or login do not open.
    /// Throws ``AuthError/Code/encodingError``.
    public func seal(_ login: SharedDeviceLogin, for account: AccountID) throws -> [UInt8] {
        let box = DeviceLoginBox(
            deviceCode: login.deviceCode, userCode: login.status.userCode, verificationURI: login.status.verificationURI,
            verificationURIComplete: login.status.verificationURIComplete, expiresAt: login.status.expiresAt,
            intervalMilliseconds: Int64(login.status.interval / .milliseconds(1)), subject: login.subject)
        let plaintext: Data
        do {
            let encoder = JSONEncoder()
            encoder.dateEncodingStrategy = .millisecondsSince1970
            plaintext = try encoder.encode(box)
        } catch {
            throw AuthError.store(.encodingError, .tokens, account: account, message: "device login did not encode")
        }
        return try seal(plaintext, authenticating: deviceAssociatedData(login.id, for: account), for: account)
    }

    /// The device login `bytes` hold for `account` under `id`, with `outcome`. Throws
    /// ``AuthError/Code/corrupt`` or ``AuthError/Code/wrongKey``.
    public func openDeviceLogin(_ bytes: [UInt8], id: String, outcome: String?, for account: AccountID) throws
        -> SharedDeviceLogin
    {
        let plaintext = try open(bytes, authenticating: deviceAssociatedData(id, for: account), for: account)
        let box: DeviceLoginBox
        do {
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .millisecondsSince1970
            box = try decoder.decode(DeviceLoginBox.self, from: plaintext)
        } catch {
            throw AuthError.store(.corrupt, .tokens, account: account, message: "device login did not decode")
        }
        return SharedDeviceLogin(
            id: id, deviceCode: box.deviceCode,
            status: DeviceAuthorizationStatus(
                userCode: box.userCode, verificationURI: box.verificationURI,
                verificationURIComplete: box.verificationURIComplete, expiresAt: box.expiresAt,
                interval: .milliseconds(box.intervalMilliseconds)),
            subject: box.subject, outcome: outcome)
    }
}
