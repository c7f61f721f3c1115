import AuthCore
import Logging

extension GatewayService {
    /// The `autoLogin` follower of every session that has one, with its session's actor.
    static func autoLogins(
        _ c: GatewayConfiguration, sessions: [String: GatewaySession], clock: any AuthClock, logger: Logger
    ) -> [(SessionAutoLogin, AuthActor)] {
        c.allSessions.compactMap { s in
            guard let settings = s.authorization.autoLogin, let actor = sessions[s.name]?.actor else { return nil }
            var sessionLogger = logger
            sessionLogger[metadataKey: "auth.session"] = "\(s.name)"
            return (SessionAutoLogin(method: settings.method, session: actor, clock: clock, logger: sessionLogger), actor)
        }
    }

    /// Starts each follower on its session's events; the tasks end when the events do.
    static func follow(_ autoLogins: [(SessionAutoLogin, AuthActor)]) -> [Task<Void, Never>] {
        autoLogins.map { autoLogin, actor in
            let events = actor.events.subscribe()
            return Task { await autoLogin.follow(events) }
        }
    }
}
