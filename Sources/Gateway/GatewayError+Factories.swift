extension GatewayError {
    // MARK: A slot at a bounded upstream

    /// No slot at the upstream came in time; try again after `retryAfter` whole seconds
    /// (``Code/upstreamBusy``).
    public static func upstreamBusy(retryAfter: Int) -> GatewayError {
        GatewayError(
            .upstreamBusy, "the upstream is at its in-flight limit and no slot came in time; retry after \(retryAfter) s",
            retryAfter: retryAfter)
    }

    /// The queue for the upstream is longer than the request may wait: refused at once; try
    /// again after `retryAfter` whole seconds (``Code/upstreamShed``).
    public static func upstreamShed(retryAfter: Int) -> GatewayError {
        GatewayError(
            .upstreamShed,
            "the upstream is at its in-flight limit and its queue is longer than the request may wait; retry after \(retryAfter) s",
            retryAfter: retryAfter)
    }

    /// The wait for a slot at the upstream was cancelled (``Code/slotCancelled``).
    public static let slotCancelled = GatewayError(.slotCancelled, "the wait for a slot at the upstream was cancelled")

    // MARK: An authenticated exchange

    /// The session gave no token to start the exchange with; `error` is why (``Code/noToken``).
    public static func noToken(_ error: any Error) -> GatewayError {
        GatewayError(.noToken, "the session gave no token for the exchange", underlying: error)
    }

    /// The refresh a replay needed failed; `error` is why (``Code/replayRefreshFailed``).
    public static func replayRefreshFailed(_ error: any Error) -> GatewayError {
        GatewayError(.replayRefreshFailed, "the refresh a replay needed failed", underlying: error)
    }

    // MARK: A reload

    /// The new configuration is refused; the message is `error`'s, which names the field
    /// (``Code/reloadRefused``).
    public static func reloadRefused(_ error: GatewayError) -> GatewayError {
        GatewayError(.reloadRefused, error.description, underlying: error)
    }

    /// There is no configuration source to reload from (``Code/reloadUnavailable``).
    public static let reloadUnavailable = GatewayError(
        .reloadUnavailable,
        "this gateway was not started from a configuration file or environment; nothing to reload from")

    // MARK: Issuer discovery

    /// The provider's answer cannot be used; `message` names the configuration field
    /// (``Code/issuerUnusable``).
    public static func issuerUnusable(_ message: String, underlying: (any Error & Sendable)? = nil) -> GatewayError {
        GatewayError(.issuerUnusable, message, underlying: underlying)
    }

    /// The provider did not answer in time; `message` names the configuration field
    /// (``Code/issuerUnreachable``).
    public static func issuerUnreachable(_ message: String) -> GatewayError {
        GatewayError(.issuerUnreachable, message)
    }

    // MARK: The admin API's client

    /// `the admin API answered <status>: <body>`: a refusal for good (``Code/adminRefused``).
    public static func adminRefused(status: Int, body: String) -> GatewayError {
        GatewayError(.adminRefused, "the admin API answered \(status): \(body)", status: status, body: body)
    }

    /// `the admin API cannot be reached: <reason>` (``Code/adminUnreachable``); `reason` is
    /// a few words, never a token.
    public static func adminUnreachable(_ reason: String) -> GatewayError {
        GatewayError(.adminUnreachable, "the admin API cannot be reached: \(reason)")
    }
}
