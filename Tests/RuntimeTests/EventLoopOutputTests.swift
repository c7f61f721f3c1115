import Glibc
import Runtime
import TestSupport
import Testing

/// Output a loop batches: what one turn appends leaves in one `write(2)` per descriptor, in
/// order; nothing is lost at shutdown. Seen through a datagram socket pair, where each
/// write is one datagram.
@Suite struct EventLoopOutputTests {
    /// A Unix datagram socket pair: (write end, read end).
    func pair() throws -> (Int32, Int32) {
        var fds: [Int32] = [0, 0]
        try #require(socketpair(AF_UNIX, datagramSocketType, 0, &fds) == 0)
        return (fds[0], fds[1])
    }

    /// The datagrams waiting on `fd`, each as text.
    func datagrams(_ fd: Int32) -> [String] {
        var out: [String] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if n <= 0 { return out }
            out.append(String(decoding: buffer[0..<n], as: UTF8.self))
        }
    }

    @Test func oneTurnsLinesLeaveInOneWriteInOrder() async throws {
        let (w, r) = try pair()
        defer {
            close(w)
            close(r)
        }
        let loop = try EventLoop(name: "output")
        loop.start()
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            loop.execute {
                #expect(EventLoop.current === loop)
                for line in ["a\n", "b\n", "c\n"] { loop.appendOutput(Array(line.utf8), to: w) }
                done.resume()
            }
        }
        // The next turn appends on its own.
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            loop.execute {
                loop.appendOutput(Array("d\n".utf8), to: w)
                done.resume()
            }
        }
        // The next turn's write is in flight: gather until both are in.
        var got: [String] = []
        _ = await eventually {
            got += datagrams(r)
            return got.count >= 2
        }
        #expect(got == ["a\nb\nc\n", "d\n"])
        loop.shutdown()
        #expect(EventLoop.current == nil, "not a loop thread")
    }

    @Test func whatTheLastJobsAppendIsWrittenAtShutdown() throws {
        let (w, r) = try pair()
        defer {
            close(w)
            close(r)
        }
        let loop = try EventLoop(name: "output")
        loop.start()
        loop.execute { loop.appendOutput(Array("first\n".utf8), to: w) }
        loop.execute { loop.appendOutput(Array("last\n".utf8), to: w) }
        loop.shutdown()
        #expect(datagrams(r).joined() == "first\nlast\n")
    }
}
