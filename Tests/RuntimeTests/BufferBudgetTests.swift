import Foundation
import HTTPWire
import Runtime
import TestSupport
import Testing

/// Request bodies buffered in memory are bounded across connections: past the shared budget
/// a request gets 503 problem+json, and every byte is given back when its exchange ends.
@Suite(.serialized) struct BufferBudgetTests {
    @Test func reserveRefusesWhatDoesNotFitAndTakesNothing() {
        let budget = BufferBudget(limit: 100)
        #expect(budget.reserve(60))
        #expect(!budget.reserve(41))
        #expect(budget.inUse == 60)
        #expect(budget.reserve(40))
        budget.release(100)
        #expect(budget.inUse == 0)
    }

    @Test func concurrentReservationsNeverExceedTheLimit() async {
        let budget = BufferBudget(limit: 1_000)
        let taken = await onThreads(8) { _ in
            var mine = 0
            for _ in 0..<10_000 where budget.reserve(7) {
                mine += 7
                #expect(budget.inUse <= 1_000)
                budget.release(7)
                mine -= 7
            }
            return mine
        }
        #expect(taken.allSatisfy { $0 == 0 })
        #expect(budget.inUse == 0)
    }

    @Test func aBodyPastTheSharedBudgetGets503AndTheBudgetComesBack() async throws {
        let budget = BufferBudget(limit: 100_000)
        var c = HTTPServerConfiguration()
        c.bufferBudget = budget
        try await TestServer.with(c) { server in
            let port = server.port
            // A holds 80,000 bytes of a 90,000-byte body, unfinished.
            let a = try RawClient(port: port)
            try a.send("POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 90000\r\n\r\n")
            try a.send([UInt8](repeating: 0x61, count: 80_000))
            #expect(await eventually { budget.inUse == 80_000 })
            // B's 50,000 bytes do not fit next to A's.
            let b = try await onThread { () -> TestResponse in
                let b = try RawClient(port: port)
                try b.send("POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 50000\r\n\r\n")
                try? b.send([UInt8](repeating: 0x62, count: 50_000))
                return try b.readResponse()
            }
            #expect(b.status == 503)
            #expect(b.header("content-type") == Problem.contentType)
            #expect(b.text.contains("overloaded"))
            #expect(b.header("connection") == "close")
            // A is served in full, then everything it held is given back.
            try a.send([UInt8](repeating: 0x61, count: 10_000))
            let answer = try a.readResponse()
            #expect(answer.status == 200)
            #expect(answer.body.count == 90_000)
            #expect(await eventually { budget.inUse == 0 })
            // Now the same 50,000 bytes fit.
            let c = try await onThread { () -> TestResponse in
                let c = try RawClient(port: port)
                try c.send("POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 50000\r\n\r\n")
                try c.send([UInt8](repeating: 0x63, count: 50_000))
                return try c.readResponse()
            }
            #expect(c.status == 200)
        }
    }

    @Test func aClientThatLeavesMidBodyGivesItsBytesBack() async throws {
        let budget = BufferBudget(limit: 1 << 20)
        var c = HTTPServerConfiguration()
        c.bufferBudget = budget
        try await TestServer.with(c) { server in
            do {
                let a = try RawClient(port: server.port)
                try a.send("POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 500000\r\n\r\n")
                try a.send([UInt8](repeating: 0x61, count: 200_000))
                #expect(await eventually { budget.inUse == 200_000 })
            }
            // The client is gone (its socket closed when it went out of scope).
            #expect(await eventually { budget.inUse == 0 })
        }
    }
}
