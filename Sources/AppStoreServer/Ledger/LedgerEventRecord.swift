import FoundationEssentials

/// One stored event, as `Ledger.recentEvents` reads it back: what ingesting it did, when it was received, and its
/// place in the ledger (ids grow in commit order, across every process writing the database).
public struct LedgerEventRecord: Hashable, Sendable {
    /// The event's id in the ledger's events table.
    public let eventId: Int64
    /// When the ledger stored it: milliseconds since 1970, the storing process's clock.
    public let receivedAt: Int64
    /// What ingesting it did (`stored` is true); the oracle's check is against the ledger's state now.
    public let result: LedgerIngestResult
}

extension Ledger {
    /// The largest page `recentEvents` returns.
    public static let maximumRecentEvents = 1000

    /// The most recently stored events, newest first: at most `limit` (1...1000), with an id below `before` when given
    /// (the `eventId` of the last record of the previous page). Events stored by other processes are included.
    public func recentEvents(limit: Int = 100, before: Int64? = nil) throws(LedgerError) -> [LedgerEventRecord] {
        guard (1...Self.maximumRecentEvents).contains(limit) else {
            throw .argument("limit must be 1...\(Self.maximumRecentEvents), got \(limit)")
        }
        return try recentRecords(before: before ?? Int64.max, limit: limit)
    }
}
