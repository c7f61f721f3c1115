import TestSupport
import Testing

/// The recording upstream's reader is what ``DesyncBatteryTests`` trusts to say what an
/// origin server would have read: it must frame what a strict server frames, refuse what a
/// strict server refuses, and never read a second request out of a first one's body.
struct RecordedRequestFramingTests {
    private func frame(_ text: String) -> RecordedRequest.Framing {
        RecordedRequest.frame(Array(text.utf8)[...])
    }

    @Test func aChunkedRequestIsFramedWithItsBodyDechunked() throws {
        let text =
            "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3;e=1\r\nabc\r\n2\r\nde\r\n0\r\nT: 1\r\n\r\nGET /next"
        guard case .request(let r, let consumed) = frame(text) else {
            Issue.record("not framed: \(frame(text))")
            return
        }
        #expect(r.method == "POST" && r.target == "/a" && r.version == "HTTP/1.1")
        #expect(r.header("host") == "x")
        #expect(String(decoding: r.body, as: UTF8.self) == "abcde")
        #expect(consumed == text.utf8.count - "GET /next".utf8.count)
    }

    @Test func aRequestInsideALengthFramedBodyStaysBody() throws {
        let inner = "GET /hidden HTTP/1.1\r\nHost: x\r\n\r\n"
        let text = "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: \(inner.utf8.count)\r\n\r\n\(inner)"
        guard case .request(let r, let consumed) = frame(text) else {
            Issue.record("not framed")
            return
        }
        #expect(String(decoding: r.body, as: UTF8.self) == inner)
        #expect(consumed == text.utf8.count)
    }

    @Test func anUnfinishedRequestWaitsForMoreBytes() {
        for text in [
            "GET /a HTTP/1.1\r\nHost: x\r\n", "POST /a HTTP/1.1\r\nContent-Length: 5\r\n\r\nhel",
            "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n",
        ] {
            guard case .needMore = frame(text) else {
                Issue.record("\(text.debugDescription): \(frame(text))")
                continue
            }
        }
    }

    @Test(arguments: [
        "GET /a HTTP/1.1\nHost: x\r\n\r\n", "GET /a HTTP/1.1\r\nHost: x\r\n\rX", "GET /a HTTP/1.1\r\nFoo: a\0\r\n\r\n",
        "GET /a HTTP/1.1\r\nFoo: a\r\n b\r\n\r\n", "GET  /a HTTP/1.1\r\n\r\n", "GET /a HTTP/1.2\r\n\r\n",
        "GET /a HTTP/1.1\r\nFoo : a\r\n\r\n",
        "POST /a HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        "POST /a HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello",
        "POST /a HTTP/1.1\r\nContent-Length: +5\r\n\r\nhello",
        "POST /a HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
        "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcXY0\r\n\r\n",
        "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n 3\r\nabc\r\n0\r\n\r\n",
        "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0x3\r\nabc\r\n0\r\n\r\n",
    ])
    func whatAStrictServerRefusesIsMalformed(_ text: String) {
        guard case .malformed = frame(text) else {
            Issue.record("\(text.debugDescription) was not refused: \(frame(text))")
            return
        }
    }
}
