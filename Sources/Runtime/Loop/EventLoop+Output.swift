import Glibc

extension EventLoop {
    /// The loop whose thread the caller runs on, if any.
    public static var current: EventLoop? {
        pthread_getspecific(currentKey).map { Unmanaged<EventLoop>.fromOpaque($0).takeUnretainedValue() }
    }

    /// Appends `bytes` to what this loop writes to descriptor `fd` once the I/O of its current
    /// turn has been handled: one `write(2)` per descriptor per turn, however many lines the
    /// turn's requests produced (access-log lines to standard error). What the last jobs
    /// append is written when the loop shuts down. Call on the loop thread.
    public func appendOutput(_ bytes: [UInt8], to fd: Int32) {
        precondition(inEventLoop)
        if outputCheck == nil {
            do throws(RuntimeError) {
                let check = try LoopCheck(loop: uv) { [unowned self] in flushOutput() }
                try check.start()
                outputCheck = check
            } catch {
                // No check handle (out of memory): written now, as without batching.
                Self.writeAll(fd, bytes)
                return
            }
        }
        if let i = pendingOutput.firstIndex(where: { $0.fd == fd }) {
            pendingOutput[i].bytes.append(contentsOf: bytes)
        } else {
            pendingOutput.append((fd, bytes))
        }
    }

    /// Writes what the turn appended, one call per descriptor.
    func flushOutput() {
        for i in pendingOutput.indices where !pendingOutput[i].bytes.isEmpty {
            Self.writeAll(pendingOutput[i].fd, pendingOutput[i].bytes)
            pendingOutput[i].bytes.removeAll(keepingCapacity: true)
        }
    }

    /// Writes all of `bytes` to `fd`, retrying after signals and short writes; gives up on
    /// any other error (a closed standard error has no one to tell).
    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if n > 0 {
                    offset += n
                } else if n < 0 && (errno == EINTR || errno == EAGAIN) {
                    if errno == EAGAIN { usleep(1000) }
                } else {
                    return
                }
            }
        }
    }
}
