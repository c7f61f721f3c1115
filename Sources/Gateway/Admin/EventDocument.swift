import AuthCore
import Foundation

/// One ``AuthEventRecord`` as the `data:` of a Server-Sent Events message: `id`, `type`,
/// `at` and the members of its kind. Holds no token.
struct EventDocument: Encodable, Sendable {
    let record: AuthEventRecord
    /// The id the client sees (``EventIDs/sseID(_:)``); the record's own by default.
    let id: UInt64

    init(_ record: AuthEventRecord, id: UInt64? = nil) {
        self.record = record
        self.id = id ?? record.id
    }

    /// The member names, shared with the reader (``AdminEventPayload``).
    enum CodingKeys: String, CodingKey {
        case id, type, at, session, generation, persisted, code
        case retryAfterSeconds = "retry_after_seconds"
        case reason, detail, epoch
        case deviceAuthorization = "device_authorization"
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(record.event.name, forKey: .type)
        try c.encode(AdminJSON.rfc3339(record.timestamp), forKey: .at)
        switch record.event {
        case .state(let s), .restored(let s), .loggedIn(let s):
            try c.encode(SessionDocument(s), forKey: .session)
        case .refreshed(let generation, let persisted):
            try c.encode(generation.rawValue, forKey: .generation)
            try c.encode(persisted, forKey: .persisted)
        case .refreshFailed(let code, let retryAfter):
            try c.encode(code, forKey: .code)
            try c.encode(retryAfter.components.seconds, forKey: .retryAfterSeconds)
        case .loggedOut(let reason, let epoch):
            try c.encode(reason.code, forKey: .reason)
            try c.encode(reason.description, forKey: .detail)
            try c.encode(epoch, forKey: .epoch)
        case .deviceAuthorization(let s):
            try c.encode(DeviceAuthorizationDocument(s), forKey: .deviceAuthorization)
        case .deviceLoginEnded(let end):
            try c.encode(end.code, forKey: .reason)
            try c.encode(end.description, forKey: .detail)
        }
    }
}
