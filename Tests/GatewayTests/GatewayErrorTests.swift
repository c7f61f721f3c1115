import AuthCore
import Gateway
import Testing

/// The Gateway module's one error: stable, distinct codes; the context callers read (the
/// field at fault, the admin API's status and body, the retry delay, the refused
/// configuration) kept as values; and messages that never quote a secret.
@Suite struct GatewayErrorTests {
    /// A secret that must never reach a message.
    static let secret = "eyJhbGciOiJSUzI1NiJ9.c2VjcmV0.c2lnbmF0dXJl"

    /// An error whose description holds ``secret``, as a store's or a transport's might.
    struct Leaky: Error, CustomStringConvertible {
        var description: String { "Authorization: Bearer \(GatewayErrorTests.secret)" }
    }

    /// A file error, as reading a configuration meets one.
    struct DiskError: Error, CustomStringConvertible {
        var description: String { "the disk is on fire" }
    }

    /// One error of every code, built by its factory, with ``Leaky`` underlying where the
    /// factory takes an error and does not describe the configuration error as itself
    /// (``GatewayError/configurationFailed(_:)`` does: it is given what reading a file threw).
    static let everyCode: [GatewayError] = [
        .invalidJSON("unexpected end of file"), .missing("stateDirectory"), .unknownField("refreshLaed"),
        .invalid("maxReplays", "must be 0…10"), .conflict("routes[1].prefix", "repeats routes[0].prefix"),
        .unreadable("authorization.clientSecretFile", path: "/run/secrets/client", underlying: Leaky()),
        .at("stateDirectory", .unusablePath, "is not a directory"),
        .at("keyFile", .unsafePermissions, "lets its group or others read it"),
        .at("store.url", .secretExposed, "must not hold a password: put it in store.passwordFile"),
        .unsupported("proxy.unixSocket", "is not supported for the proxy"),
        .at("store", .storeUnavailable, "the database refused the password", underlying: Leaky()),
        .configurationFailed(DiskError()),
        .upstreamBusy(retryAfter: 2), .upstreamShed(retryAfter: 3), .slotCancelled,
        .noToken(Leaky()), .replayRefreshFailed(Leaky()),
        .reloadRefused(.invalid("maxReplays", "must be 0…10")), .reloadUnavailable,
        .issuerUnusable("authorization.issuer: https://id.example/.well-known/openid-configuration answered HTTP 404"),
        .issuerUnreachable("authorization.issuer: the discovery document at https://id.example could not be fetched"),
        .adminRefused(status: 401, body: #"{"type":"https://authgate.dev/problems/unauthorized"}"#),
        .adminUnreachable("nothing answers at the admin address"),
    ]

    @Test func everyCodeKeepsItsKebabCaseNameAndNoTwoShareOne() {
        let names = GatewayError.Code.all.map(\.description)
        #expect(
            names == [
                "invalid-json", "missing-field", "unknown-field", "invalid-value", "conflict", "unreadable-file",
                "unusable-path", "unsafe-permissions", "secret-exposed", "unsupported", "store-unavailable",
                "configuration-failed", "upstream-busy", "upstream-shed", "slot-cancelled", "no-token", "replay-refresh-failed",
                "reload-refused",
                "reload-unavailable", "issuer-unusable", "issuer-unreachable", "admin-refused", "admin-unreachable",
            ])
        #expect(Set(names).count == names.count)
        #expect(Set(GatewayError.Code.all).count == names.count)
        for name in names {
            #expect(name.allSatisfy { $0.isLowercase || $0 == "-" } && !name.hasPrefix("-") && !name.hasSuffix("-"), "\(name)")
        }
        #expect(Self.everyCode.map(\.code) == GatewayError.Code.all, "every factory makes its own code")
    }

    @Test func noMessageQuotesTheUnderlyingErrorsSecret() {
        for error in Self.everyCode {
            #expect(!error.description.contains(Self.secret), "\(error.code)")
            #expect(!error.description.contains("Bearer"), "\(error.code)")
            #expect(!error.message.isEmpty, "\(error.code)")
        }
        #expect(GatewayError.noToken(Leaky()).underlying is Leaky, "the cause is kept for callers that look at it")
    }

    @Test func theDescriptionIsTheSentenceTheCommandsPrint() {
        let refused = GatewayError.adminRefused(status: 403, body: "{}")
        #expect(refused.description == "the admin API answered 403: {}")
        #expect(refused.status == 403)
        #expect(refused.body == "{}")
        #expect(
            GatewayError.adminUnreachable("the connection was reset").description
                == "the admin API cannot be reached: the connection was reset")
        #expect(
            GatewayError.reloadUnavailable.description
                == "this gateway was not started from a configuration file or environment; nothing to reload from")
        #expect(GatewayError.issuerUnreachable("authorization.issuer: x").description == "authorization.issuer: x")
        #expect(GatewayError.upstreamBusy(retryAfter: 4).retryAfter == 4)
        #expect(GatewayError.upstreamShed(retryAfter: 5).retryAfter == 5)
    }

    @Test func aRefusedReloadSaysWhatTheConfigurationErrorSaysAndKeepsItsField() {
        let invalid = GatewayError.invalid("routes[1].upstream", "must be http or https")
        let refused = GatewayError.reloadRefused(invalid.attributed(to: .environment("AUTHGATE_ROUTES")))
        #expect(refused.code == .reloadRefused)
        #expect(refused.description == "routes[1].upstream must be http or https (set by env AUTHGATE_ROUTES)")
        #expect(refused.configurationError?.field == "routes[1].upstream")
        #expect(GatewayError.reloadUnavailable.configurationError == nil)
    }

    @Test func equalityLeavesOutTheUnderlyingError() {
        #expect(GatewayError.noToken(Leaky()) == GatewayError.noToken(CancellationError()))
        #expect(GatewayError.upstreamBusy(retryAfter: 1) != GatewayError.upstreamBusy(retryAfter: 2))
        #expect(GatewayError.upstreamBusy(retryAfter: 1) != GatewayError.upstreamShed(retryAfter: 1))
        #expect(GatewayError.adminRefused(status: 401, body: "a") != GatewayError.adminRefused(status: 401, body: "b"))
    }
}
