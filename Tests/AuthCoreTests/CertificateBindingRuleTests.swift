import AuthCore
import Foundation
import Testing

/// ``CertificateBindingRule``: the binding of a session's tokens only moves to a newer
/// certificate, and every process orders two certificates the same way.
struct CertificateBindingRuleTests {
    static let start = Date(timeIntervalSince1970: 1_790_000_000)
    static let older = CertificateBinding(thumbprint: "Zm9v-older", notBefore: start)
    static let newer = CertificateBinding(thumbprint: "YmFy-newer", notBefore: start.addingTimeInterval(60))

    @Test func theCertificateTheTokensAreBoundToServes() {
        #expect(CertificateBindingRule.decide(bound: Self.older, mine: Self.older) == .serve)
        #expect(CertificateBindingRule.decide(bound: Self.newer, mine: Self.newer) == .serve)
    }

    @Test func aNewerCertificateRebindsAndAnOlderOneIsRefused() {
        #expect(CertificateBindingRule.decide(bound: Self.older, mine: Self.newer) == .rebind)
        #expect(CertificateBindingRule.decide(bound: Self.newer, mine: Self.older) == .refuse)
    }

    @Test func tokensWithNoBindingRecordedAreRebound() {
        #expect(CertificateBindingRule.decide(bound: nil, mine: Self.older) == .rebind)
    }

    @Test func aProcessWithNoCertificateToCompareIsNotRefused() {
        #expect(CertificateBindingRule.decide(bound: Self.newer, mine: nil) == .rebind)
        #expect(CertificateBindingRule.decide(bound: nil, mine: nil) == .rebind)
    }

    @Test func certificatesStartingInTheSameSecondAreOrderedByThumbprintTheSameWayEverywhere() {
        let a = CertificateBinding(thumbprint: "AAAA", notBefore: Self.start)
        let b = CertificateBinding(thumbprint: "BBBB", notBefore: Self.start.addingTimeInterval(0.4))
        // Whichever process asks, exactly one of the two may re-bind from the other.
        #expect(CertificateBindingRule.decide(bound: a, mine: b) == .rebind)
        #expect(CertificateBindingRule.decide(bound: b, mine: a) == .refuse)
    }

    @Test func theThumbprintIsTheBase64URLSHA256OfTheDER() {
        // SHA-256 of the empty string, base64url without padding.
        let binding = CertificateBinding(der: [], notBefore: Self.start)
        #expect(binding.thumbprint == "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU")
    }

    @Test func theBindingIsSealedWithTheTokensAndOlderRecordsReadWithoutOne() throws {
        let sealer = TokenSealer(key: try TokenStoreKey(rawBytes: Array(repeating: 7, count: 32)))
        var record = TokenRecord(
            accessToken: "at-1", refreshToken: "rt-1", expiresAt: Self.start.addingTimeInterval(300), issuedAt: Self.start,
            generation: TokenGeneration(3), certificate: Self.newer)
        let opened = try sealer.open(try sealer.seal(record, for: .default), for: .default)
        #expect(opened.certificate == Self.newer)
        #expect(opened == record)
        record.certificate = nil
        let older = try sealer.open(try sealer.seal(record, for: .default), for: .default)
        #expect(older.certificate == nil, "a record stored before bindings were kept reads as unbound")
    }

    @Test func theDescriptionNamesOnlyPublicFactsOfTheCertificate() {
        let record = TokenRecord(
            accessToken: "secret-access", refreshToken: "secret-refresh", expiresAt: nil, issuedAt: Self.start,
            generation: TokenGeneration(1), certificate: Self.older)
        let shown = "\(record) \(Self.older)"
        #expect(!shown.contains("secret-"))
        #expect("\(Self.older)".contains(Self.older.thumbprint))
    }
}
