import AuthCore
import Foundation
import Testing

/// A device login as the processes sharing a session keep it: sealed with its device code,
/// adopted only while a person may still approve it, its outcome read back as an end.
struct SharedDeviceLoginValueTests {
    let sealer = TokenSealer(key: try! TokenStoreKey(rawBytes: Array(repeating: 9, count: 32)))
    let login = SharedDeviceLogin(
        id: "5f3a", deviceCode: "dc_secret_device_code",
        status: DeviceAuthorizationStatus(
            userCode: "BCDF-GHJK", verificationURI: "https://auth.example.test/device",
            verificationURIComplete: "https://auth.example.test/device?user_code=BCDF-GHJK",
            expiresAt: Date(timeIntervalSince1970: 1_800_000_000.25), interval: .seconds(5)),
        subject: "alice")

    @Test func theSealedBytesHoldNoCodeAndOpenToTheSameLogin() throws {
        let bytes = try sealer.seal(login, for: .default)
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(!text.contains("dc_secret_device_code") && !text.contains("BCDF-GHJK"))
        #expect(try sealer.openDeviceLogin(bytes, id: "5f3a", outcome: nil, for: .default) == login)
    }

    @Test func sealedBytesDoNotOpenForAnotherLoginOrAccount() throws {
        let bytes = try sealer.seal(login, for: .default)
        #expect(throws: AuthError.self) { try sealer.openDeviceLogin(bytes, id: "other", outcome: nil, for: .default) }
        #expect(throws: AuthError.self) { try sealer.openDeviceLogin(bytes, id: "5f3a", outcome: nil, for: AccountID("b")) }
    }

    @Test func theDescriptionNamesNoDeviceCode() {
        #expect(!"\(login)".contains("dc_secret"))
    }

    @Test func onlyALoginThatHasNotEndedNorExpiredIsAdopted() {
        let before = login.status.expiresAt.addingTimeInterval(-1)
        #expect(login.isWaiting(at: before))
        #expect(!login.isWaiting(at: login.status.expiresAt))
        var ended = login
        ended.outcome = "access_denied"
        #expect(!ended.isWaiting(at: before))
    }

    @Test func everyEndReadsBackFromItsCode() {
        for end in [DeviceLoginEnd.expired, .denied, .rejected(code: "invalid_grant"), .cancelled, .replaced, .storeFailed] {
            #expect(DeviceLoginEnd(code: end.code) == end)
        }
    }
}
