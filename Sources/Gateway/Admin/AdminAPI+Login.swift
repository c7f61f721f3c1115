import AuthCore
import Foundation
import HTTPWire
import Runtime

extension AdminAPI {
    /// `POST /auth/login` with a JSON body naming a grant (``LoginRequest``). A body that is
    /// refused never reaches the session: the tokens it holds stay as they are.
    func login(_ session: GatewaySession, _ head: RequestHead, _ body: [UInt8], _ writer: ResponseWriter) async {
        do {
            let (grant, subject) = try LoginRequest.parse(contentTypes: head.headers[all: "content-type"], body: body)
            switch grant {
            case .grant(let g): try await session.actor.login(g, subject: subject)
            case .imported(let r): try await session.actor.login(importing: r, subject: subject)
            }
            json(writer, 200, await sessionDocument(session))
        } catch {
            problem(writer, error)
        }
    }
}
