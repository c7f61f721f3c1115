import Testing

@testable import Gateway

/// A password in a configured URL is found however it is written, and hidden.
struct URLCredentialsTests {
    @Test(arguments: [
        ("postgres://u:pass@db/x", "postgres://u:<redacted>@db/x"),
        ("postgres://u:pa#ss@db/x", "postgres://u:<redacted>@db/x"),
        ("postgres://u:pa/ss@db/x", "postgres://u:<redacted>@db/x"),
        ("postgres://u:pa?ss@db/x", "postgres://u:<redacted>@db/x"),
        ("postgres://u:pa@ss@db:5432/x", "postgres://u:<redacted>@db:5432/x"),
        ("postgres://u:@db/x", "postgres://u:<redacted>@db/x"),
        ("https://client:s3cret@id.example/token", "https://client:<redacted>@id.example/token"),
    ])
    func aPasswordIsFoundAndRedacted(url: String, shown: String) {
        #expect(URLCredentials.hasPassword(url))
        #expect(URLCredentials.redacted(url) == shown)
    }

    @Test(arguments: [
        "postgres://u@db/x", "postgres://db:5432/x", "https://id.example/token?a=b:c", "not a url", "http://[::1]:8080/x",
    ])
    func aURLWithoutAPasswordIsLeftAlone(url: String) {
        #expect(!URLCredentials.hasPassword(url))
        #expect(URLCredentials.redacted(url) == url)
    }
}
