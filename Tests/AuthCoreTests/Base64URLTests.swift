import AuthCore
import Foundation
import Testing

/// Base64url without padding (RFC 4648 §5), as JWTs and PKCE use it.
@Suite struct Base64URLTests {
    @Test func everyLengthAndEveryByteEncodesAsFoundationsBase64WithTheURLAlphabet() {
        var generator = SystemRandomNumberGenerator()
        for length in 0..<70 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let expected = Data(bytes).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            #expect(Base64URL.encode(bytes) == expected, "\(length) bytes")
            #expect(Base64URL.decode(Base64URL.encode(bytes)) == Data(bytes))
        }
        #expect(Base64URL.encode(Array(0...255)).count == 342)
        // RFC 4648 §10's vectors.
        for (text, encoded) in [("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE")] {
            #expect(Base64URL.encode(Array(text.utf8)) == encoded)
        }
        #expect(Base64URL.encode([0xfb, 0xff]) == "-_8", "the URL alphabet")
    }
}
