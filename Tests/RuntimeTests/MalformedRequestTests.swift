import Foundation
import HTTPWire
import Runtime
import TestSupport
import Testing

/// Raw requests a strict proxy must refuse, each with the status it must get.
let malformedCases: [(name: String, request: String, status: Int)] = [
    ("TE and CL together", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
    ("CL and TE together", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n", 400),
    ("duplicate CL equal", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc", 400),
    ("duplicate CL conflicting", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 5\r\n\r\nabc", 400),
    ("CL list", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3, 3\r\n\r\nabc", 400),
    ("CL negative", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", 400),
    ("CL plus sign", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +3\r\n\r\nabc", 400),
    ("CL hex", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0x3\r\n\r\nabc", 400),
    ("CL huge", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999999\r\n\r\n", 400),
    ("TE gzip", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
    ("TE chunked then gzip", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", 501),
    ("TE twice", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 501),
    ("TE identity", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity\r\n\r\n", 501),
    ("TE on HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
    ("TE with space before colon", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n", 400),
    ("header name with space", "GET / HTTP/1.1\r\nHost: a\r\nBad Name: x\r\n\r\n", 400),
    ("header name with slash", "GET / HTTP/1.1\r\nHost: a\r\nBad/Name: x\r\n\r\n", 400),
    ("empty header name", "GET / HTTP/1.1\r\nHost: a\r\n: x\r\n\r\n", 400),
    ("control char in value", "GET / HTTP/1.1\r\nHost: a\r\nX: a\u{01}b\r\n\r\n", 400),
    ("DEL in value", "GET / HTTP/1.1\r\nHost: a\r\nX: a\u{7F}b\r\n\r\n", 400),
    ("NUL in value", "GET / HTTP/1.1\r\nHost: a\r\nX: a\u{00}b\r\n\r\n", 400),
    ("bare CR in value", "GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n", 400),
    ("bare CR ending the head", "GET /a HTTP/1.1\r\nHost: a\r\nFoo: bar\r\n\rXGET /b HTTP/1.1\r\nHost: a\r\n\r\n", 400),
    ("bare LF ending the head", "GET /a HTTP/1.1\r\nHost: a\r\n\nGET /b HTTP/1.1\r\nHost: a\r\n\r\n", 400),
    ("bare LF line end", "GET / HTTP/1.1\r\nHost: a\nX: b\r\n\r\n", 400),
    ("obs-fold", "GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n  folded\r\n\r\n", 400),
    ("whitespace before first header", "GET / HTTP/1.1\r\n Host: a\r\n\r\n", 400),
    ("missing Host", "GET / HTTP/1.1\r\n\r\n", 400),
    ("two Hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
    ("HTTP/2.0 version", "GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505),
    ("HTTP/1.2 version", "GET / HTTP/1.2\r\nHost: a\r\n\r\n", 505),
    ("HTTP/0.9 style version", "GET / HTTP/0.9\r\nHost: a\r\n\r\n", 505),
    ("garbage version", "GET / HTTX/1.1\r\nHost: a\r\n\r\n", 400),
    ("unknown method", "FROB / HTTP/1.1\r\nHost: a\r\n\r\n", 501),
    ("lowercase method", "get / HTTP/1.1\r\nHost: a\r\n\r\n", 501),
    ("method with a separator", "G(T / HTTP/1.1\r\nHost: a\r\n\r\n", 400),
    ("CONNECT", "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n", 501),
    ("target too long", "GET /\(String(repeating: "a", count: 9000)) HTTP/1.1\r\nHost: a\r\n\r\n", 414),
    ("head too large", "GET / HTTP/1.1\r\nHost: a\r\nX: \(String(repeating: "b", count: 17000))\r\n\r\n", 431),
    ("too many headers", "GET / HTTP/1.1\r\nHost: a\r\n" + (0..<120).map { "X-\($0): v\r\n" }.joined() + "\r\n", 431),
    ("bad chunk size", "POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n", 400),
    ("chunk size overflow", "POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFF\r\n", 400),
    ("body too large by CL", "POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 9000000\r\n\r\n", 413),
    ("unsupported expectation", "POST /echo HTTP/1.1\r\nHost: a\r\nExpect: magic\r\nContent-Length: 1\r\n\r\na", 417),
    ("space in target", "GET /a b HTTP/1.1\r\nHost: a\r\n\r\n", 400),
    ("two spaces before the target", "GET  /a HTTP/1.1\r\nHost: a\r\n\r\n", 400),
    ("two spaces before the version", "GET /a  HTTP/1.1\r\nHost: a\r\n\r\n", 400),
    ("a tab before the version", "GET /a\tHTTP/1.1\r\nHost: a\r\n\r\n", 400),
]

@Suite(.serialized) struct MalformedRequestTests {
    @Test func everyMalformedRequestGetsItsStatusProblemJSONAndAClose() async throws {
        #expect(malformedCases.count >= 25)
        try await TestServer.with { server in
            for c in malformedCases {
                let client = try RawClient(port: server.port)
                try client.send(c.request)
                let raw = client.readToEnd()
                guard let (resp, _) = TestResponse.parse(raw) else {
                    Issue.record("\(c.name): no parsable response: \(String(decoding: raw.prefix(200), as: UTF8.self))")
                    continue
                }
                #expect(resp.status == c.status, "\(c.name)")
                #expect(resp.header("content-type") == "application/problem+json", "\(c.name)")
                #expect(resp.header("connection") == "close", "\(c.name)")
                let json = try JSONSerialization.jsonObject(with: Data(resp.body)) as? [String: Any]
                #expect(json?["status"] as? Int == c.status, "\(c.name)")
                #expect((json?["detail"] as? String)?.isEmpty == false, "\(c.name)")
            }
            // The process is still up and serving.
            let client = try RawClient(port: server.port)
            try client.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
            #expect(try client.readResponse().status == 200)
        }
    }

    @Test func aRejectedSmuggledRequestNeverReachesTheResponder() async throws {
        try await TestServer.with { server in
            let client = try RawClient(port: server.port)
            // If CL were honoured, "GET /smuggled" would be a second request.
            try client.send(
                "POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n"
            )
            let raw = String(decoding: client.readToEnd(), as: UTF8.self)
            #expect(raw.hasPrefix("HTTP/1.1 400"))
            #expect(raw.components(separatedBy: "HTTP/1.1 ").count == 2, "exactly one response")
        }
    }

    /// Chunk data not followed by CRLF, on a streamed body whose responder has not answered yet.
    static let brokenChunkFraming = [
        "3\r\nabcXX\r\n0\r\n\r\n", "3\r\nabc\n0\r\n\r\n", "3\r\nabc\r0\r\n\r\n", "3\r\nabcd\r\n0\r\n\r\n",
        "3\r\nabcXY0\r\n\r\n", "3\r\nabcXX", "3\r\nabcX",
    ]

    @Test(arguments: brokenChunkFraming)
    func malformedChunkFramingMidStreamedBodyIsAnswered400AndClosed(_ chunks: String) async throws {
        try await TestServer.with { server in
            let (port, arrivals) = (server.port, server.arrivals)
            // The conversation runs on its own thread: the rest of the body must follow its
            // head well within the server's body timeout, whatever holds the pool.
            let (arrived, raw) = try await onThread { () -> (Bool, [UInt8]) in
                let client = try RawClient(port: port)
                try client.send(
                    "POST /stream-slow HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks.prefix(6))
                // Mid-stream: the responder has the request before the rest of the body is sent.
                let arrived = eventuallyOnThisThread { arrivals.count("/stream-slow") >= 1 }
                try client.send(String(chunks.dropFirst(6)))
                return (arrived, client.readToEnd())
            }
            #expect(arrived, "the streamed request reached the responder")
            guard let (resp, _) = TestResponse.parse(raw) else {
                Issue.record("no response: \(String(decoding: raw.prefix(200), as: UTF8.self))")
                return
            }
            #expect(resp.status == 400)
            #expect(resp.header("content-type") == "application/problem+json")
            #expect(resp.header("connection") == "close")
        }
    }

    @Test func errorBodiesNeverEchoHeaderValues() async throws {
        try await TestServer.with { server in
            let client = try RawClient(port: server.port)
            try client.send("GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer secret-token\u{01}\r\n\r\n")
            let raw = String(decoding: client.readToEnd(), as: UTF8.self)
            #expect(raw.hasPrefix("HTTP/1.1 400"))
            #expect(!raw.contains("secret-token"))
        }
    }
}
