import Foundation

/// What a reload does, decided from the running configuration and a new, valid one (and the
/// secrets each names): which fields take their new value at once, which changed but keep
/// their old value until a restart, which secrets rotated — or why the new configuration is
/// refused. Pure: no file, no socket (`ReloadPlanTests`).
///
/// ```swift
/// let plan = try ReloadPlan.decide(running: old, new: new, runningSecrets: s, newSecrets: s2)
/// plan.applied          // ["routes[1]", "upstreamTimeoutSeconds"]
/// plan.restartRequired  // ["proxy.port"]: reported, not applied
/// ```
///
/// Fields are compared as the configuration encodes them, leaf by leaf, so a field added to
/// ``GatewayConfiguration`` is covered without a change here: it needs a restart unless it is
/// listed in ``reloadableFields``.
public struct ReloadPlan: Sendable, Equatable, Codable {
    /// Changed fields whose new value takes effect now (JSON paths, `routes[1].upstream`).
    public var applied: [String]
    /// Changed fields that keep their running value until the process restarts (listeners,
    /// store, loops, state directory, sessions and their authorization servers, …).
    public var restartRequired: [String]
    /// The secret files whose contents changed (`adminTokenFile`,
    /// `authorization.clientSecretFile`, `sessions[NAME].authorization.clientSecretFile`); the
    /// new secrets are used from now on. Never the secrets themselves.
    public var rotatedSecrets: [String]

    /// Whether nothing changed at all.
    public var isEmpty: Bool { applied.isEmpty && restartRequired.isEmpty && rotatedSecrets.isEmpty }

    /// Whether the upstream clients must be made anew (their timeouts or CA bundle changed).
    public var needsNewUpstreamClients: Bool {
        applied.contains { Self.field($0, isUnder: ["connectTimeoutSeconds", "upstreamTimeoutSeconds", "caFile"]) }
    }

    /// Whether the token endpoint's client must be made anew (its timeouts or CA bundle changed).
    public var needsNewTokenClient: Bool {
        applied.contains { Self.field($0, isUnder: ["connectTimeoutSeconds", "tokenEndpointTimeoutSeconds", "caFile"]) }
    }

    /// The top-level fields a reload applies; every other field needs a restart.
    /// `authorization.clientSecretFile` and each session's are reloadable too.
    public static let reloadableFields: Set<String> = [
        "routes", "upstreamRejection", "maxReplays", "replayLimitBytes", "connectTimeoutSeconds", "upstreamTimeoutSeconds",
        "tokenEndpointTimeoutSeconds", "upgradeIdleTimeoutSeconds", "caFile", "adminTokenFile", "adminTokenDisabled",
        "trustForwardedFrom",
        "proxyLivenessPath", "accessLog",
    ]

    /// Creates a plan from its parts.
    public init(applied: [String] = [], restartRequired: [String] = [], rotatedSecrets: [String] = []) {
        self.applied = applied
        self.restartRequired = restartRequired
        self.rotatedSecrets = rotatedSecrets
    }

    /// The plan for replacing `running` (served with `runningSecrets`) by `new` (whose secret
    /// files hold `newSecrets`). Both configurations have passed ``GatewayConfiguration/validate()``.
    ///
    /// Throws a ``GatewayError`` naming the field when the new configuration cannot be
    /// served by the running process even in part: a route naming a session the process does
    /// not run (adding a session needs a restart), or a configuration that is invalid *as it
    /// would run* (``effective(running:new:)``): `adminTokenDisabled: true` beside an admin
    /// socket that stays `0660` until a restart, an `http://` route beside an
    /// `allowInsecureHTTP` that stays off. A reload never leaves the process more exposed than
    /// a restart with the same file would.
    public static func decide(
        running: GatewayConfiguration, new: GatewayConfiguration, runningSecrets: GatewayService.Secrets,
        newSecrets: GatewayService.Secrets
    ) throws(GatewayError) -> ReloadPlan {
        let runningSessions = Set(running.allSessions.map(\.name))
        for (i, route) in new.routes.enumerated() where route.requiresAuthentication ?? true {
            let name = route.session ?? GatewayConfiguration.defaultSession
            guard runningSessions.contains(name) else {
                throw .at(
                    "routes[\(i)].session", .unsupported, "the session \(name) is not running; adding a session needs a restart")
            }
        }
        do {
            try effective(running: running, new: new).validate()
        } catch {
            throw GatewayError(
                error.code, field: error.field,
                "\(error.message) (as the process would run after this reload: fields that need a restart keep their running values)",
                underlying: error, source: error.source)
        }
        var plan = ReloadPlan()
        for path in changedFields(running, new) {
            if isReloadable(path) { plan.applied.append(path) } else { plan.restartRequired.append(path) }
        }
        if runningSecrets.adminToken != newSecrets.adminToken { plan.rotatedSecrets.append("adminTokenFile") }
        if runningSecrets.clientSecret != newSecrets.clientSecret {
            plan.rotatedSecrets.append("authorization.clientSecretFile")
        }
        for name in Set(runningSecrets.sessionClientSecrets.keys).union(newSecrets.sessionClientSecrets.keys).sorted()
        where runningSessions.contains(name)
            && runningSecrets.sessionClientSecrets[name] != newSecrets.sessionClientSecrets[name]
        {
            plan.rotatedSecrets.append("sessions[\(name)].authorization.clientSecretFile")
        }
        return plan
    }

    /// The configuration the process runs after reloading `new` over `running`: the fields a
    /// reload applies at their new values, every other field at its running value. This is
    /// what a reload is validated as and what it applies.
    public static func effective(running: GatewayConfiguration, new: GatewayConfiguration) -> GatewayConfiguration {
        new.keepingRestartFields(of: running)
    }

    /// Whether a change at `path` is applied by a reload.
    static func isReloadable(_ path: String) -> Bool {
        let top = String(path.prefix { $0 != "." && $0 != "[" })
        if reloadableFields.contains(top) { return true }
        // A session's secret file: the session itself stays (its name and server did not change).
        if path == "authorization.clientSecretFile" { return true }
        if top == "sessions", path.hasSuffix("].authorization.clientSecretFile") { return true }
        return false
    }

    /// Whether `path` is one of `fields` or inside one.
    static func field(_ path: String, isUnder fields: [String]) -> Bool {
        fields.contains { path == $0 || path.hasPrefix($0 + ".") || path.hasPrefix($0 + "[") }
    }

    /// The JSON paths at which `a` and `b` differ, leaf by leaf (an array that changed length
    /// is one path; a member present in one only is one path).
    static func changedFields(_ a: GatewayConfiguration, _ b: GatewayConfiguration) -> [String] {
        guard let x = try? document(a), let y = try? document(b) else {
            // Cannot happen (both encode); treat everything as changed rather than nothing.
            return ["(configuration)"]
        }
        var out: [String] = []
        diff(x, y, at: "", into: &out)
        return out
    }

    private static func document(_ c: GatewayConfiguration) throws -> JSONValue {
        try StrictJSON.parse(Array(JSONEncoder().encode(c)))
    }

    private static func diff(_ a: JSONValue, _ b: JSONValue, at path: String, into out: inout [String]) {
        switch (a, b) {
        case (.object(let x), .object(let y)):
            var names = x.map(\.name)
            for m in y where !names.contains(m.name) { names.append(m.name) }
            for name in names.sorted() {
                let here = path.isEmpty ? name : "\(path).\(name)"
                diff(a[name] ?? .null, b[name] ?? .null, at: here, into: &out)
            }
        case (.array(let x), .array(let y)) where x.count == y.count:
            for (i, (u, v)) in zip(x, y).enumerated() { diff(u, v, at: "\(path)[\(i)]", into: &out) }
        default:
            if a != b { out.append(path) }
        }
    }
}
