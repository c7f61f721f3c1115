import AuthCore
import Foundation
import HTTPWire
import Runtime

extension AdminAPI {
    /// `POST /auth/login` with a JSON body naming a grant (``LoginRequest``). A body that is
    /// refused never reaches the session: the tokens it holds stay as they are.
    ///
    /// A device login (RFC 8628) is answered `202` as soon as the user code is known
    /// (``DeviceAuthorizationDocument``); the session polls in the background and publishes
    /// `logged_in`, or `device_login_ended` with the reason. A second one while the first
    /// waits is `409 device-login-pending`, naming the pending user code.
    func login(_ session: GatewaySession, _ head: RequestHead, _ body: [UInt8], _ writer: ResponseWriter) async {
        do {
            let (grant, subject) = try LoginRequest.parse(contentTypes: head.headers[all: "content-type"], body: body)
            switch grant {
            case .grant(let g): try await session.actor.login(g, subject: subject)
            case .imported(let r): try await session.actor.login(importing: r, subject: subject)
            case .device(let scope):
                guard session.deviceLogin else {
                    throw AdminRequestError(
                        .unsupportedGrantType,
                        "this session has no device authorization endpoint (authorization.deviceAuthorizationEndpoint, "
                            + "or an issuer whose discovery names device_authorization_endpoint)",
                        field: "grant_type")
                }
                let status = try await session.actor.startDeviceLogin(scope: scope, subject: subject)
                json(writer, 202, DeviceAuthorizationDocument(status, now: session.actor.wallNow))
                return
            }
            json(writer, 200, await sessionDocument(session))
        } catch let error as AuthError where error.code == .deviceLoginPending {
            await devicePending(session, writer)
        } catch {
            problem(writer, error)
        }
    }

    /// `409 device-login-pending`, with the waiting login's user code, verification URI and
    /// expiry (none of them secret) so that a script can show them again.
    private func devicePending(_ session: GatewaySession, _ writer: ResponseWriter) async {
        var extensions: [(String, String)] = []
        if let pending = await session.actor.status.deviceAuthorization {
            let d = DeviceAuthorizationDocument(pending)
            extensions = [("user_code", Problem.quote(d.userCode)), ("verification_uri", Problem.quote(d.verificationURI))]
            if let e = d.expiresAt { extensions.append(("expires_at", Problem.quote(e))) }
        }
        writer.respond(
            problem: GatewayProblem.make(
                "device-login-pending", 409,
                "a device login is already waiting for approval; finish it, or cancel it with POST /auth/logout",
                extensions))
    }
}
