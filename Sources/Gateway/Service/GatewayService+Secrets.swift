public import AuthCore

extension GatewayService {
    /// Secrets resolved by `main` (from files or the environment).
    public struct Secrets: Sendable {
        /// The default session's client secret.
        public var clientSecret: String?
        /// The admin API's bearer token (`nil`: the admin API takes no token).
        public var adminToken: String?
        /// The key that seals the tokens at rest.
        public var storeKey: TokenStoreKey
        /// The client secrets of the other sessions, by session name.
        public var sessionClientSecrets: [String: String]
        /// Creates the secrets.
        public init(
            clientSecret: String?, adminToken: String?, storeKey: TokenStoreKey, sessionClientSecrets: [String: String] = [:]
        ) {
            self.clientSecret = clientSecret
            self.adminToken = adminToken
            self.storeKey = storeKey
            self.sessionClientSecrets = sessionClientSecrets
        }

        /// The client secret of the session called `name`.
        func clientSecret(for name: String) -> String? {
            name == GatewayConfiguration.defaultSession ? clientSecret : sessionClientSecrets[name]
        }
    }
}
