import AuthCore
import Foundation
import Testing

/// The parsers that read what servers send (challenges, form bodies, JWT payloads, base64url)
/// on generated input: well-formed input comes back exactly as it was built, malformed input
/// is refused in the documented way, and arbitrary input never traps and never yields
/// something outside the grammar.
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

    static let tchar = Array("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    static let letters = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    static let base64URLAlphabet = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    static func text(_ alphabet: [Character], _ lengths: Range<Int>, _ g: inout SplitMix) -> String {
        String((0..<Int.random(in: lengths, using: &g)).map { _ in alphabet.randomElement(using: &g)! })
    }

    // MARK: Arbitrary input

    @Test func arbitraryInputNeverTrapsAndNeverYieldsSomethingOutsideTheGrammar() {
        var generator = SplitMix(state: 42)
        let alphabet = Array(#"Bearer realm="x", error=invalid_token,\ "=,;%+.-_~/ab09é"#)
        var challengesSeen = 0
        for _ in 0..<20_000 {
            let text = Self.text(alphabet, 0..<40, &generator)
            for challenge in WWWAuthenticateChallenge.parse(text) {
                challengesSeen += 1
                #expect(!challenge.scheme.isEmpty && challenge.scheme.allSatisfy(Self.tchar.contains), "\(text)")
                #expect(challenge.token68 == nil || challenge.parameters.isEmpty, "\(text)")
                for name in challenge.parameters.keys {
                    #expect(!name.isEmpty && name == name.lowercased() && name.allSatisfy(Self.tchar.contains), "\(text)")
                }
            }
            if let pairs = FormURLEncoding.decodePairs(text) {
                #expect(pairs.count <= text.split(separator: "&").count, "\(text)")
            } else {
                #expect(text.contains("%"), "only a bad escape is refused: \(text)")
            }
            if JWTClaims(decodingPayloadOf: text) != nil {
                #expect(text.filter { $0 == "." }.count == 2, "\(text)")
            }
            if Base64URL.decode(text) != nil {
                #expect(
                    text.utf8.allSatisfy {
                        Self.base64URLAlphabet.contains($0) || $0 == UInt8(ascii: "=") || $0 == UInt8(ascii: "+")
                            || $0 == UInt8(ascii: "/")
                    }, "\(text)")
            }
        }
        #expect(challengesSeen > 1000, "the generator produces challenges at all")
    }

    // MARK: WWW-Authenticate

    /// A challenge and the header text for it.
    static func challenge(_ g: inout SplitMix) -> (WWWAuthenticateChallenge, String) {
        let scheme = text(letters, 1..<10, &g)
        if Int.random(in: 0..<5, using: &g) == 0 {
            // token68, optionally padded
            let token68 =
                text(Array("abcXYZ0189-._~+/"), 1..<16, &g) + String(repeating: "=", count: Int.random(in: 0...2, using: &g))
            return (WWWAuthenticateChallenge(scheme: scheme, token68: token68), "\(scheme) \(token68)")
        }
        var parameters: [String: String] = [:]
        var parts: [String] = []
        for _ in 0..<Int.random(in: 0...4, using: &g) {
            let name = text(letters, 1..<8, &g)
            guard parameters[name.lowercased()] == nil else { continue }
            let value: String
            let written: String
            if Bool.random(using: &g) {
                value = text(tchar, 1..<12, &g)
                written = value
            } else {
                value = text(Array(#"ab cé,="\;/"#), 0..<12, &g)
                written =
                    "\"" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
            }
            parameters[name.lowercased()] = value
            parts.append("\(name)=\(written)")
        }
        let header = parts.isEmpty ? scheme : "\(scheme) " + parts.joined(separator: ", ")
        return (WWWAuthenticateChallenge(scheme: scheme, parameters: parameters), header)
    }

    @Test func wellFormedChallengesParseBackExactly() {
        var generator = SplitMix(state: 7)
        for _ in 0..<5_000 {
            let built = (0..<Int.random(in: 1...3, using: &generator)).map { _ in Self.challenge(&generator) }
            let header = built.map(\.1).joined(separator: ", ")
            #expect(WWWAuthenticateChallenge.parse(header) == built.map(\.0), "\(header)")
            // The same challenges spread over one field each.
            #expect(WWWAuthenticateChallenge.parse(fieldValues: built.map(\.1)) == built.map(\.0), "\(header)")
        }
    }

    // MARK: Form encoding

    @Test func formPairsRoundTripExactlyAndBadEscapesAreRefused() {
        var generator = SplitMix(state: 11)
        let alphabet = Array("ab Z09&=+%;/?#é😀\n")
        for _ in 0..<5_000 {
            let pairs = (0..<Int.random(in: 0...4, using: &generator)).map { _ in
                (Self.text(alphabet, 0..<8, &generator), Self.text(alphabet, 0..<8, &generator))
            }
            let encoded = FormURLEncoding.encode(pairs)
            #expect(
                encoded.allSatisfy { "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._*+%=&".contains($0) },
                "\(encoded)")
            let decoded = FormURLEncoding.decodePairs(encoded)
            #expect(decoded?.map(\.0) == pairs.map(\.0), "\(encoded)")
            #expect(decoded?.map(\.1) == pairs.map(\.1), "\(encoded)")
            // A broken escape anywhere makes the whole body unreadable, never half-read.
            let cut = encoded.isEmpty ? 0 : Int.random(in: 0...encoded.count, using: &generator)
            let index = encoded.index(encoded.startIndex, offsetBy: cut)
            for bad in ["%", "%G1", "%1", "%zz", "%FF", "%C3"] {
                let broken = String(encoded[..<index]) + "&x=" + bad
                #expect(FormURLEncoding.decodePairs(broken) == nil, "\(broken)")
            }
        }
    }

    // MARK: JWT payloads

    @Test func jwtClaimsAreReadExactlyAndAnythingElseIsNil() throws {
        var generator = SplitMix(state: 13)
        let header = Base64URL.encode(Array(#"{"alg":"none"}"#.utf8))
        for _ in 0..<2_000 {
            let exp = Int.random(in: 0..<4_000_000_000, using: &generator)
            let iat = Int.random(in: 0..<4_000_000_000, using: &generator)
            let subject = Self.text(Array("abc é\"\\/0"), 0..<10, &generator)
            var object: [String: Any] = ["sub": subject, "exp": exp, "iat": iat, "other": [1, 2]]
            if Bool.random(using: &generator) { object["sub"] = nil }
            let payload = Base64URL.encode(try JSONSerialization.data(withJSONObject: object))
            let signature = Self.text(Array("abc-_09"), 0..<20, &generator)
            let claims = JWTClaims(decodingPayloadOf: "\(header).\(payload).\(signature)")
            #expect(
                claims == JWTClaims(expiration: Double(exp), issuedAt: Double(iat), subject: object["sub"] as? String),
                "\(object)")
            for wrongShape in [
                "\(header).\(payload)", "\(header).\(payload).\(signature).x", payload, "\(header).\(payload)!.\(signature)",
            ] {
                #expect(JWTClaims(decodingPayloadOf: wrongShape) == nil, "\(wrongShape)")
            }
        }
        let array = Base64URL.encode(Array("[1,2]".utf8))
        #expect(JWTClaims(decodingPayloadOf: "\(header).\(array).sig") == nil, "a payload that is not an object")
        let mistyped = Base64URL.encode(Array(#"{"exp":"soon"}"#.utf8))
        #expect(JWTClaims(decodingPayloadOf: "\(header).\(mistyped).sig") == nil, "an exp that is not a number")
        #expect(JWTClaims(decodingPayloadOf: "\(header)..sig") == nil, "an empty payload")
    }

    // MARK: base64url

    @Test func base64URLRoundTripsEveryLengthUnpaddedAndRefusesForeignCharacters() {
        var generator = SplitMix(state: 17)
        for length in 0..<300 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let text = Base64URL.encode(bytes)
            #expect(text.utf8.allSatisfy(Self.base64URLAlphabet.contains), "\(text)")
            #expect(text.utf8.count == (length * 4 + 2) / 3, "unpadded length for \(length) bytes")
            #expect(Base64URL.decode(text) == Data(bytes), "\(length) bytes")
            let padded = text + String(repeating: "=", count: (4 - text.utf8.count % 4) % 4)
            #expect(Base64URL.decode(padded) == Data(bytes), "padded, \(length) bytes")
            if !text.isEmpty {
                for foreign in ["!", ".", " ", "é", "\n"] {
                    let at = Int.random(in: 0...text.count, using: &generator)
                    var broken = text
                    broken.insert(contentsOf: foreign, at: broken.index(broken.startIndex, offsetBy: at))
                    #expect(Base64URL.decode(broken) == nil, "\(broken.debugDescription)")
                }
            }
        }
        #expect(Base64URL.decode("A") == nil, "one character cannot hold a byte")
        #expect(Base64URL.decode("AAAAA") == nil)
    }
}
