import Foundation
import HTTPWire
import Runtime
import TestSupport
import Testing

@Suite(.serialized) struct UpstreamClientTests {
    /// Runs `body` with a client on its own loop and a test server.
    func withClient(
        _ config: UpstreamClientConfiguration = UpstreamClientConfiguration(),
        _ body: (UpstreamClient, TestServer) async throws -> Void
    ) async throws {
        let loop = try EventLoop(name: "client-loop")
        loop.start()
        defer { loop.shutdown() }
        let client = await UpstreamClient.make(on: loop, configuration: config)
        try await TestServer.with { server in try await body(client, server) }
    }

    @Test func getAndPostRoundTrip() async throws {
        try await withClient { client, server in
            let get = try await client.send(UpstreamRequest(method: "GET", url: "http://127.0.0.1:\(server.port)/hello"))
            #expect(get.status == 200)
            #expect(String(decoding: get.body, as: UTF8.self) == "ok")
            var h = HTTPHeaders()
            h.add(name: "Content-Type", value: "text/plain")
            let post = try await client.send(
                UpstreamRequest(
                    method: "POST", url: "http://127.0.0.1:\(server.port)/echo?q=1", headers: h,
                    body: .bytes(Array("payload".utf8))))
            #expect(post.status == 200)
            #expect(String(decoding: post.body, as: UTF8.self) == "payload")
            #expect(post.headers[first: "x-target"] == "/echo?q=1")
            let put = try await client.send(
                UpstreamRequest(method: "PUT", url: "http://127.0.0.1:\(server.port)/echo", body: .bytes(Array("p".utf8))))
            #expect(put.headers[first: "x-method"] == "PUT")
            let del = try await client.send(UpstreamRequest(method: "DELETE", url: "http://127.0.0.1:\(server.port)/echo"))
            #expect(del.headers[first: "x-method"] == "DELETE")
            let head = try await client.send(UpstreamRequest(method: "HEAD", url: "http://127.0.0.1:\(server.port)/"))
            #expect(head.status == 200)
            #expect(head.body.isEmpty)
            let empty = try await client.send(UpstreamRequest(method: "POST", url: "http://127.0.0.1:\(server.port)/echo"))
            #expect(empty.status == 200)
            #expect(empty.body.isEmpty)
        }
    }

    @Test(arguments: [true, false])
    func oddUpstreamHeadsAreReadByteForByte(loopHTTP1: Bool) async throws {
        let canned = try CannedServer(
            response: "HTTP/1.1 100 Continue\r\n\r\n"
                + "HTTP/1.1 203 Odd Reason Phrase\r\nX-Padded:   v a l  \t\r\nX-Folded: a\r\n  b\r\n"
                + "X-Empty:\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        defer { canned.stop() }
        try await withClient(UpstreamClientConfiguration(loopHTTP1: loopHTTP1)) { client, _ in
            let r = try await client.send(UpstreamRequest(method: "GET", url: "http://127.0.0.1:\(canned.port)/"))
            #expect(r.status == 203, "the final status, not the 100")
            #expect(r.headers[first: "x-padded"] == "v a l", "OWS trimmed, inner spaces kept")
            // RFC 9112 §5.2: each obs-fold becomes one or more SP (libcurl makes one, the
            // loop's client keeps the continuation's own spaces).
            #expect(r.headers[first: "x-folded"]?.split(separator: " ") == ["a", "b"], "obs-fold joined")
            #expect(r.headers[first: "x-empty"] == "")
            #expect(String(decoding: r.body, as: UTF8.self) == "ok")
        }
    }

    /// A field that is not valid HTTP refuses the whole response on both engines (RFC 9110
    /// §5.5), as nginx and HAProxy do: dropping it would pass on another message than the
    /// upstream sent. The client keeps working for the next request.
    @Test(arguments: [true, false])
    func aHeadWithAnInvalidFieldIsRefusedNotTrimmed(loopHTTP1: Bool) async throws {
        for field in ["Bad Name: x", "X-Ctl: a\u{1}b", "X-Nul: a\u{0}b", "X-Del: a\u{7f}b", "No colon here", "(x): y"] {
            let canned = try CannedServer(
                response: "HTTP/1.1 200 OK\r\n\(field)\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
            defer { canned.stop() }
            try await withClient(UpstreamClientConfiguration(loopHTTP1: loopHTTP1)) { client, server in
                let error = await #expect(throws: RuntimeError.self, "\(field.debugDescription)") {
                    try await client.send(UpstreamRequest(method: "GET", url: "http://127.0.0.1:\(canned.port)/"))
                }
                #expect(error?.code == .invalidResponse, "\(field.debugDescription): \(String(describing: error))")
                let next = try await client.send(UpstreamRequest(method: "GET", url: "http://127.0.0.1:\(server.port)/"))
                #expect(next.status == 200)
            }
        }
    }

    @Test func largeResponseIsStreamed() async throws {
        try await withClient { client, server in
            var h = HTTPHeaders()
            h.add(name: "X-Size", value: "5000000")
            let r = try await client.send(
                UpstreamRequest(method: "GET", url: "http://127.0.0.1:\(server.port)/big", headers: h), maxBodyBytes: 10_000_000)
            #expect(r.body.count == 5_000_000)
        }
    }

    @Test func aResponseOverTheBufferLimitFailsAndTheClientKeepsWorking() async throws {
        // The limit is hit inside libcurl's write callback, where libcurl refuses to let a
        // transfer go: it used to stay in the multi handle, its body went on to stdout and
        // the next exchange on the reused easy handle failed ("already added").
        try await withClient { client, server in
            for round in 0..<3 {
                var h = HTTPHeaders()
                h.add(name: "X-Size", value: "5000000")
                let error = await #expect(throws: RuntimeError.self) {
                    try await client.send(
                        UpstreamRequest(method: "GET", url: "http://127.0.0.1:\(server.port)/big", headers: h), maxBodyBytes: 1000
                    )
                }
                #expect(error?.code == .responseTooLarge)
                #expect(error?.status == 502)
                for i in 0..<3 {
                    let r = try await client.send(
                        UpstreamRequest(
                            method: "POST", url: "http://127.0.0.1:\(server.port)/echo", body: .bytes(Array("\(round)-\(i)".utf8))
                        ))
                    #expect(String(decoding: r.body, as: UTF8.self) == "\(round)-\(i)")
                }
            }
        }
    }

    @Test func refusedConnectionIsConnectFailed() async throws {
        try await withClient { client, _ in
            // Port 1 on loopback: nothing listens there.
            let error = await #expect(throws: RuntimeError.self) {
                try await client.send(UpstreamRequest(method: "GET", url: "http://127.0.0.1:1/"))
            }
            #expect(error?.code == .connectFailed)
            #expect(error?.status == 502)
        }
    }

    @Test func headerLinesThatCouldSplitTheRequestAreRefusedBeforeAnythingIsSent() async throws {
        let bad: [(String, String)] = [
            ("X-Token", "a\r\nX-Evil: 1"), ("X-Token", "a\nb"), ("X-Token", "a\rb"), ("X-Token", "a\u{0}b"),
            ("X-Token", "a\u{1}b"), ("X-Token", "a\u{7F}"), ("X Evil", "1"), ("X-Evil:", "1"), ("", "1"), ("X-É", "1"),
        ]
        try await withClient { client, server in
            for (name, value) in bad {
                var h = HTTPHeaders()
                h.add(name: name, value: value)
                do throws(RuntimeError) {
                    _ = try await client.send(
                        UpstreamRequest(method: "GET", url: "http://127.0.0.1:\(server.port)/echo", headers: h))
                    Issue.record("sent \(name.debugDescription): \(value.debugDescription)")
                } catch {
                    #expect(error.code == .invalidRequest, "\(name.debugDescription)")
                    #expect(error.status == 502)
                    #expect(!error.message.contains("Evil") && !error.message.contains("a\u{1}"), "\(error)")
                }
            }
            var fine = HTTPHeaders()
            fine.add(name: "X-Tab", value: "a\tb")
            fine.add(name: "X-Obs-Text", value: "caf\u{E9}")
            let r = try await client.send(
                UpstreamRequest(method: "GET", url: "http://127.0.0.1:\(server.port)/echo", headers: fine))
            #expect(r.status == 200, "HTAB and obs-text are valid in a field value")
        }
    }

    @Test func slowUpstreamTimesOutWith504() async throws {
        var c = UpstreamClientConfiguration()
        c.totalTimeout = .milliseconds(20)
        try await withClient(c) { client, server in
            // /hang never answers: the timeout is the only way out, however slow the machine.
            let error = await #expect(throws: RuntimeError.self) {
                try await client.send(UpstreamRequest(method: "GET", url: "http://127.0.0.1:\(server.port)/hang"))
            }
            #expect(error?.code == .timeout)
            #expect(error?.status == 504)
        }
    }

    @Test func manySequentialShortConnectionsReuseDescriptorsSafely() async throws {
        try await withClient { client, server in
            // Connection: close on every request makes libcurl open and close a socket each
            // time, so descriptor numbers are reused while poll handles close.
            var h = HTTPHeaders()
            h.add(name: "Connection", value: "close")
            for i in 0..<300 {
                let r = try await client.send(
                    UpstreamRequest(
                        method: "POST", url: "http://127.0.0.1:\(server.port)/echo", headers: h,
                        body: .bytes(Array(String(i).utf8))))
                #expect(String(decoding: r.body, as: UTF8.self) == String(i))
            }
        }
    }

    @Test func hundredsOfConcurrentExchanges() async throws {
        try await withClient { client, server in
            let port = server.port
            let ok = try await withThrowingTaskGroup(of: Int.self) { group in
                for i in 0..<500 {
                    group.addTask {
                        let r = try await client.send(
                            UpstreamRequest(
                                method: "POST", url: "http://127.0.0.1:\(port)/echo", body: .bytes(Array(String(i).utf8))))
                        return String(decoding: r.body, as: UTF8.self) == String(i) ? 1 : 0
                    }
                }
                return try await group.reduce(0, +)
            }
            #expect(ok == 500)
        }
    }
}
