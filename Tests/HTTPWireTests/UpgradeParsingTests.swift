import HTTPWire
import Testing

/// Upgrade requests and `101 Switching Protocols` answers, without sockets.
struct UpgradeParsingTests {
    static let upgrade = "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, Upgrade\r\nUpgrade: websocket\r\n\r\n"

    @Test(arguments: [1, 3, 7, 1000])
    func aBodylessGetUpgradeIsMarkedAndTheConnectionGoesOnAsHTTP(step: Int) {
        let input = Array((Self.upgrade + "GET /next HTTP/1.1\r\nHost: a\r\n\r\n").utf8)
        let parsed = parseAll(input, splitEvery: step)
        #expect(parsed.error == nil)
        #expect(parsed.heads.map(\.target) == ["/ws", "/next"])
        #expect(parsed.heads.first?.upgrade == "websocket")
        #expect(parsed.heads.first?.keepAlive == true)
        #expect(parsed.heads.last?.upgrade == nil)
    }

    @Test(arguments: [
        // Not GET, a body, HTTP/1.0, two Upgrade fields: ignored, and the connection closes after.
        "POST /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nContent-Length: 2\r\n\r\nhi",
        "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nContent-Length: 2\r\n\r\nhi",
        "GET /ws HTTP/1.0\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
        "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nUpgrade: h2c\r\n\r\n",
        // A protocol other than WebSocket: its tunnel would escape the route's path checks.
        "GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n",
        "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket, h2c\r\n\r\n",
        "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: TLS/1.2\r\n\r\n",
        "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: x-private\r\n\r\n",
    ])
    func anUpgradeAProxyMustNotPassIsIgnoredAndClosesAfterTheResponse(input: String) {
        let parsed = parseAll(Array(input.utf8), splitEvery: 1000)
        #expect(parsed.error == nil)
        #expect(parsed.heads.count == 1)
        #expect(parsed.heads.first?.upgrade == nil)
        #expect(parsed.heads.first?.keepAlive == false)
    }

    @Test func upgradeWithoutConnectionUpgradeIsAnOrdinaryRequest() {
        let parsed = parseAll(Array("GET /ws HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\n\r\n".utf8), splitEvery: 1000)
        #expect(parsed.heads.first?.upgrade == nil)
        #expect(parsed.heads.first?.keepAlive == true)
    }

    /// Feeds `input` in pieces of `step` bytes to a parser told to expect an upgrade; returns
    /// the events as text and the bytes left after a switch.
    func switched(_ input: String, step: Int, expect: Bool = true) -> (events: [String], rest: String) {
        let parser = ResponseParser()
        if expect { parser.expectUpgrade() }
        let bytes = Array(input.utf8)
        var events: [String] = []
        var start = 0
        while start < bytes.count {
            let piece = Array(bytes[start..<min(bytes.count, start + step)])
            start += piece.count
            var offset = 0
            while offset < piece.count {
                let (event, used) = piece.withUnsafeBytes { parser.parse(UnsafeRawBufferPointer(rebasing: $0[offset...])) }
                offset += used
                switch event {
                case .needMoreData: if used == 0 { offset = piece.count }
                case .head(let s, _): events.append("head \(s)")
                case .body: events.append("body")
                case .end: events.append("end")
                case .switched(let h):
                    events.append("switched \(h[first: "upgrade"] ?? "")")
                    let rest = Array(piece[offset...]) + Array(bytes[start...])
                    return (events, String(decoding: rest, as: UTF8.self))
                case .error(let e):
                    events.append("error \(e.code.rawValue)")
                    return (events, "")
                }
            }
        }
        return (events, "")
    }

    static let switching =
        "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Accept: abc\r\n\r\n"

    @Test(arguments: [1, 2, 5, 1000])
    func a101EndsHTTPAndLeavesTheNewProtocolsBytesUnread(step: Int) {
        let (events, rest) = switched(Self.switching + "\u{81}\u{02}hi", step: step)
        #expect(events == ["switched websocket"])
        #expect(rest == "\u{81}\u{02}hi")
    }

    @Test func aSwitchNobodyAskedForIsRefused() {
        #expect(switched(Self.switching, step: 1000, expect: false).events == ["error upgrade-unsupported"])
    }

    @Test func anUpgradeAnsweredWithoutASwitchIsAnOrdinaryResponse() {
        let answer = "HTTP/1.1 401 Unauthorized\r\nContent-Length: 2\r\n\r\nno"
        #expect(switched(answer, step: 3).events == ["head 401", "body", "end"])
    }
}
