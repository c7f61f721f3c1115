import Foundation
import HTTPWire
import Testing

/// `Problem.quote` writes every JSON string AuthGate builds by hand (problem bodies, log
/// lines): what it writes must parse back to the same string, whatever the input holds.
@Suite struct ProblemQuoteTests {
    static let samples = [
        "", "plain ascii", "quote \" and backslash \\", "line\nfeed\r\ttab", "bell \u{07} escape \u{1B} nul \u{00}",
        "é, 漢字, 🙂 and \u{2028}", "\u{7F} stays", String(repeating: "long \"run\" ", count: 200),
    ]

    @Test(arguments: samples)
    func aQuotedStringParsesBackToItself(_ s: String) throws {
        let quoted = Problem.quote(s)
        let parsed = try JSONSerialization.jsonObject(with: Data(quoted.utf8), options: .fragmentsAllowed) as? String
        #expect(parsed == s)
    }

    @Test func controlCharactersAreEscapedAsBefore() {
        #expect(Problem.quote("a\"b\\c\nd\re\tf\u{1B}g\u{00}") == #""a\"b\\c\nd\re\tf\u001bg\u0000""#)
        var out: [UInt8] = Array("x=".utf8)
        Problem.appendQuoted("é\"", to: &out)
        #expect(String(decoding: out, as: UTF8.self) == #"x="é\"""#)
    }
}
