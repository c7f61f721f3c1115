extension ProxySettings {
    /// The in-flight limits of `routes`, by route prefix. Every adaptive route
    /// (``ProxyRoute/isAdaptive``) of an origin shares one ``InFlightLimiter`` whose
    /// ``AdaptiveLimit`` grows at most to the smallest `maxInFlight` among them (if any);
    /// a route with `maxInFlight` and not adaptive has a fixed limiter of its own. A public
    /// route is bounded only when it opted into its origin's adaptive limit.
    static func limiters(for routes: [ProxyRoute]) -> [String: InFlightLimiter] {
        var caps: [String: Int] = [:]
        for r in routes where r.isAdaptive {
            let origin = r.upstream.urlPrefix
            caps[origin] = min(caps[origin] ?? AdaptiveLimit.Parameters().maximum, r.maxInFlight ?? .max)
        }
        var shared: [String: InFlightLimiter] = [:]
        var limiters: [String: InFlightLimiter] = [:]
        for r in routes where r.requiresAuthentication || r.isAdaptive {
            let origin = r.upstream.urlPrefix
            if r.isAdaptive {
                let limiter =
                    shared[origin]
                    ?? InFlightLimiter(
                        AdaptiveLimit.Parameters(maximum: caps[origin] ?? AdaptiveLimit.Parameters().maximum),
                        timeout: r.queueTimeout, origin: origin)
                shared[origin] = limiter
                limiters[r.prefix] = limiter
            } else if let limit = r.maxInFlight {
                limiters[r.prefix] = InFlightLimiter(limit: limit, timeout: r.queueTimeout, origin: origin, route: r.prefix)
            }
        }
        return limiters
    }

    /// `fresh` (by route prefix) with each limiter that takes over a running one of
    /// `previous` (the same origin and route label, found under one of its prefixes)
    /// replaced by that one, reconfigured: the exchanges it counts and queues stay counted
    /// across the reload, and an adaptive limit keeps what it learnt when its bounds stay.
    static func succeeding(_ fresh: [String: InFlightLimiter], _ previous: [String: InFlightLimiter]) -> [String: InFlightLimiter]
    {
        // First which running limiter each new one takes over (found under any of its
        // prefixes), then every prefix of the new one gets it.
        var taken: [ObjectIdentifier: InFlightLimiter] = [:]
        for (prefix, new) in fresh where taken[ObjectIdentifier(new)] == nil {
            guard let old = previous[prefix], old.origin == new.origin, old.route == new.route else { continue }
            old.reconfigure(new.parameters, timeout: new.timeout)
            taken[ObjectIdentifier(new)] = old
        }
        var result = fresh
        for (prefix, new) in fresh {
            if let old = taken[ObjectIdentifier(new)] { result[prefix] = old }
        }
        return result
    }

    /// Each in-flight limit's readings, once each.
    var upstreamLimits: [GatewayMetrics.UpstreamLimitReading] {
        var seen: Set<ObjectIdentifier> = []
        return limiters.values.filter { seen.insert(ObjectIdentifier($0)).inserted }.map(\.reading)
            .sorted { ($0.origin, $0.route) < ($1.origin, $1.route) }
    }
}
