import Foundation

/// An admin API document as a client reads it: an event's `data` (``EventDocument``) or a
/// session document (``SessionDocument``), every member optional, for the `authgate`
/// client commands' human output.
struct AdminEventPayload: Decodable, Sendable, Equatable {
    struct Session: Decodable, Sendable, Equatable {
        var account: String?
        var state: String?
        var subject: String?
        var expiresAt: String?
        var generation: UInt64?
        var lastLogin: String?
        var guest: Bool?
        var epoch: UInt64?
        var registration: String?
        var store: StoreDocument?
        var dpopJKT: String?
        var deviceAuthorization: DeviceAuthorizationDocument?
        var issuedTokenType: String?

        /// The member names ``SessionDocument`` writes.
        typealias CodingKeys = SessionDocument.CodingKeys
    }

    var id: UInt64?
    var type: String?
    var at: String?
    var session: Session?
    var generation: UInt64?
    var persisted: Bool?
    var code: String?
    var retryAfterSeconds: Int64?
    var reason: String?
    var detail: String?
    var epoch: UInt64?
    var deviceAuthorization: DeviceAuthorizationDocument?

    /// The member names ``EventDocument`` writes.
    typealias CodingKeys = EventDocument.CodingKeys

    /// `text` decoded, or nil when it is not such a JSON object.
    static func decode(_ text: String) -> AdminEventPayload? {
        try? JSONDecoder().decode(AdminEventPayload.self, from: Data(text.utf8))
    }

    /// `text` as a session document, or nil.
    static func decodeSession(_ text: String) -> Session? {
        try? JSONDecoder().decode(Session.self, from: Data(text.utf8))
    }
}
