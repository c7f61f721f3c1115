internal import Crypto

// What the two file stores share: one file per account, named by a hash of the account,
// and errors that name the account and the store.
extension AtomicFile {
    /// `directory/<prefix><first 12 bytes of SHA-256(account) in hex><suffix>`: a name that
    /// is safe whatever characters the account has, and the same on every run.
    static func path(
        for account: AccountID, in directory: String, prefix: String, suffix: String
    ) -> String {
        let digest = SHA256.hash(data: Array(account.rawValue.utf8))
        let name = digest.prefix(12).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
        return "\(directory)/\(prefix)\(name)\(suffix)"
    }

    /// Runs `body` with this file, naming `account` and `store` in the ``AuthError`` it throws.
    func attributing<T>(
        _ account: AccountID?, in store: AuthError.Store, _ body: (AtomicFile) throws -> T
    ) throws -> T {
        do {
            return try body(self)
        } catch let error as AuthError {
            throw error.about(account, in: store)
        }
    }
}
