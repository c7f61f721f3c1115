import AuthCore
import Testing

@Suite struct ParserRobustnessTests {
    /// A deterministic generator, so failures reproduce.
    struct SplitMix: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    @Test func parsersNeverTrapOnArbitraryInput() {
        var generator = SplitMix(state: 42)
        let alphabet = Array(#"Bearer realm="x", error=invalid_token,\ "=,;%+.-_~/ab09é"#)
        for _ in 0..<20_000 {
            let length = Int.random(in: 0..<40, using: &generator)
            let text = String((0..<length).map { _ in alphabet.randomElement(using: &generator)! })
            for challenge in WWWAuthenticateChallenge.parse(text) {
                #expect(!challenge.scheme.isEmpty)
            }
            _ = FormURLEncoding.decodePairs(text)
            _ = JWTClaims(decodingPayloadOf: text)
            _ = Base64URL.decode(text)
        }
    }
}
