import RideModel

/// The finished ride's charted quantities over timer time, one average per bucket of the ride's
/// interval table (`IntervalTable`, 60 s buckets by default): what the summary's chart pages
/// draw. Built once when the ride stops (the arrays are allocated then, never per frame).
public struct SummaryCharts: Sendable, Hashable {
    /// Timer time per bucket, ms.
    public var intervalMs: Int64
    /// Buckets with a value (the ride's timer time, rounded up to whole buckets).
    public var bucketCount: Int
    /// The time-weighted average of each bucket per charted quantity (indexed like
    /// `IntervalTable.chartedQuantities`); NaN for a bucket with no data of that quantity.
    public var averages: [[Double]]

    public init() {
        intervalMs = IntervalTable.defaultIntervalMs
        bucketCount = 0
        averages = Array(repeating: [], count: IntervalTable.chartedQuantities.count)
    }

    /// The averages of `table`'s buckets (up to `bucketsMax` of them; a longer ride keeps its
    /// first `bucketsMax` buckets, as the table itself does).
    public init(_ table: IntervalTable) {
        intervalMs = table.intervalMs
        bucketCount = min(table.bucketCount, table.bucketsMax)
        averages = IntervalTable.chartedQuantities.map { q in
            (0..<min(table.bucketCount, table.bucketsMax)).map { table.statistics(bucket: $0, q).average ?? .nan }
        }
    }

    /// The bucket averages of `q`, or nil when `q` is not charted or the ride has no data of it.
    public func series(_ q: Quantity) -> [Double]? {
        guard let i = IntervalTable.chartedQuantities.firstIndex(of: q), i < averages.count else { return nil }
        let s = averages[i]
        return s.contains(where: { !$0.isNaN }) ? s : nil
    }
}
