import CCurl
import CLibUV
import Glibc

/// libcurl's sockets and timer on the client's loop: `uv_poll` per socket, one `uv_timer`.
extension UpstreamClient {
    func socketChanged(_ easy: UnsafeMutableRawPointer?, _ fd: curl_socket_t, _ what: Int32) {
        do throws(RuntimeError) {
            let poll: LoopPoll
            if let known = polls[fd] { poll = known } else { poll = try newPoll(fd) }
            if what == CURL_POLL_REMOVE {
                // libcurl keeps the connection (idle in its pool) or is about to close it.
                // Keep the handle, stopped, until the socket is really closed: reusing it
                // saves a handle, an ioctl and a close per request on a kept-alive connection.
                poll.stop()
                return
            }
            var events: Int32 = 0
            if what == CURL_POLL_IN || what == CURL_POLL_INOUT { events |= Int32(UV_READABLE.rawValue) }
            if what == CURL_POLL_OUT || what == CURL_POLL_INOUT { events |= Int32(UV_WRITABLE.rawValue) }
            try poll.start(events)
        } catch {
            // An error returned to libcurl would make the whole multi handle unusable: the
            // transfer that wanted the socket watched fails instead.
            guard let easy, let transfer = transfers[easy] else { return }
            transfer.cancel(.upstream(.upstreamFailed, "the upstream socket cannot be watched", underlying: error))
        }
    }

    func newPoll(_ fd: curl_socket_t) throws(RuntimeError) -> LoopPoll {
        let poll = try LoopPoll(loop: loop.uv, socket: fd) { [unowned self] status, events in
            var flags: Int32 = 0
            if status < 0 { flags |= CURL_CSELECT_ERR }
            if events & Int32(UV_READABLE.rawValue) != 0 { flags |= CURL_CSELECT_IN }
            if events & Int32(UV_WRITABLE.rawValue) != 0 { flags |= CURL_CSELECT_OUT }
            act(fd, flags)
        }
        polls[fd] = poll
        return poll
    }

    /// Closes the poll handle of `fd`; the socket is closed in its close callback when
    /// libcurl asked for that meanwhile (the descriptor-reuse rule).
    func closePoll(_ fd: Int32, _ poll: LoopPoll) {
        closingPolls[fd] = true
        // The closure keeps the client alive until the handle is closed.
        poll.close { [self] in
            if closingPolls.removeValue(forKey: fd) == true { Glibc.close(fd) }
        }
    }

    /// libcurl wants to close `fd`: defer it while its poll handle is still open or closing.
    func closeSocket(_ fd: curl_socket_t) {
        if let poll = polls.removeValue(forKey: fd) {
            closePoll(fd, poll)
        } else if closingPolls[fd] != nil {
            closingPolls[fd] = true
        } else {
            Glibc.close(fd)
        }
    }

    func timerChanged(_ ms: Int) {
        guard let timer else { return }
        if ms < 0 {
            timer.stop()
            return
        }
        do throws(RuntimeError) {
            try timer.start(after: UInt64(ms))
        } catch {
            // Only a closing timer refuses, and it closes with the client; libcurl must
            // not be told (that would make the multi handle unusable).
            precondition(closed, "the upstream client's timer refused to start: \(error)")
        }
    }

    func act(_ fd: curl_socket_t, _ flags: Int32) {
        guard !closed, let multi else { return }
        do throws(RuntimeError) {
            try inCurl { () throws(RuntimeError) in try multi.socketAction(fd, flags) }
        } catch {
            // libcurl's state is in doubt: no transfer can be trusted to finish.
            for transfer in Array(transfers.values) {
                detach(transfer)
                transfer.finish(.upstream(.upstreamFailed, "libcurl failed", underlying: error))
            }
            return
        }
        reapCompleted()
    }
}
