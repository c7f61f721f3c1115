import Foundation
import Gateway
import Testing

/// The pure parts of `authgate events` and `authgate status`: the SSE parser, the reconnect
/// policy, the event ids across restarts and the lines people read.
struct EventStreamClientTests {
    @Test func theParserReadsMessagesSplitAnywhere() {
        let text =
            "retry: 2000\r\n\r\n: heartbeat\n\nid: 7\nevent: refreshed\ndata: {\"a\":1}\n\nid: 8\r\nevent: logged_out\r\ndata: x\r\ndata:y\r\n\r\n"
        let whole = { () -> [EventStreamParser.Message] in
            var p = EventStreamParser()
            return p.feed(Array(text.utf8))
        }()
        #expect(
            whole == [
                .init(id: "7", event: "refreshed", data: #"{"a":1}"#), .init(id: "8", event: "logged_out", data: "x\ny"),
            ])
        // Byte by byte (a CR at the end of one piece, its LF in the next) reads the same.
        var p = EventStreamParser()
        var pieces: [EventStreamParser.Message] = []
        for b in Array(text.utf8) { pieces += p.feed([b]) }
        #expect(pieces == whole)
        #expect(p.lastEventID == "8")
        #expect(p.retryMilliseconds == 2000)
    }

    @Test func theParserKeepsAnIDWithoutDataAndIgnoresWhatTheStandardIgnores() {
        var p = EventStreamParser()
        #expect(p.feed(Array("id: 3\n\n".utf8)).isEmpty)
        #expect(p.lastEventID == "3")
        #expect(p.feed(Array("id: 4\u{0}\nretry: 1x\nfoo: bar\ndata\n\n".utf8)) == [.init(id: "3", event: "message", data: "")])
        #expect(p.retryMilliseconds == nil)
        var small = EventStreamParser(maxLineBytes: 8)
        #expect(small.feed(Array("data: 0123456789\n\n".utf8)).isEmpty)
        #expect(small.overflowed)
    }

    @Test func reconnectWaitsTheServersRetryThenBacksOffAndStopsOnRefusals() {
        var r = EventStreamReconnect()
        #expect(r.decide(status: nil, streamed: false, retryMilliseconds: nil) == .unreachable)
        #expect(r.decide(status: 200, streamed: true, retryMilliseconds: 2000) == .reconnect(after: .seconds(2)))
        #expect(r.decide(status: nil, streamed: false, retryMilliseconds: 2000) == .reconnect(after: .seconds(2)))
        #expect(r.decide(status: nil, streamed: false, retryMilliseconds: 2000) == .reconnect(after: .seconds(4)))
        #expect(r.decide(status: 503, streamed: false, retryMilliseconds: 2000) == .reconnect(after: .seconds(8)))
        for _ in 0..<40 { _ = r.decide(status: nil, streamed: false, retryMilliseconds: 2000) }
        #expect(r.decide(status: nil, streamed: false, retryMilliseconds: 2000) == .reconnect(after: .seconds(30)))
        #expect(r.decide(status: 200, streamed: true, retryMilliseconds: 500) == .reconnect(after: .milliseconds(500)))
        #expect(r.failures == 0)
        for status in [400, 401, 403, 404] {
            #expect(r.decide(status: status, streamed: false, retryMilliseconds: nil) == .stop(status: status))
        }
        #expect(r.decide(status: 429, streamed: false, retryMilliseconds: nil) == .reconnect(after: .seconds(2)))
    }

    @Test func eventIDsGrowAcrossRestartsAndAnEarlierRunsIDMeansTheStateNow() {
        let first = EventIDs(base: 1_000_000)
        let second = EventIDs(base: 2_000_000)
        #expect(first.sseID(5) == 1_000_005)
        #expect(first.broadcasterID(1_000_005) == 5)
        #expect(first.broadcasterID(1_000_000) == 0)
        #expect(second.broadcasterID(first.sseID(5)) == nil)
        #expect(second.sseID(1) > first.sseID(999))
        #expect(EventIDs().base > 1_700_000_000_000_000)
    }

    @Test func eachEventIsOneLineForPeople() {
        func line(_ json: String) -> String { EventLine.format(event: "x", data: json, session: "billing") }
        #expect(
            line(#"{"id":9,"type":"refreshed","at":"2026-01-01T00:00:00Z","generation":4,"persisted":true}"#)
                == "2026-01-01T00:00:00Z [billing] refreshed: token generation 4")
        #expect(
            line(#"{"id":9,"type":"refreshed","at":"T","generation":4,"persisted":false}"#)
                == "T [billing] refreshed: token generation 4 (held in memory only: saving it failed)")
        #expect(
            line(#"{"id":9,"type":"refresh_failed","at":"T","code":"transient","retry_after_seconds":5}"#)
                == "T [billing] refresh_failed: transient, next try in 5 s")
        #expect(
            line(
                #"{"id":9,"type":"logged_out","at":"T","reason":"refresh_rejected","detail":"refresh_rejected(invalid_grant)","epoch":2}"#
            )
                == "T [billing] logged_out: refresh_rejected (refresh_rejected(invalid_grant)), epoch 2")
        let session =
            #"{"account":"billing","state":"logged_in","subject":"bob","expires_at":"E","generation":1,"last_login":"L","guest":false,"epoch":1}"#
        #expect(
            line(#"{"id":9,"type":"logged_in","at":"T","session":\#(session)}"#)
                == "T [billing] logged_in: as bob, token generation 1, expires E")
        #expect(
            line(#"{"id":9,"type":"state","at":"T","session":\#(session)}"#)
                == "T [billing] state: logged_in as bob, token generation 1, expires E")
        #expect(EventLine.format(event: "message", data: "not json", session: "default") == "[default] message: not json")
    }

    @Test func statusSummarisesTheSessionDocument() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let json =
            #"{"account":"default","state":"logged_in","subject":"alice","expires_at":"2027-01-15T08:30:00Z","generation":3,"last_login":"2027-01-15T07:00:00Z","guest":false,"epoch":2}"#
        #expect(
            SessionSummary.format(json, now: now)
                == """
                session default: logged in as alice
                  token:      generation 3, expires 2027-01-15T08:30:00Z (in 30 min)
                  last login: 2027-01-15T07:00:00Z
                  epoch:      2
                """)
        #expect(
            SessionSummary.format(#"{"account":"default","state":"logged_out","subject":null,"guest":false,"epoch":0}"#, now: now)
                == "session default: logged out\n  epoch:      0")
        let exchanged = json.replacingOccurrences(
            of: #""epoch":2}"#, with: #""epoch":2,"issued_token_type":"urn:ietf:params:oauth:token-type:access_token"}"#)
        #expect(
            SessionSummary.format(exchanged, now: now)?.contains(
                "  token:      generation 3, expires 2027-01-15T08:30:00Z (in 30 min)\n"
                    + "  exchanged:  issued as urn:ietf:params:oauth:token-type:access_token\n") == true)
        #expect(SessionSummary.format("[]", now: now) == nil)
        let shared = #"{"account":"default","state":"logged_out","guest":false,"epoch":1,"store":"#
        #expect(
            SessionSummary.format(
                shared
                    + #"{"kind":"postgres","replica":"b/2/9","reachable":true,"lease":{"holder":"a/1/7","this_replica":false,"expires_in_seconds":2.5}}}"#,
                now: now)
                == "session default: logged out\n  epoch:      1\n  store:      postgres, replica b/2/9; refreshing now: a/1/7 (2.5 s left)"
        )
        #expect(
            SessionSummary.format(shared + #"{"kind":"postgres","replica":"b/2/9","reachable":false,"lease":null}}"#, now: now)?
                .hasSuffix("store:      postgres, replica b/2/9; the database does not answer") == true)
        #expect(
            SessionSummary.format(shared + #"{"kind":"file","replica":null,"reachable":true,"lease":null}}"#, now: now)?
                .hasSuffix("store:      file") == true)
    }
}
