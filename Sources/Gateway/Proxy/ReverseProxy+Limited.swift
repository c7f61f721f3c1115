import HTTPWire
import Runtime

/// Public routes that opted into their origin's adaptive in-flight limit
/// (`routes[].adaptiveLimit: true`): the same limit as the origin's authenticated routes, so
/// the API's capacity is shared in one queue; no token, so nothing to replay.
extension ReverseProxy {
    /// Sends a public request within `limiter`: at once from the loop when a slot is free
    /// and nobody waits, else after waiting for one in a task (or 503 `upstream-busy`).
    func sendPublic(_ request: HTTPRequest, _ r: RouteContext, _ limiter: InFlightLimiter) {
        if let inFlight = limiter.acquireWithoutWaiting() {
            sendPublic(request, r, limiter, inFlight: inFlight)
            return
        }
        // The task prefers the request's loop, so the send after the wait starts there.
        tasks.start(on: request.loop) {
            do throws(GatewayError) {
                let inFlight = try await limiter.acquire(.first, timeout: r.route.queueTimeout)
                self.sendPublic(request, r, limiter, inFlight: inFlight)
            } catch {
                r.end.finish(self.metrics, status: self.refuse(error, limiter, r.writer))
            }
        }
    }

    /// Sends a public request in a slot of `limiter` it holds (`inFlight`: the exchanges at
    /// the upstream then, itself included), from the request's loop.
    private func sendPublic(_ request: HTTPRequest, _ r: RouteContext, _ limiter: InFlightLimiter, inFlight: Int) {
        let metrics = self.metrics
        let end = r.end
        let sent = ContinuousClock.now
        start(request, r, token: nil) { outcome in
            let ended = ContinuousClock.now
            limiter.release(outcome, latency: ended - sent, inFlight: inFlight, at: ended)
            end.facts?.exchanged(outcome)
            end.finish(metrics, status: outcome.status, at: ended)
        }
    }

    /// Answers a request that got no slot of `limiter` (`failure`, the limiter's:
    /// ``GatewayError/Code/upstreamBusy``, ``GatewayError/Code/upstreamShed`` or
    /// ``GatewayError/Code/slotCancelled``); the status the client got.
    func refuse(_ failure: GatewayError, _ limiter: InFlightLimiter?, _ writer: ResponseWriter) -> Int {
        var h = HTTPHeaders()
        switch failure.code {
        case .upstreamBusy:
            metrics.upstreamShed(limiter, reason: "timeout")
            h.add(name: "Retry-After", value: String(failure.retryAfter ?? 1))
            writer.respond(problem: GatewayProblem.upstreamBusy, headers: h)
        case .upstreamShed:
            metrics.upstreamShed(limiter, reason: "expected_wait")
            h.add(name: "Retry-After", value: String(failure.retryAfter ?? 1))
            writer.respond(problem: GatewayProblem.upstreamBusyAtOnce, headers: h)
        default:
            // The client went away while waiting: nobody to answer.
            writer.abort()
            return 499
        }
        return 503
    }
}

extension InFlightLimiter {
    /// Gives back the slot of an exchange that ended with `outcome`, with what it teaches.
    func release(_ outcome: ExchangeOutcome, latency: Duration, inFlight: Int, at now: ContinuousClock.Instant) {
        if let sample = outcome.sample {
            release(AdaptiveLimit.Sample(latency: latency, inFlight: inFlight, outcome: sample), at: now)
        } else {
            release()
        }
    }
}
