import HTTPWire
import Testing

/// What a parser produced for a whole input, with body bytes concatenated per request.
struct Parsed: Equatable {
    var heads: [RequestHead] = []
    var bodies: [[UInt8]] = []
    var error: WireError?
}

func parseAll(_ input: [UInt8], splitEvery step: Int) -> Parsed {
    let parser = RequestParser()
    var out = Parsed()
    var pos = 0
    outer: while pos < input.count {
        let end = min(input.count, pos + step)
        let slice = Array(input[pos..<end])
        var off = 0
        while off < slice.count {
            let (event, used) = slice.withUnsafeBytes { parser.parse(UnsafeRawBufferPointer(rebasing: $0[off...])) }
            off += used
            switch event {
            case .needMoreData: if used == 0 { break }
            case .head(let h):
                out.heads.append(h)
                out.bodies.append([])
            case .body(let b): out.bodies[out.bodies.count - 1] += Array(b)
            case .end: break
            case .error(let e):
                out.error = e
                break outer
            }
        }
        pos = end
    }
    return out
}

@Suite struct RequestParserTests {
    let pipeline = Array(
        ("GET /a?x=1 HTTP/1.1\r\nHost: h\r\nX-A: 1\r\n\r\n"
            + "POST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello"
            + "POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
            + "GET /d HTTP/1.0\r\n\r\n").utf8)

    /// Each method is named as sent, whether its name comes from the parser's own literals
    /// for the common ones or from http-parser's list for the rest.
    @Test(arguments: [
        "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "PROPFIND", "MKCOL", "PURGE", "REPORT", "LINK",
    ])
    func everyKnownMethodIsNamedAsSent(_ method: String) {
        let p = parseAll(Array("\(method) /x HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n".utf8), splitEvery: 1000)
        #expect(p.error == nil)
        #expect(p.heads.map(\.method) == [method])
    }

    @Test func pipelineParsesIntoFourRequests() {
        let p = parseAll(pipeline, splitEvery: pipeline.count)
        #expect(p.error == nil)
        #expect(p.heads.map(\.target) == ["/a?x=1", "/b", "/c", "/d"])
        #expect(p.heads.map(\.method) == ["GET", "POST", "POST", "GET"])
        #expect(p.bodies.map { String(decoding: $0, as: UTF8.self) } == ["", "hello", "abcde", ""])
        #expect(p.heads[1].framing == .length(5))
        #expect(p.heads[2].framing == .chunked)
        #expect(p.heads[3].keepAlive == false)
        #expect(p.heads[0].headers[first: "x-a"] == "1")
    }

    @Test func anySplitOfTheInputGivesTheSameResult() {
        let whole = parseAll(pipeline, splitEvery: pipeline.count)
        for step in [1, 2, 3, 5, 7, 11, 64] {
            #expect(parseAll(pipeline, splitEvery: step) == whole, "split every \(step)")
        }
    }

    @Test func headerValuesAreTrimmed() {
        let p = parseAll(Array("GET / HTTP/1.1\r\nHost:   h  \r\nX:\tv\t\r\n\r\n".utf8), splitEvery: 100)
        #expect(p.heads.first?.headers[first: "host"] == "h")
        #expect(p.heads.first?.headers[first: "x"] == "v")
    }

    @Test func splitMalformedInputsFailTheSameWay() {
        let bad = Array("GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n folded\r\n\r\n".utf8)
        for step in [1, 3, 100] {
            #expect(parseAll(bad, splitEvery: step).error?.code == .obsoleteLineFolding, "split \(step)")
        }
    }

    @Test func aWellFormedUnknownMethodIs501HoweverTheInputIsSplit() {
        let cases: [(String, Int, String?)] = [
            ("FROB / HTTP/1.1\r\nHost: a\r\n\r\n", 501, "FROB"),
            ("get / HTTP/1.1\r\nHost: a\r\n\r\n", 501, "get"),
            ("GETX / HTTP/1.1\r\nHost: a\r\n\r\n", 501, "GETX"),
            ("PURGEALL / HTTP/1.1\r\nHost: a\r\n\r\n", 501, "PURGEALL"),
            ("\r\nBREW /pot HTTP/1.1\r\nHost: a\r\n\r\n", 501, "BREW"),
            ("GET / HTTP/1.1\r\nHost: a\r\n\r\nFROB / HTTP/1.1\r\nHost: a\r\n\r\n", 501, "FROB"),
            ("G(T / HTTP/1.1\r\nHost: a\r\n\r\n", 400, nil),
            ("FR\u{7f}B / HTTP/1.1\r\nHost: a\r\n\r\n", 400, nil),
            ("\(String(repeating: "X", count: 40)) / HTTP/1.1\r\n\r\n", 400, nil),
        ]
        for (text, status, method) in cases {
            let input = Array(text.utf8)
            for step in [1, 2, 3, 5, input.count] {
                let p = parseAll(input, splitEvery: step)
                #expect(p.error?.status == status, "\(text.debugDescription) split \(step)")
                if let method { #expect(p.error?.detail == "the method \(method) is not implemented") }
            }
        }
    }
}
