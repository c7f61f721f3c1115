import HTTPWire
import Runtime

/// The answer to `POST /auth/reload`: what the reload applied and what waits for a restart.
struct ReloadDocument: Codable, Sendable, Equatable {
    /// How many reloads this process has applied, this one included.
    var reload: Int
    /// Changed fields now in effect.
    var applied: [String]
    /// Changed fields that keep their running value until a restart.
    var restartRequired: [String]
    /// Secret files whose contents changed (never the secrets).
    var rotatedSecrets: [String]
}

extension AdminAPI {
    /// `POST /auth/reload`: 200 with a ``ReloadDocument``; 422 `invalid-configuration` with the
    /// `field` at fault when the new configuration is refused (the running one keeps serving);
    /// 409 `reload-unavailable` when the gateway has no configuration source.
    func reload(_ writer: ResponseWriter) async {
        guard let reloader, reloader.canReload else {
            writer.respond(problem: GatewayProblem.make("reload-unavailable", 409, GatewayError.reloadUnavailable.description))
            return
        }
        do throws(GatewayError) {
            let plan = try await reloader.reload()
            json(
                writer, 200,
                ReloadDocument(
                    reload: await reloader.generation, applied: plan.applied, restartRequired: plan.restartRequired,
                    rotatedSecrets: plan.rotatedSecrets))
        } catch {
            guard error.code == .reloadRefused else {
                writer.respond(problem: GatewayProblem.make("reload-unavailable", 409, error.description))
                return
            }
            let extensions = error.configurationError?.field.map { [("field", Problem.quote($0))] } ?? []
            writer.respond(
                problem: GatewayProblem.make(
                    "invalid-configuration", 422,
                    "the new configuration is refused and the running one keeps serving: \(error)", extensions))
        }
    }
}
