import HTTPWire
import Testing

/// The upstream response reader, fed byte strings split every way, without sockets.
struct ResponseParserTests {
    /// Everything the parser reports for `input` fed in pieces of `step` bytes, then EOF
    /// when `eof`: the events as text.
    func events(_ input: String, step: Int = .max, head: Bool = false, eof: Bool = false) -> [String] {
        let parser = ResponseParser()
        if head { parser.expectNoBody() }
        let bytes = Array(input.utf8)
        var out: [String] = []
        var body: [UInt8] = []
        var start = 0
        func flush() {
            if !body.isEmpty { out.append("body \(String(decoding: body, as: UTF8.self))") }
            body = []
        }
        outer: while start < bytes.count {
            let piece = Array(bytes[start..<min(bytes.count, start + step)])
            start += piece.count
            var offset = 0
            while offset < piece.count {
                let (event, used) = piece.withUnsafeBytes { parser.parse(UnsafeRawBufferPointer(rebasing: $0[offset...])) }
                offset += used
                switch event {
                case .needMoreData: if used == 0 { break }
                case .head(let s, let h):
                    out.append("head \(s) \(h.fields.map { "\($0.name)=\($0.value)" }.joined(separator: ","))")
                case .body(let b): body += b
                case .switched:
                    out.append("switched")
                    break outer
                case .end(let k):
                    flush()
                    out.append("end keepAlive=\(k)")
                    parser.reset()
                    if head { parser.expectNoBody() }
                case .error(let e):
                    flush()
                    out.append("error \(e.code.rawValue)")
                    break outer
                }
            }
        }
        if eof {
            switch parser.finishInput() {
            case .end(let k):
                flush()
                out.append("end keepAlive=\(k)")
            case .error(let e):
                flush()
                out.append("error \(e.code.rawValue)")
            default: break
            }
        }
        flush()
        return out
    }

    @Test(arguments: [1, 3, 7, 1000])
    func lengthChunkedAndCloseDelimitedBodiesInAnySplit(step: Int) {
        #expect(
            events("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 204 No Content\r\n\r\n", step: step)
                == ["head 200 Content-Length=2", "body ok", "end keepAlive=true", "head 204 ", "end keepAlive=true"])
        #expect(
            events("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n1\r\nc\r\n0\r\n\r\n", step: step)
                == ["head 200 Transfer-Encoding=chunked", "body abc", "end keepAlive=true"])
        #expect(
            events("HTTP/1.1 200 OK\r\n\r\nuntil close", step: step, eof: true)
                == ["head 200 ", "body until close", "end keepAlive=false"])
        #expect(
            events("HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx", step: step)
                == ["head 200 Content-Length=1", "body x", "end keepAlive=false"], "HTTP/1.0 closes")
        #expect(
            events("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nx", step: step)
                == ["head 200 Connection=close,Content-Length=1", "body x", "end keepAlive=false"])
    }

    @Test func interimResponsesAreSkippedAndHeadResponsesHaveNoBody() {
        #expect(
            events(
                "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n"
            )
                == ["head 201 Content-Length=0", "end keepAlive=true"])
        #expect(
            events("HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n", head: true)
                == ["head 200 Content-Length=5000", "end keepAlive=true", "head 200 Content-Length=3", "end keepAlive=true"])
    }

    @Test func framingAnUpstreamCouldUseToDesyncIsRefused() {
        #expect(
            events("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxx").last == "error conflicting-framing")
        #expect(
            events("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n").last
                == "error conflicting-framing")
        #expect(events("HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\n").last == "error invalid-content-length")
        #expect(events("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n").last == "error invalid-chunk")
        #expect(
            events("HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: x\r\n\r\n").last
                == "error upgrade-unsupported")
        #expect(events("NOT HTTP\r\n\r\n").last == "error malformed-request")
    }

    /// RFC 9112 §6.3 read strictly: a coding other than exactly `chunked`, or one beside a
    /// length, is refused before any of the head is given out, so no byte after it can be
    /// taken for a response.
    @Test(arguments: [1, 5, 1000])
    func transferEncodingOtherThanExactlyChunkedIsRefused(step: Int) {
        let smuggled = "helloHTTP/1.1 200 OK\r\nContent-Length: 8\r\nX-Injected: yes\r\n\r\nINJECTED"
        let cases: [(String, String)] = [
            ("Transfer-Encoding: identity\r\nContent-Length: 5", "error conflicting-framing"),
            ("Content-Length: 5\r\nTransfer-Encoding: identity", "error conflicting-framing"),
            ("Transfer-Encoding: identity", "error unsupported-transfer-encoding"),
            ("Transfer-Encoding: gzip, chunked", "error unsupported-transfer-encoding"),
            ("Transfer-Encoding: chunked, identity", "error unsupported-transfer-encoding"),
            ("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked", "error unsupported-transfer-encoding"),
            ("Transfer-Encoding: chunked\r\nContent-Length: 5", "error conflicting-framing"),
            ("Content-Length: 5, 5", "error invalid-content-length"),
            ("Content-Length: 5\r\nContent-Length: 5", "error conflicting-framing"),
            ("Content-Length: 5\u{01}", "error invalid-header-value"),
            ("Transfer-Encoding: chunked\u{01}", "error invalid-header-value"),
        ]
        for (fields, expected) in cases {
            let got = events("HTTP/1.1 200 OK\r\n\(fields)\r\n\r\n" + smuggled, step: step)
            #expect(got == [expected], "\(fields.debugDescription)")
        }
        // The same rules hold for a status that has no body.
        #expect(
            events("HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: identity\r\nContent-Length: 5\r\n\r\n") == [
                "error conflicting-framing"
            ])
    }

    /// `204`, `304` and `1xx` have no body whatever their length says (RFC 9110 §6.4.1): the
    /// exchange ends with the head. A `304`'s length is that of what a `GET` would get and
    /// the connection is reused; a `204` must announce no body, so one that does is not.
    @Test(arguments: [1, 4, 1000])
    func bodilessStatusesEndAtTheirHeadWhateverTheLengthSays(step: Int) {
        #expect(
            events(
                "HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx", step: step
            )
                == [
                    "head 304 Content-Length=10", "end keepAlive=true", "head 200 Content-Length=1", "body x",
                    "end keepAlive=true",
                ])
        #expect(
            events("HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n", step: step)
                == ["head 204 Content-Length=10", "end keepAlive=false"])
        #expect(
            events("HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n", step: step)
                == ["head 204 Transfer-Encoding=chunked", "end keepAlive=false"])
        #expect(
            events("HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n", step: step) == [
                "head 204 Content-Length=0", "end keepAlive=true",
            ])
        #expect(
            events("HTTP/1.1 100 Continue\r\nContent-Length: 3\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", step: step)
                == ["head 200 Content-Length=2", "body ok", "end keepAlive=true"])
    }

    /// A field name that is not a token, or a value with a control character, refuses the
    /// response before its head is given out, in any split: nothing is passed on trimmed.
    @Test(arguments: [1, 3, 1000])
    func aFieldThatIsNotValidHTTPRefusesTheResponse(step: Int) {
        let cases: [(String, String)] = [
            ("Bad Name: x", "error invalid-header-name"),
            ("(x): y", "error invalid-header-name"),
            ("X-Ctl: a\u{01}b", "error invalid-header-value"),
            ("X-Nul: a\u{00}b", "error invalid-header-value"),
            ("X-Del: a\u{7f}b", "error invalid-header-value"),
            ("X-Bare-CR: a\rb", "error bare-carriage-return"),
        ]
        for (field, expected) in cases {
            let got = events("HTTP/1.1 200 OK\r\n\(field)\r\nContent-Length: 2\r\n\r\nok", step: step)
            #expect(got == [expected], "\(field.debugDescription)")
        }
        // Bytes above 0x7F are obs-text, which a value may hold (RFC 9110 §5.5).
        #expect(
            events("HTTP/1.1 200 OK\r\nX-Latin: caf\u{e9}\r\nContent-Length: 0\r\n\r\n", step: step) == [
                "head 200 X-Latin=caf\u{e9},Content-Length=0", "end keepAlive=true",
            ])
    }

    @Test func aResponseCutShortIsAnErrorAtEndOfInput() {
        #expect(
            events("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab", eof: true) == [
                "head 200 Content-Length=5", "body ab", "error malformed-request",
            ])
        #expect(events("HTTP/1.1 200 O", eof: true) == ["error malformed-request"])
        #expect(events("", eof: true) == ["error malformed-request"])
    }

    @Test func anOversizedHeadIsRefused() {
        let big = String(repeating: "X-A: " + String(repeating: "a", count: 1000) + "\r\n", count: 40)
        let last = events("HTTP/1.1 200 OK\r\n" + big + "\r\n").last ?? ""
        #expect(last == "error head-too-large", "\(last.prefix(40))")
    }
}
