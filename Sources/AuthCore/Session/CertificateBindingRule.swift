/// Whether a process may refresh a session whose tokens are bound to one client certificate
/// (RFC 8705 §3) while it shows another: the binding only moves forward, to a newer
/// certificate.
///
/// The token endpoint accepts any certificate of the client's subject and binds the new
/// tokens to the one shown; the API then refuses them over connections showing another.
/// Two replicas sharing a session with different certificates would each refresh to re-bind
/// the tokens to their own, undoing the other's, for as long as both run. With this rule
/// only the replica with the newer certificate re-binds; the other stops refreshing until
/// its certificate is renewed too.
///
/// ```swift
/// switch CertificateBindingRule.decide(bound: record.certificate, mine: shown) {
/// case .serve, .rebind: refresh()
/// case .refuse: answer503()
/// }
/// ```
public enum CertificateBindingRule {
    /// What a process showing a certificate may do with tokens bound to one.
    public enum Decision: Sendable, Equatable {
        /// The tokens are bound to the certificate this process shows.
        case serve
        /// This process's certificate is newer (a renewal), or the tokens' binding is not
        /// known: a refresh re-binds them to it.
        case rebind
        /// The tokens are bound to a newer certificate than this process's: a refresh here
        /// would move the binding back, and away from the processes that show the newer one.
        case refuse
    }

    /// The decision for tokens bound to `bound` in a process showing `mine`.
    ///
    /// Newer means a later `notBefore`; two certificates that start in the same second are
    /// ordered by thumbprint, so that every process takes the same decision. With no
    /// certificate of its own to compare (none could be read), a process is not refused:
    /// its token request fails, or not, on its own.
    public static func decide(bound: CertificateBinding?, mine: CertificateBinding?) -> Decision {
        guard let mine, let bound else { return .rebind }
        if mine.thumbprint == bound.thumbprint { return .serve }
        return isNewer(mine, than: bound) ? .rebind : .refuse
    }

    /// Whether `a` is newer than `b`: it starts later, or in the same second with the
    /// greater thumbprint.
    static func isNewer(_ a: CertificateBinding, than b: CertificateBinding) -> Bool {
        let sa = a.notBefore.timeIntervalSince1970.rounded(.down)
        let sb = b.notBefore.timeIntervalSince1970.rounded(.down)
        if sa != sb { return sa > sb }
        return a.thumbprint > b.thumbprint
    }
}
