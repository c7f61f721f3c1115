import Testing

@testable import HTTPWire

/// The header list kept as bytes behaves as the list of string pairs it stands for.
@Suite struct HTTPHeadersTests {
    @Test func lookupsAgreeWithAScanWhateverTheNameLengthsAndEdits() {
        // Names of every length from 1 to 140, so lengths 64 apart share a filter bit.
        func name(_ n: Int) -> String { String(repeating: "x", count: n - 1) + "Y" }
        var h = HTTPHeaders()
        for n in stride(from: 1, through: 140, by: 3) { h.add(name: name(n), value: "v\(n)") }
        var other = HTTPHeaders([("Content-Length", "0"), ("Host", "a")])
        other.add(contentsOf: h)
        var removed = other
        removed.removeAll { $0.count % 2 == 0 }
        for list in [h, other, removed] {
            let names = list.fields.map { $0.name.lowercased() }
            for n in 1...140 {
                for probe in [name(n), name(n).uppercased()] {
                    let expected = names.filter { $0 == probe.lowercased() }.count
                    #expect(list.contains(probe) == (expected > 0), "\(n)")
                    #expect(list.count(of: probe) == expected, "\(n)")
                }
            }
            #expect(!list.contains("Transfer-Encoding") && !list.contains(""))
        }
        #expect(other.contains("content-length") && other[first: "HOST"] == "a")
        #expect(!removed.contains("host") && !removed.contains(name(4)) && removed.contains(name(7)))
    }

    @Test func addingTheFieldsAFilterKeepsCopiesThemInOrderWhateverWasRemovedBetween() {
        func name(_ n: Int) -> String { "F" + String(repeating: "x", count: n) }
        var source = HTTPHeaders()
        for n in 0..<40 { source.add(name: name(n), value: "v\(n)") }
        // Gaps between lines that stay: removed entries leave their bytes in the buffer.
        var gapped = source
        gapped.removeAll { $0.count % 5 == 0 }
        gapped.add(name: "Tail", value: "t")
        gapped.add(name: "bad name", value: "x")  // kept as given, marked invalid
        for list in [source, gapped] {
            for modulus in [1, 2, 3, 7] {
                let keep: (String) -> Bool = { $0.count % modulus != 1 || modulus == 1 }
                var out = HTTPHeaders([("Host", "a")])
                out.add(contentsOf: list) { keep(String(decoding: $0, as: UTF8.self)) }
                let expected = [("Host", "a")] + list.fields.filter { keep($0.name) }
                #expect(out.fields.map { "\($0.name)=\($0.value)" } == expected.map { "\($0.0)=\($0.1)" }, "\(modulus)")
                for (n, v) in list.fields.map({ ($0.name, $0.value) }) {
                    #expect(out[first: n] == (keep(n) ? v : nil), "\(n)")
                }
                #expect(out.firstInvalidField?.name == (keep("bad name") ? list.firstInvalidField?.name : nil))
                var serialized: [UInt8] = []
                out.serialize(into: &serialized)
                var reference: [UInt8] = []
                HTTPHeaders(expected).serialize(into: &reference)
                #expect(serialized == reference || expected.contains { $0.0 == "bad name" })
            }
        }
        var none = HTTPHeaders()
        none.add(contentsOf: source) { _ in false }
        #expect(none.count == 0 && none.byteCount == 0)
    }

    @Test func fieldsComeBackInOrderWithDuplicatesAndLookupsIgnoreCase() {
        var h = HTTPHeaders([("Host", "a"), ("Set-Cookie", "x=1"), ("set-cookie", "y=2")])
        h.add(name: "Vary", value: "")
        #expect(h.fields.map { "\($0.name)=\($0.value)" } == ["Host=a", "Set-Cookie=x=1", "set-cookie=y=2", "Vary="])
        #expect(h[first: "SET-COOKIE"] == "x=1")
        #expect(h[all: "set-cookie"] == ["x=1", "y=2"])
        #expect(h.count(of: "set-cookie") == 2 && h.contains("vary") && !h.contains("var"))
        #expect(h[first: "missing"] == nil && h[all: "missing"].isEmpty)
        #expect(Array(h).map(\.name) == ["Host", "Set-Cookie", "set-cookie", "Vary"])
    }

    @Test func removingKeepsTheOrderOfWhatStaysAndSharesNothingWithTheOriginal() {
        let original = HTTPHeaders([("A", "1"), ("B", "2"), ("a", "3"), ("C", "4"), ("A", "5")])
        var h = original
        h.remove(name: "a")
        #expect(h.fields.map(\.value) == ["2", "4"])
        #expect(original.count == 5 && original[all: "a"] == ["1", "3", "5"])
        h.replaceOrAdd(name: "b", value: "9")
        #expect(h.fields.map { "\($0.name)=\($0.value)" } == ["C=4", "b=9"])
        var g = original
        g.removeAll { $0.count == 1 && ($0[0] | 0x20) == UInt8(ascii: "c") }
        #expect(g.fields.map(\.value) == ["1", "2", "3", "5"])
        g.removeAll { _ in false }
        #expect(g.count == 4)
        g.removeAll { _ in true }
        #expect(g.count == 0 && g.fields.isEmpty)
    }

    @Test func equalityIsByNamesAndValuesNotByHowTheBytesLie() {
        var a = HTTPHeaders([("X", "1"), ("Y", "2")])
        a.remove(name: "x")
        let b = HTTPHeaders([("Y", "2")])
        #expect(a == b)
        // The same bytes split differently between name and value are different fields.
        #expect(HTTPHeaders([("ab", "c")]) != HTTPHeaders([("a", "bc")]))
        #expect(HTTPHeaders([("Y", "2")]) != HTTPHeaders([("y", "2")]))
        var c = HTTPHeaders()
        c.add(contentsOf: b)
        #expect(c == b)
    }

    @Test func serialisingWritesEachFieldAsAHeadLine() {
        var h = HTTPHeaders([("Content-Type", "text/plain"), ("X-Gone", "1"), ("X-Long", String(repeating: "v", count: 40))])
        h.remove(name: "x-gone")
        var out: [UInt8] = []
        h.serialize(into: &out)
        #expect(
            String(decoding: out, as: UTF8.self) == "Content-Type: text/plain\r\nX-Long: \(String(repeating: "v", count: 40))\r\n"
        )
    }

    @Test(
        arguments: [
            ("X-Ok", "fine\tvalue", nil),
            ("Bad Name", "v", "Bad Name"),
            ("", "v", ""),
            ("X-Split", "a\r\nInjected: 1", "X-Split"),
            ("X-Nul", "a\u{0}b", "X-Nul"),
            ("X-Del", "a\u{7F}", "X-Del"),
        ] as [(String, String, String?)])
    func aFieldThatCannotBeSentIsFoundWithoutCheckingAgain(name: String, value: String, invalid: String?) {
        var h = HTTPHeaders([("Host", "a")])
        h.add(name: name, value: value)
        #expect(h.firstInvalidField?.name == invalid)
        if let bad = h.firstInvalidField { #expect(bad.nameIsInvalid == (name == "Bad Name" || name.isEmpty)) }
        // Removing the field removes the refusal with it.
        h.remove(name: name)
        if !name.isEmpty { #expect(h.firstInvalidField == nil) }
    }

    @Test func parsedFieldsAreCheckedOnceAndAddedBytesAreCheckedAsAdded() throws {
        // A byte a time: every field arrives in pieces and is copied out of the reads.
        let parsed = parseAll(Array("GET / HTTP/1.1\r\nHost: h\r\nX-A: b  \r\n\r\n".utf8), splitEvery: 1)
        let head = try #require(parsed.heads.first)
        #expect(head.headers.firstInvalidField == nil)
        #expect(head.headers[first: "x-a"] == "b")
        var h = head.headers
        let bad: [UInt8] = Array("x\ny".utf8)
        bad.withUnsafeBufferPointer { v in Array("X-B".utf8).withUnsafeBufferPointer { n in h.add(name: n, value: v) } }
        #expect(h.firstInvalidField?.name == "X-B")
        #expect(head.headers.count == 2)
    }

    /// A value the caller vouches for is not scanned again; one it does not is checked as
    /// any other added value is, and a control character in it is found before sending.
    @Test func aValueNotVouchedForIsStillCheckedWhenAdded() {
        var h = HTTPHeaders()
        Array("Bearer abc".utf8).withUnsafeBufferPointer { h.add(name: "Authorization", value: $0, valueChecked: true) }
        #expect(h.firstInvalidField == nil)
        #expect(h[first: "authorization"] == "Bearer abc")
        Array("Bearer a\r\nX-Injected: 1".utf8).withUnsafeBufferPointer { h.add(name: "X-Token", value: $0, valueChecked: false) }
        #expect(h.firstInvalidField?.name == "X-Token")
        #expect(h.firstInvalidField?.nameIsInvalid == false)
    }

    /// A line that arrived as `name: value` CRLF is kept in one copy; any other spacing, and
    /// a line split across reads, is rebuilt. Either way the head reads and sends the same.
    @Test(arguments: [1, 3, 7, 1000])
    func linesAsTheyCameAndLinesRebuiltReadAndSendTheSame(splitEvery step: Int) throws {
        let raw =
            "GET / HTTP/1.1\r\nHost: h\r\nA:b\r\nB:   c  \r\nC: d\t\r\nD: e\r\nE: \r\nF:\r\nG: \u{e9}t\u{e9}\r\nX-Long: \(String(repeating: "z", count: 300))\r\n\r\n"
        let parsed = parseAll(Array(raw.utf8), splitEvery: step)
        let head = try #require(parsed.heads.first)
        #expect(
            head.headers.fields.map { "\($0.name)=\($0.value)" } == [
                "Host=h", "A=b", "B=c", "C=d", "D=e", "E=", "F=", "G=\u{e9}t\u{e9}",
                "X-Long=\(String(repeating: "z", count: 300))",
            ])
        var out: [UInt8] = []
        head.headers.serialize(into: &out)
        #expect(
            String(decoding: out, as: UTF8.self)
                == "Host: h\r\nA: b\r\nB: c\r\nC: d\r\nD: e\r\nE: \r\nF: \r\nG: \u{e9}t\u{e9}\r\nX-Long: \(String(repeating: "z", count: 300))\r\n"
        )
        #expect(head.headers == HTTPHeaders(head.headers.fields))
    }

    @Test func omittedFieldsBreakTheRunsAndNothingElseChanges() {
        var h = HTTPHeaders([("A", "1"), ("Content-Length", "5"), ("B", "2"), ("C", "3"), ("transfer-encoding", "x"), ("D", "4")])
        h.remove(name: "c")
        h.add(name: "E", value: "5")
        var out: [UInt8] = Array(">".utf8)
        h.serialize(into: &out) { $0.count > 1 }
        #expect(String(decoding: out, as: UTF8.self) == ">A: 1\r\nB: 2\r\nD: 4\r\nE: 5\r\n")
    }
}
