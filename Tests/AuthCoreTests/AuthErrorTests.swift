import Foundation
import Testing

@testable import AuthCore

/// Every ``AuthError`` keeps its stable code, and none describes a secret, whatever text
/// came from outside.
@Suite struct AuthErrorTests {
    /// What secrets look like where they might reach an error: an access token (a JWT), a
    /// refresh token, a client secret, the admin token, a store key, `Authorization` values.
    static let secrets = [
        "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSIsImV4cCI6OTk5OTk5OTk5OX0.c2lnbmF0dXJlLTEyMzQ1Njc4OTA",
        "rt-5f0c2a9e8d7b6c1a4e3f", "cs_live_9a8b7c6d5e4f3a2b1c0d", "adm-3b9f1e7c5a2d8e4f6a0b",
        "q83vEjRWeJCrze8SNFZ4kKvN7xI0VniQq83vEjRWeJA=", "Y2xpZW50OnNlY3JldA==", "opaque", "2YotnFZFEjr1zCsicMWpAA",
    ]
    /// The secrets as they would be sent: alone, in a sentence, after an auth scheme.
    static let carriers = [
        "refresh_token=\(secrets[1])&client_secret=\(secrets[2])",
        "Authorization: Bearer \(secrets[6]) rejected; admin \(secrets[3])",
        "Authorization: Basic \(secrets[5])", "token \(secrets[0]) key \(secrets[4]) code \(secrets[7])",
    ]

    struct Outside: Error, CustomStringConvertible {
        var description: String
    }

    /// Every code, built with every piece of outside text an error can carry.
    static func errors(carrying text: String) -> [AuthError] {
        AuthError.Code.all.map { code in
            var error = AuthError(code, message: text, underlying: Outside(description: text))
            error.oauthError = OAuthErrorResponse(error: text, errorDescription: text, errorURI: text)
            error.logoutReason = .refreshRejected(code: text)
            return error
        } + [
            .transport(.connectionLost, text),
            .tokenEndpoint(
                .oauthError, .terminal, status: 400,
                oauthError: OAuthErrorResponse(error: "invalid_grant", errorDescription: text)),
            .tokenEndpoint(.network, .transient, underlying: AuthError.transport(.connectFailed, text)),
            .loginFailed(.tokenEndpoint(.serverError, .transient, message: text)),
            .refreshFailed(retryAfter: .seconds(1), cause: .tokenEndpoint(.rateLimited, .transient, message: text)),
            .backingOff(retryAfter: .seconds(1), lastError: .tokenEndpoint(.serverError, .transient, message: text)),
            .storage(Outside(description: text)), .sessionEnded(.refreshRejected(code: text)),
            .store(.corrupt, .tokens, account: .default, message: text), .io(5, operation: "write", store: .sessionState),
        ]
    }

    @Test(arguments: carriers)
    func noDescriptionShowsASecret(text: String) {
        for error in Self.errors(carrying: text) {
            let shown = "\(error)" + String(reflecting: error)
            for secret in Self.secrets {
                #expect(!shown.contains(secret), "\(error.code) shows \(secret)")
            }
            #expect(shown.hasPrefix(error.code.description), "the description starts with the code")
        }
    }

    @Test func storeKeyErrorsDoNotShowTheKey() throws {
        let wrongSize = Data(Self.secrets[4].utf8).prefix(20).base64EncodedString()
        let error = #expect(throws: AuthError.self) { try TokenStoreKey(base64: wrongSize) }
        #expect(error?.code == .keyUnavailable)
        #expect(!"\(String(describing: error))".contains(wrongSize))
        let notBase64 = #expect(throws: AuthError.self) { try TokenStoreKey(base64: "!" + Self.secrets[4]) }
        #expect(!"\(String(describing: notBase64))".contains(Self.secrets[4]))
    }

    @Test func plainWordsAreKept() {
        #expect(
            "Failed to connect to auth.example.com port 443".redactingCredentials
                == "Failed to connect to auth.example.com port 443")
        #expect(
            "key file /var/lib/authgate/token-store.key does not exist".redactingCredentials
                == "key file /var/lib/authgate/token-store.key does not exist")
        #expect("Bearer abc, then def".redactingCredentials == "Bearer <redacted>, then def")
    }

    /// The codes are an interface (events, logout reasons, metrics, logs): this table is
    /// what they are, and changing one is a breaking change.
    static let codeTable: [(AuthError.Code, String)] = [
        (.loginRequired, "auth.login_required"), (.sessionEnded, "auth.session_ended"),
        (.refreshFailed, "auth.refresh_failed"), (.backingOff, "auth.backing_off"),
        (.excessiveRefresh, "auth.excessive_refresh"), (.refreshNotPossible, "auth.refresh_not_possible"),
        (.refreshReentered, "auth.refresh_reentered"), (.loginFailed, "auth.login_failed"), (.storage, "auth.storage"),
        (.clientCertificateOutdated, "auth.client_certificate_outdated"),
        (.oauthError, "token_endpoint.oauth_error"), (.rateLimited, "token_endpoint.rate_limited"),
        (.serverError, "token_endpoint.server_error"), (.unexpectedStatus, "token_endpoint.unexpected_status"),
        (.malformedResponse, "token_endpoint.malformed_response"),
        (.invalidTokenSyntax, "token_endpoint.invalid_token_syntax"), (.network, "token_endpoint.network"),
        (.networkAfterSend, "token_endpoint.network_after_send"),
        (.invalidConfiguration, "token_endpoint.invalid_configuration"),
        (.clientCredentialsUnusable, "token_endpoint.client_credentials_unusable"),
        (.connectFailed, "transport.connect_failed"), (.connectionLost, "transport.connection_lost"),
        (.timeout, "transport.timeout"), (.other, "transport.other"),
        (.notFound, "store.not_found"), (.encodingError, "store.encoding_error"), (.corrupt, "store.corrupt"),
        (.wrongKey, "store.wrong_key"), (.keyUnavailable, "store.key_unavailable"), (.io, "store.io"),
        (.unavailable, "store.unavailable"),
        (.unusableKey, "input.unusable_key"), (.unusableAssertion, "input.unusable_assertion"),
        (.unusableDPoPKey, "input.unusable_dpop_key"), (.dpopKeyChanged, "input.dpop_key_changed"),
        (.dpopKeyUnreadable, "input.dpop_key_unreadable"), (.invalidDiscovery, "input.invalid_discovery"),
        (.invalidPolicy, "input.invalid_policy"),
    ]

    @Test func codesAreStable() {
        #expect(AuthError.Code.all.map(\.description) == Self.codeTable.map(\.1))
        for (code, text) in Self.codeTable {
            #expect(code.description == text)
            #expect(code.name == String(text.split(separator: ".")[1]))
        }
        #expect(Set(AuthError.Code.all).count == AuthError.Code.all.count, "no two codes alike")
    }
}
