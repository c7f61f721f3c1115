import Testing

@testable import HTTPWire

@Suite struct HeaderNameSetTests {
    @Test func looksUpWithoutCase() {
        let set = HeaderNameSet(["Connection", "te", "keep-alive"])
        for name in ["connection", "CONNECTION", "Connection", "TE", "te", "Keep-Alive"] {
            #expect(set.contains(name), "\(name)")
        }
        for name in ["", "t", "connectio", "connections", "x-te", "keep_alive", "kéep-alive", "Connection "] {
            #expect(!set.contains(name), "\(name)")
        }
    }

    @Test func addingKeepsWhatWasThere() {
        let set = HeaderNameSet(["te"]).adding(["Via", "te"])
        #expect(set.contains("TE") && set.contains("via") && !set.contains("host"))
        #expect(!HeaderNameSet([]).contains("x"))
    }

    /// A name with the same letters but for bits that case folding would confuse (`[` is
    /// `{` without 0x20, `@` is `` ` ``) does not match.
    @Test func onlyLettersFoldCase() {
        let set = HeaderNameSet(["a{"])
        #expect(!set.contains("A["))
        #expect(set.contains("A{"))
    }
}

@Suite struct ConnectionTokenTests {
    @Test func tokensAreTrimmedLoweredAndInOrder() {
        let h = HTTPHeaders([
            ("Connection", " Keep-Alive ,, X-Foo\t"), ("Host", "h"), ("connection", "close,"), ("Connection", ""),
        ])
        #expect(FramingRules.connectionTokenList(h) == ["keep-alive", "x-foo", "close"])
        #expect(FramingRules.connectionTokenList(HTTPHeaders([("Host", "h")])).isEmpty)
    }

    @Test func keepAliveFollowsTheVersionAndTheTokens() {
        #expect(FramingRules.keepAlive(headers: HTTPHeaders(), major: 1, minor: 1))
        #expect(!FramingRules.keepAlive(headers: HTTPHeaders(), major: 1, minor: 0))
        #expect(!FramingRules.keepAlive(headers: HTTPHeaders([("Connection", "x, Close")]), major: 1, minor: 1))
        #expect(FramingRules.keepAlive(headers: HTTPHeaders([("Connection", "keep-alive")]), major: 1, minor: 0))
    }
}

@Suite struct HeaderFieldAccumulatorTests {
    /// Feeds `pieces` as http-parser would (name pieces, then value pieces), each from its
    /// own buffer that is freed after `detach()`, as the parsers' inputs are.
    private func field(_ acc: inout HeaderFieldAccumulator, name: [String], value: [String]) {
        for piece in name {
            let bytes = Array(piece.utf8)
            bytes.withUnsafeBufferPointer { b in
                b.withMemoryRebound(to: CChar.self) { acc.appendName($0.baseAddress, $0.count) }
            }
            acc.detach()
        }
        for piece in value {
            let bytes = Array(piece.utf8)
            bytes.withUnsafeBufferPointer { b in
                b.withMemoryRebound(to: CChar.self) { acc.appendValue($0.baseAddress, $0.count) }
            }
            acc.detach()
        }
    }

    @Test func piecesFromSeveralInputsMakeOneField() {
        var acc = HeaderFieldAccumulator()
        field(&acc, name: ["X-", "Lo", "ng"], value: ["a ", "b\t ", " "])
        #expect(acc.inValue && acc.hasUnfinishedField && acc.unfinishedBytes == 12)
        #expect(acc.unfinishedNameIs("x-long"))
        #expect(acc.finishField(maxCount: 10) == nil)
        #expect(acc.fields.count == 1 && acc.fields[0].name == "X-Long" && acc.fields[0].value == "a b")
        #expect(!acc.hasUnfinishedField && !acc.inValue && acc.unfinishedBytes == 0)
    }

    @Test func contiguousPiecesOfOneInputAreBorrowedThenCopiedOnDetach() {
        var acc = HeaderFieldAccumulator()
        var input = Array("Content-Typetext/plain".utf8)
        input.withUnsafeBufferPointer { b in
            b.withMemoryRebound(to: CChar.self) { c in
                acc.appendName(c.baseAddress, 7)
                acc.appendName(c.baseAddress! + 7, 5)
                acc.appendValue(c.baseAddress! + 12, 10)
            }
        }
        acc.detach()
        // The input changes after detach: the field must not.
        for i in input.indices { input[i] = UInt8(ascii: "?") }
        #expect(acc.finishField(maxCount: 10) == nil)
        #expect(acc.fields[0] == ("Content-Type", "text/plain"))
    }

    @Test func refusalsComeInOrderAndLeaveTheNextFieldEmpty() {
        var acc = HeaderFieldAccumulator()
        field(&acc, name: ["Bad Name"], value: ["\u{1}"])
        #expect(acc.finishField(maxCount: 10) == .invalidName)
        field(&acc, name: ["Good"], value: ["a\u{7F}"])
        #expect(acc.finishField(maxCount: 10) == .invalidValue)
        field(&acc, name: ["Good"], value: ["fine"])
        #expect(acc.finishField(maxCount: 1) == nil)
        field(&acc, name: ["Next"], value: ["x"])
        #expect(acc.finishField(maxCount: 1) == .tooMany)
        #expect(acc.fields.map(\.name) == ["Good"])
        acc.reset()
        #expect(acc.fields.isEmpty && !acc.hasUnfinishedField)
    }

    @Test func anEmptyValueAndObsTextAreKept() {
        var acc = HeaderFieldAccumulator()
        field(&acc, name: ["A"], value: [])
        #expect(acc.finishField(maxCount: 10) == nil)
        field(&acc, name: ["B"], value: ["caf\u{e9}"])
        #expect(acc.finishField(maxCount: 10) == nil)
        #expect(acc.fields.map(\.value) == ["", "caf\u{e9}"])
    }
}

@Suite struct ByteAppendTests {
    @Test func decimalsAreSpelledAsStringSpellsThem() {
        var values: [Int64] = [0, 1, -1, 9, 10, 99, 100, 12345, Int64.max, Int64.min, Int64.min + 1]
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            values.append(Int64.random(in: Int64.min...Int64.max, using: &rng) >> Int64.random(in: 0...62, using: &rng))
        }
        for v in values {
            var out: [UInt8] = [0x41]
            out.appendDecimal(v)
            #expect(out == [0x41] + Array(String(v).utf8), "\(v)")
        }
        for v in [UInt64.max, UInt64(Int64.max) + 1, 0] {
            var out: [UInt8] = []
            out.appendDecimal(v)
            #expect(String(decoding: out, as: UTF8.self) == String(v))
        }
        var small: [UInt8] = []
        small.appendDecimal(UInt8(255))
        small.appendUTF8("é")
        #expect(String(decoding: small, as: UTF8.self) == "255é")
    }
}
