internal import Foundation

extension FakeAuthorizationServer {
    /// `object` (strings, numbers and nested objects) as compact JSON with sorted keys.
    /// Such an object always serializes; were it ever not to, the answer is `{}`, which the
    /// client under test refuses as a malformed response rather than the fake crashing.
    static func json(_ object: [String: Any]) -> [UInt8] {
        do {
            return Array(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
        } catch {
            return Array("{}".utf8)
        }
    }
}
