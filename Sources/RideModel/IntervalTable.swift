/// Statistics of the charted quantities (`chartedQuantities`: heart rate, power, cadence, speed,
/// altitude) bucketed by a fixed interval of timer time (default 60 s), in a table allocated once
/// for at least 24 hours. Summaries and charts are drawn from it without keeping every sample.
///
/// Public API (stable; docs/statistics.md): bucket `b` covers timer time
/// [`bucketStartMs(b)`, `bucketStartMs(b) + intervalMs`); `bucketCount` buckets have been
/// touched; `statistics(bucket:_:)` is the full `QuantityStatistics` of a quantity in a bucket
/// (min, max, time-weighted average by the ride's zero-averaging convention, most recent,
/// `weightMs` = timer time with data in the bucket); `averages(_:)` / `maxima(_:)` give a whole
/// column as a chart series (nil where the bucket has no data).
public struct IntervalTable: Sendable, Hashable {
    public static let chartedQuantities: [Quantity] = Quantity.allCases.filter(\.isCharted)
    public static let defaultIntervalMs: Int64 = 60_000
    /// 24 h of 60 s buckets.
    public static let defaultBucketsMax = 24 * 60

    public let intervalMs: Int64
    public let bucketsMax: Int
    /// bucketsMax × chartedQuantities.count statistics, row-major by bucket.
    public internal(set) var cells: [QuantityStatistics]
    /// Buckets touched so far (highest index + 1).
    public internal(set) var bucketCount = 0
    /// Contributions dropped because they fell past the last bucket.
    public internal(set) var droppedCount: UInt64 = 0

    /// Column of each quantity in a row, -1 when not charted.
    @usableFromInline let column: [Int]

    public init(intervalMs: Int64 = IntervalTable.defaultIntervalMs, bucketsMax: Int = IntervalTable.defaultBucketsMax) {
        precondition(intervalMs > 0 && bucketsMax > 0)
        self.intervalMs = intervalMs
        self.bucketsMax = bucketsMax
        cells = Array(repeating: QuantityStatistics(), count: bucketsMax * Self.chartedQuantities.count)
        var column = Array(repeating: -1, count: Quantity.countMax)
        for (i, q) in Self.chartedQuantities.enumerated() { column[q.index] = i }
        self.column = column
    }

    @inlinable func cellIndex(bucket: Int, _ q: Quantity) -> Int? {
        let c = column[q.index]
        guard c >= 0, bucket >= 0, bucket < bucketsMax else { return nil }
        return bucket * IntervalTable.chartedQuantities.count + c
    }

    /// The statistics of `q` in bucket `bucket`.
    public func statistics(bucket: Int, _ q: Quantity) -> QuantityStatistics {
        guard let i = cellIndex(bucket: bucket, q) else { return QuantityStatistics() }
        return cells[i]
    }

    /// Timer time at which bucket `bucket` begins, ms.
    public func bucketStartMs(_ bucket: Int) -> Int64 { Int64(bucket) * intervalMs }

    /// The average of `q` in each touched bucket (nil where it has no data): a chart series.
    public func averages(_ q: Quantity) -> [Double?] { (0..<bucketCount).map { statistics(bucket: $0, q).average } }

    /// The maximum of `q` in each touched bucket (nil where it has no data).
    public func maxima(_ q: Quantity) -> [Double?] { (0..<bucketCount).map { statistics(bucket: $0, q).max } }

    /// Sets the zero-averaging convention of `q`'s cells.
    mutating func setZeroAveraging(_ z: ZeroAveraging, for q: Quantity) {
        let c = column[q.index]
        guard c >= 0 else { return }
        let n = Self.chartedQuantities.count
        for b in 0..<bucketsMax { cells[b * n + c].setZeroAveraging(z) }
    }

    mutating func observe(_ q: Quantity, _ value: Double, timerMs: Int64) {
        guard column[q.index] >= 0 else { return }
        let b = Int(timerMs / intervalMs)
        guard let i = cellIndex(bucket: b, q) else { droppedCount &+= 1; return }
        cells[i].observe(value)
        if b + 1 > bucketCount { bucketCount = b + 1 }
    }

    /// Weighs `value` over timer span [fromMs, fromMs + durationMs), split at bucket edges.
    mutating func weigh(_ q: Quantity, _ value: Double, fromMs: Int64, durationMs: Int64) {
        guard column[q.index] >= 0 else { return }
        var start = fromMs
        let end = fromMs + durationMs
        while start < end {
            let b = Int(start / intervalMs)
            let bucketEnd = Int64(b + 1) * intervalMs
            let pieceEnd = min(end, bucketEnd)
            if let i = cellIndex(bucket: b, q) {
                cells[i].weigh(value, durationMs: pieceEnd - start)
                if b + 1 > bucketCount { bucketCount = b + 1 }
            } else {
                droppedCount &+= 1
                return
            }
            start = pieceEnd
        }
    }
}
