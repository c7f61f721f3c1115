internal import AuthCore
internal import PostgresNIO

extension PostgresQuery {
    /// `change`, an `INSERT` or `UPDATE` of `account`'s row (without `RETURNING`), as one
    /// statement that returns the row's new generation when it changed the row, and then
    /// tells the other replicas (`kind account generation` on `channel`, see
    /// ``NotificationHub/Change``): a `pg_notify` in the same statement is sent by PostgreSQL
    /// only if the transaction commits, and only for a row the change touched.
    static func notifying(_ kind: String, account: AccountID, on channel: String, _ change: PostgresQuery) -> PostgresQuery {
        var binds = change.binds
        binds.append(channel)
        binds.append("\(kind) \(account.rawValue) ")
        let (channelBind, prefixBind) = (binds.count - 1, binds.count)
        return PostgresQuery(
            unsafeSQL: """
                WITH w AS (
                \(change.sql)
                RETURNING generation)
                SELECT w.generation FROM w, pg_notify($\(channelBind), $\(prefixBind) || w.generation) AS n
                """,
            binds: binds)
    }
}
