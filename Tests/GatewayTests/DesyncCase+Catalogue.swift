/// The probes of ``DesyncBatteryTests``, by family. Each family is what one kind of
/// front-end/back-end disagreement needs (RFC 9112 §6.3, §11.2): a refused probe must be
/// refused with its precise status before any byte reaches the upstream; a probe that may
/// pass must reach it as exactly the requests listed, each framed on its own.
extension DesyncCase {
    static let head = "Host: x\r\n"
    /// A request as the body of another, legitimately framed: it must stay body.
    static let inBody = "GET /api/in-body HTTP/1.1\r\nHost: x\r\n\r\n"

    /// CL.TE, TE.CL and TE.TE: two framings at once, or a `Transfer-Encoding` disguised so
    /// that one parser sees it and the other does not.
    static let transferEncoding: [DesyncCase] = [
        DesyncCase(
            "CL.TE: Content-Length then chunked",
            "POST {P}/a HTTP/1.1\r\n\(head)Content-Length: 44\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n\(smuggledRequest)",
            .refused(400)),
        DesyncCase(
            "TE.CL: chunked then Content-Length",
            "POST {P}/a HTTP/1.1\r\n\(head)Transfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n\(chunk(smuggledRequest))0\r\n\r\n",
            .refused(400)),
        DesyncCase(
            "TE with a space before the colon, beside Content-Length",
            "POST {P}/a HTTP/1.1\r\n\(head)Transfer-Encoding : chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n\(smuggledRequest)",
            .refused(400)),
        DesyncCase(
            "TE with a space before the colon, alone",
            "POST {P}/a HTTP/1.1\r\n\(head)Transfer-Encoding : chunked\r\n\r\n0\r\n\r\n\(smuggledRequest)",
            .refused(400)),
        DesyncCase(
            "TE xchunked beside Content-Length",
            "POST {P}/a HTTP/1.1\r\n\(head)Transfer-Encoding: xchunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n\(smuggledRequest)",
            .refused(400)),
        DesyncCase(
            "TE xchunked alone", "POST {P}/a HTTP/1.1\r\n\(head)Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n\(smuggledRequest)",
            .refused(501)),
        DesyncCase(
            "TE with HTAB before chunked, beside Content-Length",
            "POST {P}/a HTTP/1.1\r\n\(head)Transfer-Encoding:\tchunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n\(smuggledRequest)",
            .refused(400)),
        DesyncCase(
            "TE with HTAB before chunked, alone (valid OWS)",
            "POST {P}/a HTTP/1.1\r\n\(head)Transfer-Encoding:\tchunked\r\n\r\n\(chunk("hello"))0\r\n\r\n",
            .passes(.post("/a", body: "hello"))),
        DesyncCase(
            "TE chunked, identity beside Content-Length",
            "POST {P}/a HTTP/1.1\r\n\(head)Transfer-Encoding: chunked, identity\r\nContent-Length: 5\r\n\r\n0\r\n\r\n\(smuggledRequest)",
            .refused(400)),
        DesyncCase(
            "TE chunked, identity alone",
            "POST {P}/a HTTP/1.1\r\n\(head)Transfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n\(smuggledRequest)",
            .refused(501)),
        DesyncCase(
            "TE identity, chunked",
            "POST {P}/a HTTP/1.1\r\n\(head)Transfer-Encoding: identity, chunked\r\n\r\n0\r\n\r\n\(smuggledRequest)",
            .refused(501)),
        DesyncCase(
            "two TE fields: chunked then identity",
            "POST {P}/a HTTP/1.1\r\n\(head)Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n0\r\n\r\n\(smuggledRequest)",
            .refused(501)),
        DesyncCase(
            "two TE fields: chunked twice",
            "POST {P}/a HTTP/1.1\r\n\(head)Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n\(smuggledRequest)",
            .refused(501)),
        DesyncCase(
            "two TE fields beside Content-Length",
            "POST {P}/a HTTP/1.1\r\n\(head)Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\nContent-Length: 5\r\n\r\n0\r\n\r\n\(smuggledRequest)",
            .refused(400)),
        DesyncCase(
            "Transfer-encoding casing beside Content-Length",
            "POST {P}/a HTTP/1.1\r\n\(head)Content-Length: 5\r\nTransfer-encoding: chunked\r\n\r\n0\r\n\r\n\(smuggledRequest)",
            .refused(400)),
        DesyncCase(
            "TRANSFER-ENCODING: CHUNKED alone (valid)",
            "POST {P}/a HTTP/1.1\r\n\(head)TRANSFER-ENCODING: CHUNKED\r\n\r\n\(chunk("hello"))0\r\n\r\n",
            .passes(.post("/a", body: "hello"))),
        DesyncCase(
            "TE value on an obs-fold line, beside Content-Length",
            "POST {P}/a HTTP/1.1\r\n\(head)Transfer-Encoding:\r\n chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n\(smuggledRequest)",
            .refused(400)),
        DesyncCase(
            "TE hidden in an obs-fold continuation",
            "POST {P}/a HTTP/1.1\r\n\(head)Foo: bar\r\n Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n\(smuggledRequest)",
            .refused(400)),
        DesyncCase(
            "TE with a vertical tab before chunked",
            "POST {P}/a HTTP/1.1\r\n\(head)Transfer-Encoding:\u{0B}chunked\r\n\r\n0\r\n\r\n\(smuggledRequest)",
            .refused(400)),
        DesyncCase(
            "TE with a form feed after chunked, beside Content-Length",
            "POST {P}/a HTTP/1.1\r\n\(head)Transfer-Encoding: chunked\u{0C}\r\nContent-Length: 5\r\n\r\n0\r\n\r\n\(smuggledRequest)",
            .refused(400)),
    ]

    /// A CR or an LF on its own, where one parser ends a line and another does not.
    static let bareLineEnds: [DesyncCase] = [
        DesyncCase(
            "bare CR right before the head's final LF", "GET {P}/a HTTP/1.1\r\nHost: x\r\nFoo: bar\r\n\rX\(smuggledRequest)",
            .refused(400)),
        DesyncCase("bare CR in the request line", "GET {P}/a\rHTTP/1.1\r\n\(head)\r\n", .refused(400)),
        DesyncCase("bare CR in a header value", "GET {P}/a HTTP/1.1\r\n\(head)Foo: a\rb\r\n\r\n", .refused(400)),
        DesyncCase("bare CR in a header name", "GET {P}/a HTTP/1.1\r\n\(head)Fo\ro: a\r\n\r\n", .refused(400)),
        DesyncCase("bare CR ending a header line", "GET {P}/a HTTP/1.1\r\nHost: x\rFoo: b\r\n\r\n", .refused(400)),
        DesyncCase("bare LF ending the request line", "GET {P}/a HTTP/1.1\n\(head)\r\n", .refused(400)),
        DesyncCase("bare LF ending a header line", "GET {P}/a HTTP/1.1\r\nHost: x\nFoo: b\r\n\r\n", .refused(400)),
        DesyncCase("bare LF ending the head", "GET {P}/a HTTP/1.1\r\n\(head)\n\(smuggledRequest)", .refused(400)),
        DesyncCase("a head of bare LFs only", "GET {P}/a HTTP/1.1\nHost: x\n\n", .refused(400)),
        DesyncCase(
            "bare CR in a chunk size line", "POST {P}/a HTTP/1.1\r\n\(head)Transfer-Encoding: chunked\r\n\r\n3\rabc\r\n0\r\n\r\n",
            .refused(400)),
        DesyncCase(
            "bare LF ending a chunk size line",
            "POST {P}/a HTTP/1.1\r\n\(head)Transfer-Encoding: chunked\r\n\r\n3\nabc\r\n0\r\n\r\n",
            .refused(400)),
        DesyncCase(
            "bare LF after chunk data", "POST {P}/a HTTP/1.1\r\n\(head)Transfer-Encoding: chunked\r\n\r\n3\r\nabc\n0\r\n\r\n",
            .refused(400)),
        DesyncCase(
            "bare LF ending the last chunk's line",
            "POST {P}/a HTTP/1.1\r\n\(head)Transfer-Encoding: chunked\r\n\r\n0\n\r\n\(smuggledRequest)",
            .refused(400)),
        DesyncCase(
            "bare LF ending the chunked body",
            "POST {P}/a HTTP/1.1\r\n\(head)Transfer-Encoding: chunked\r\n\r\n0\r\n\n\(smuggledRequest)",
            .refused(400)),
        DesyncCase(
            "bare CR in a trailer field",
            "POST {P}/a HTTP/1.1\r\n\(head)Transfer-Encoding: chunked\r\n\r\n0\r\nFoo: a\rb\r\n\r\n",
            .refused(400)),
        DesyncCase(
            "LF-only chunk lines throughout",
            "POST {P}/a HTTP/1.1\r\n\(head)Transfer-Encoding: chunked\r\n\r\n3\nabc\n0\n\n\(smuggledRequest)",
            .refused(400)),
    ]

    /// NUL bytes, which C parsers may take for the end of a string.
    static let nulBytes: [DesyncCase] = [
        DesyncCase("NUL in the method", "G\0ET {P}/a HTTP/1.1\r\n\(head)\r\n", .refused(400)),
        DesyncCase("NUL in the target", "GET {P}/a\0/smuggled HTTP/1.1\r\n\(head)\r\n", .refused(400)),
        DesyncCase("NUL in a header name", "GET {P}/a HTTP/1.1\r\n\(head)Fo\0o: a\r\n\r\n", .refused(400)),
        DesyncCase("NUL in a header value", "GET {P}/a HTTP/1.1\r\n\(head)Foo: a\0\r\n\r\n\(smuggledRequest)", .refused(400)),
        DesyncCase(
            "NUL in a chunk size", "POST {P}/a HTTP/1.1\r\n\(head)Transfer-Encoding: chunked\r\n\r\n3\0\r\nabc\r\n0\r\n\r\n",
            .refused(400)),
        DesyncCase(
            "NUL in a chunk extension",
            "POST {P}/a HTTP/1.1\r\n\(head)Transfer-Encoding: chunked\r\n\r\n3;a\0b\r\nabc\r\n0\r\n\r\n",
            .refused(400)),
        DesyncCase(
            "NUL in a Content-Length body passes intact", "POST {P}/a HTTP/1.1\r\n\(head)Content-Length: 3\r\n\r\na\0b",
            .passes(.post("/a", body: "a\0b"))),
    ]

    /// Chunk size lines that parsers read differently.
    static let chunkSizes: [DesyncCase] = [
        DesyncCase(
            "chunk size with a leading space",
            "POST {P}/a HTTP/1.1\r\n\(head)Transfer-Encoding: chunked\r\n\r\n 3\r\nabc\r\n0\r\n\r\n",
            .refused(400)),
        DesyncCase(
            "chunk size with a trailing space",
            "POST {P}/a HTTP/1.1\r\n\(head)Transfer-Encoding: chunked\r\n\r\n3 \r\nabc\r\n0\r\n\r\n",
            .refused(400)),
        DesyncCase(
            "chunk size with a 0x prefix",
            "POST {P}/a HTTP/1.1\r\n\(head)Transfer-Encoding: chunked\r\n\r\n0x3\r\nabc\r\n0\r\n\r\n",
            .refused(400)),
        DesyncCase(
            "chunk size past 64 bits",
            "POST {P}/a HTTP/1.1\r\n\(head)Transfer-Encoding: chunked\r\n\r\n10000000000000003\r\nabc\r\n0\r\n\r\n\(smuggledRequest)",
            .refused(400)),
        DesyncCase(
            "chunk size of sixteen Fs",
            "POST {P}/a HTTP/1.1\r\n\(head)Transfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFF\r\nabc\r\n0\r\n\r\n\(smuggledRequest)",
            .refused(400)),
        DesyncCase(
            "negative chunk size", "POST {P}/a HTTP/1.1\r\n\(head)Transfer-Encoding: chunked\r\n\r\n-3\r\nabc\r\n0\r\n\r\n",
            .refused(400)),
        DesyncCase(
            "chunk extension ended by a bare LF",
            "POST {P}/a HTTP/1.1\r\n\(head)Transfer-Encoding: chunked\r\n\r\n3;x\nabc\r\n0\r\n\r\n",
            .refused(400)),
        DesyncCase(
            "chunk extension with a bare CR",
            "POST {P}/a HTTP/1.1\r\n\(head)Transfer-Encoding: chunked\r\n\r\n3;x\ry\r\nabc\r\n0\r\n\r\n",
            .refused(400)),
        DesyncCase(
            "chunk extension with a quoted CRLF",
            "POST {P}/a HTTP/1.1\r\n\(head)Transfer-Encoding: chunked\r\n\r\n3;x=\"a\r\n\(smuggledRequest)\"\r\nabc\r\n0\r\n\r\n",
            .refused(400)),
        DesyncCase(
            "chunk data not followed by CRLF",
            "POST {P}/a HTTP/1.1\r\n\(head)Transfer-Encoding: chunked\r\n\r\n3\r\nabcXY0\r\n\r\n",
            .refused(400)),
        DesyncCase(
            "chunk data longer than its size",
            "POST {P}/a HTTP/1.1\r\n\(head)Transfer-Encoding: chunked\r\n\r\n3\r\nabcd\r\n0\r\n\r\n",
            .refused(400)),
        DesyncCase(
            "a chunk extension passes as one request",
            "POST {P}/a HTTP/1.1\r\n\(head)Transfer-Encoding: chunked\r\n\r\n3;name=value\r\nabc\r\n0\r\n\r\n",
            .passes(.post("/a", body: "abc"))),
        DesyncCase(
            "a trailer field passes as one request",
            "POST {P}/a HTTP/1.1\r\n\(head)Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-Trailer: t\r\n\r\n",
            .passes(.post("/a", body: "abc"))),
    ]

    /// `Content-Length` values that parsers read differently.
    static let contentLengths: [DesyncCase] = [
        DesyncCase("Content-Length +5", "POST {P}/a HTTP/1.1\r\n\(head)Content-Length: +5\r\n\r\nhello", .refused(400)),
        DesyncCase("Content-Length -5", "POST {P}/a HTTP/1.1\r\n\(head)Content-Length: -5\r\n\r\nhello", .refused(400)),
        DesyncCase(
            "Content-Length with more leading white space (OWS)",
            "POST {P}/a HTTP/1.1\r\n\(head)Content-Length:  5\r\n\r\nhelloGET {P}/b HTTP/1.1\r\n\(head)\r\n",
            .passes(.post("/a", body: "hello"), .get("/b"))),
        DesyncCase(
            "Content-Length with trailing white space (OWS)",
            "POST {P}/a HTTP/1.1\r\n\(head)Content-Length: 5 \r\n\r\nhelloGET {P}/b HTTP/1.1\r\n\(head)\r\n",
            .passes(.post("/a", body: "hello"), .get("/b"))),
        DesyncCase("Content-Length 5,5", "POST {P}/a HTTP/1.1\r\n\(head)Content-Length: 5,5\r\n\r\nhello", .refused(400)),
        DesyncCase(
            "two equal Content-Length fields",
            "POST {P}/a HTTP/1.1\r\n\(head)Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello", .refused(400)),
        DesyncCase(
            "two different Content-Length fields",
            "POST {P}/a HTTP/1.1\r\n\(head)Content-Length: 5\r\nContent-Length: 44\r\n\r\nhello\(smuggledRequest)",
            .refused(400)),
        DesyncCase(
            "Content-Length of 20 digits", "POST {P}/a HTTP/1.1\r\n\(head)Content-Length: 18446744073709551621\r\n\r\nhello",
            .refused(400)),
        DesyncCase(
            "Content-Length of 19 digits", "POST {P}/a HTTP/1.1\r\n\(head)Content-Length: 1000000000000000005\r\n\r\nhello",
            .refused(400)),
        DesyncCase("Content-Length 0x5", "POST {P}/a HTTP/1.1\r\n\(head)Content-Length: 0x5\r\n\r\nhello", .refused(400)),
        DesyncCase("empty Content-Length", "POST {P}/a HTTP/1.1\r\n\(head)Content-Length:\r\n\r\nhello", .refused(400)),
        DesyncCase(
            "a request in a Content-Length body stays body",
            "POST {P}/a HTTP/1.1\r\n\(head)Content-Length: \(inBody.utf8.count)\r\n\r\n\(inBody)",
            .passes(.post("/a", body: inBody))),
    ]

    /// Request lines: absolute-form targets (whose authority must never decide anything),
    /// extra white space, versions.
    static let requestLines: [DesyncCase] = [
        DesyncCase(
            "absolute-form target", "GET http://evil.example{P}/a HTTP/1.1\r\n\(head)\r\n", .passes(.get("/a")),
            neverUpstream: ["evil.example"]),
        DesyncCase(
            "absolute-form target with user-info", "GET http://user:pass@evil.example{P}/a HTTP/1.1\r\n\(head)\r\n",
            .passes(.get("/a")),
            neverUpstream: ["evil.example", "user:pass"]),
        DesyncCase(
            "absolute-form target with a different Host", "GET http://evil.example{P}/a HTTP/1.1\r\nHost: other.example\r\n\r\n",
            .passes(.get("/a")),
            neverUpstream: ["evil.example"]),
        DesyncCase("two spaces between method and target", "GET  {P}/a HTTP/1.1\r\n\(head)\r\n", .refused(400)),
        DesyncCase("two spaces between target and version", "GET {P}/a  HTTP/1.1\r\n\(head)\r\n", .refused(400)),
        DesyncCase("a tab between method and target", "GET\t{P}/a HTTP/1.1\r\n\(head)\r\n", .refused(400)),
        DesyncCase(
            "HTTP/1.0 with chunked", "POST {P}/a HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n\(smuggledRequest)",
            .refused(400)),
        DesyncCase(
            "HTTP/1.0 with chunked beside Content-Length",
            "POST {P}/a HTTP/1.0\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n\(smuggledRequest)",
            .refused(400)),
        DesyncCase("HTTP/1.2", "GET {P}/a HTTP/1.2\r\n\(head)\r\n", .refused(505)),
        DesyncCase("HTTP/2.0 in an HTTP/1 request line", "GET {P}/a HTTP/2.0\r\n\(head)\r\n", .refused(505)),
        DesyncCase("lower-case http/1.1", "GET {P}/a http/1.1\r\n\(head)\r\n", .refused(400)),
    ]

    /// `Expect: 100-continue` mixed with bodies, framing and pipelining.
    static let expectations: [DesyncCase] = [
        DesyncCase(
            "100-continue, body sent at once",
            "POST {P}/a HTTP/1.1\r\n\(head)Expect: 100-continue\r\nContent-Length: 5\r\n\r\nhello",
            .passes(.post("/a", body: "hello"))),
        DesyncCase(
            "100-continue, body sent after the interim answer",
            "POST {P}/a HTTP/1.1\r\n\(head)Expect: 100-continue\r\nContent-Length: 5\r\n\r\nhello",
            .passes(.post("/a", body: "hello")), waitsForContinue: true),
        DesyncCase(
            "100-continue with a chunked body and a request pipelined after",
            "POST {P}/a HTTP/1.1\r\n\(head)Expect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n\(chunk("hello"))0\r\n\r\nGET {P}/b HTTP/1.1\r\n\(head)\r\n",
            .passes(.post("/a", body: "hello"), .get("/b"))),
        DesyncCase(
            "100-continue beside Content-Length and chunked",
            "POST {P}/a HTTP/1.1\r\n\(head)Expect: 100-continue\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n\(smuggledRequest)",
            .refused(400)),
        DesyncCase(
            "an expectation other than 100-continue",
            "POST {P}/a HTTP/1.1\r\n\(head)Expect: 200-ok\r\nContent-Length: 5\r\n\r\nhello\(smuggledRequest)",
            .refused(417)),
        DesyncCase(
            "two Expect fields",
            "POST {P}/a HTTP/1.1\r\n\(head)Expect: 100-continue\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\nhello",
            .refused(417)),
        DesyncCase(
            "100-continue on HTTP/1.0", "POST {P}/a HTTP/1.0\r\n\(head)Expect: 100-continue\r\nContent-Length: 5\r\n\r\nhello",
            .passes(.post("/a", body: "hello"))),
        DesyncCase(
            "100-continue on a GET without a body", "GET {P}/a HTTP/1.1\r\n\(head)Expect: 100-continue\r\n\r\n",
            .passes(.get("/a"))),
    ]

    /// Requests pipelined after one that is refused: none of them may be read.
    static let pipelining: [DesyncCase] = [
        DesyncCase(
            "three valid requests pipelined",
            "GET {P}/a HTTP/1.1\r\n\(head)\r\nPOST {P}/b HTTP/1.1\r\n\(head)Content-Length: 2\r\n\r\nhiGET {P}/c HTTP/1.1\r\n\(head)\r\n",
            .passes(.get("/a"), .post("/b", body: "hi"), .get("/c"))),
        DesyncCase(
            "a request with two lengths after a valid one",
            "GET {P}/a HTTP/1.1\r\n\(head)\r\nPOST {P}/b HTTP/1.1\r\n\(head)Content-Length: 1\r\nContent-Length: 2\r\n\r\nhi\(smuggledRequest)",
            .refused(400, after: [.get("/a")])),
        DesyncCase(
            "a NUL in the first head, a valid request after", "GET {P}/a HTTP/1.1\r\n\(head)Foo: \0\r\n\r\n\(smuggledRequest)",
            .refused(400)),
        DesyncCase(
            "a bare CR in the second head, a valid request after",
            "GET {P}/a HTTP/1.1\r\n\(head)\r\nGET {P}/b HTTP/1.1\r\n\(head)Foo: a\rb\r\n\r\n\(smuggledRequest)",
            .refused(400, after: [.get("/a")])),
        DesyncCase(
            "TE.CL after a valid POST",
            "POST {P}/a HTTP/1.1\r\n\(head)Content-Length: 2\r\n\r\nhiPOST {P}/b HTTP/1.1\r\n\(head)Transfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n\(chunk(smuggledRequest))0\r\n\r\n",
            .refused(400, after: [.post("/a", body: "hi")])),
        DesyncCase(
            "an unknown transfer coding after a valid request",
            "GET {P}/a HTTP/1.1\r\n\(head)\r\nPOST {P}/b HTTP/1.1\r\n\(head)Transfer-Encoding: gzip\r\n\r\n0\r\n\r\n\(smuggledRequest)",
            .refused(501, after: [.get("/a")])),
        DesyncCase(
            "an unsupported version after a valid request",
            "GET {P}/a HTTP/1.1\r\n\(head)\r\nGET {P}/b HTTP/1.2\r\n\(head)\r\n\(smuggledRequest)",
            .refused(505, after: [.get("/a")])),
        DesyncCase(
            "a malformed chunk after a valid request",
            "GET {P}/a HTTP/1.1\r\n\(head)\r\nPOST {P}/b HTTP/1.1\r\n\(head)Transfer-Encoding: chunked\r\n\r\n3\r\nabcXY0\r\n\r\n\(smuggledRequest)",
            .refused(400, after: [.get("/a")])),
    ]
}
