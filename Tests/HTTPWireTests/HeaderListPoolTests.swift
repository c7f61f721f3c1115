import Foundation
import Testing

@testable import HTTPWire

/// Spare header lists: a list handed back after its head is written serves the next message
/// on the same thread without an allocation, and no copy of a handed-back list ever changes.
struct HeaderListPoolTests {
    /// Empties this thread's pool (other tests on the thread may have left lists in it).
    func drained() -> HeaderListPool {
        let pool = HeaderListPool.current
        while pool.take() != nil {}
        return pool
    }

    func lines(_ h: HTTPHeaders) -> UnsafePointer<UInt8>? {
        h.storage.withUnsafeBufferPointer { $0.baseAddress }
    }

    func sample() -> HTTPHeaders {
        var h = HTTPHeaders()
        h.reserveCapacity(16, bytes: 512)
        h.add(name: "Content-Type", value: "text/plain")
        h.add(name: "X-Request-Id", value: "abc")
        return h
    }

    @Test func aListHandedBackServesTheNextMessageWithItsOwnStorageEmptied() {
        _ = drained()
        var h: HTTPHeaders? = sample()
        let storage = lines(h!)
        h!.recycle()
        h = nil  // the writer's copy goes away after the head is written
        var next = HTTPHeaders.pooled(fields: 16, bytes: 512)
        #expect(next.count == 0)
        #expect(next[first: "content-type"] == nil, "the name filter starts empty too")
        #expect(next.storageCapacity >= 512)
        next.add(name: "Host", value: "example.test")
        #expect(lines(next) == storage, "the same buffer, not a new one")
        #expect(next.fields.map(\.name) == ["Host"])
    }

    @Test func aCopyOfAHandedBackListKeepsItsFieldsWhateverTheNextMessageWrites() {
        _ = drained()
        let kept = sample()
        kept.recycle()  // still held below: shared when it is taken
        var next = HTTPHeaders.pooled(fields: 16, bytes: 512)
        next.add(name: "Authorization", value: "Bearer x")
        #expect(kept.fields.map(\.name) == ["Content-Type", "X-Request-Id"])
        #expect(kept[first: "x-request-id"] == "abc")
        #expect(lines(next) != lines(kept))
    }

    @Test func aParsedRequestsFieldsAreItsAloneSoTheirStorageIsReusedOnceAnswered() {
        _ = drained()
        let parser = RequestParser()
        let bytes = Array("GET /a HTTP/1.1\r\nHost: example.test\r\nAccept: */*\r\n\r\n".utf8)
        var head: RequestHead?
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while head == nil, offset < raw.count {
                let (event, used) = parser.parse(UnsafeRawBufferPointer(rebasing: raw[offset...]))
                offset += used
                if case .head(let h) = event { head = h }
                if used == 0 { break }
            }
        }
        #expect(head?.headers[first: "host"] == "example.test")
        let storage = head.map { lines($0.headers) } ?? nil
        head?.headers.recycle()  // the request is answered
        head = nil
        var next = HTTPHeaders.pooled(fields: 16, bytes: 512)
        next.add(name: "Via", value: "1.1 authgate")
        #expect(lines(next) == storage, "the parser kept no reference to the request's fields")
    }

    @Test func thePoolKeepsSoManyListsAndNoHugeOne() {
        let pool = drained()
        var huge = HTTPHeaders()
        huge.add(name: "X-Big", value: String(repeating: "a", count: HeaderListPool.largestKept + 1))
        huge.recycle()
        #expect(pool.count == 0, "a list past the size kept is let go")
        for _ in 0..<(HeaderListPool.capacity + 5) { sample().recycle() }
        #expect(pool.count == HeaderListPool.capacity)
        _ = drained()
    }

    @Test func eachThreadHasItsOwnSpares() {
        _ = drained()
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            for _ in 0..<3 { sample().recycle() }
            #expect(HeaderListPool.current.count == 3)
            done.signal()
        }
        thread.start()
        done.wait()
        #expect(HeaderListPool.current.count == 0, "another thread's lists are its own")
    }
}
