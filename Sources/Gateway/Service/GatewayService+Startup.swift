import AuthCore
import Logging

extension GatewayService {
    /// What a gateway starts from: the configuration and secrets, and the few things a
    /// caller may supply instead of the defaults (a clock, the sessions' base timing, where
    /// a reload reads from, the access log, where a shared store's connections run).
    struct Startup: Sendable {
        var configuration: GatewayConfiguration
        var secrets: Secrets
        var logger: Logger
        var clock: any AuthClock = SystemAuthClock()
        var sessionConfiguration: AuthActor.Configuration?
        var reloadSource: GatewayReloader.Source?
        var accessLogger: Logger
        var storeRunner: StoreRunner?
        /// Applied to the stores once opened, before any session uses them (tests wrap them
        /// to hold or fail their writes).
        var adaptStores: @Sendable (GatewayStores) -> GatewayStores = { $0 }
    }
}
