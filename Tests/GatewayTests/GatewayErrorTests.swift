import AuthCore
import Gateway
import Testing

/// The Gateway module's run-time error: stable, distinct codes; the context callers read
/// (the admin API's status and body, the retry delay, the refused configuration) kept as
/// values; and messages that never quote a secret.
@Suite struct GatewayErrorTests {
    /// A secret that must never reach a message.
    static let secret = "eyJhbGciOiJSUzI1NiJ9.c2VjcmV0.c2lnbmF0dXJl"

    /// An error whose description holds ``secret``, as a store's or a transport's might.
    struct Leaky: Error, CustomStringConvertible {
        var description: String { "Authorization: Bearer \(GatewayErrorTests.secret)" }
    }

    /// One error of every code, built by its factory, with ``Leaky`` underlying where the
    /// factory takes an error.
    static let everyCode: [GatewayError] = [
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
                "upstream-busy", "upstream-shed", "slot-cancelled", "no-token", "replay-refresh-failed", "reload-refused",
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
        let invalid = ConfigurationError.invalid("routes[1].upstream", "must be http or https")
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
