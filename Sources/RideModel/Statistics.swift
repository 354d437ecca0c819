/// Running statistics of one quantity: minimum, maximum, time-weighted average and most recent
/// value. Updated in O(1) with no allocation. A quantity with no data has no statistics: every
/// accessor is nil until the first counted sample.
public struct QuantityStatistics: Sendable, Hashable {
    public internal(set) var count: Int = 0
    public internal(set) var minimum: Double = 0
    public internal(set) var maximum: Double = 0
    public internal(set) var last: Double = 0
    /// Σ value × duration (value·ms).
    public internal(set) var weightedSum: Double = 0
    /// Σ duration (ms) over which a value was held while running.
    public internal(set) var weightMs: Int64 = 0
    /// Plain sum, for the arithmetic mean used when no time weight accrued yet.
    public internal(set) var sum: Double = 0

    public init() {}

    public var hasData: Bool { count > 0 }
    public var min: Double? { count > 0 ? minimum : nil }
    public var max: Double? { count > 0 ? maximum : nil }
    public var mostRecent: Double? { count > 0 ? last : nil }

    /// Time-weighted average over timer time; the arithmetic mean while no time has been weighed
    /// (a single sample at the very end of a lap), nil with no data.
    public var average: Double? {
        guard count > 0 else { return nil }
        if weightMs > 0 { return weightedSum / Double(weightMs) }
        return sum / Double(count)
    }

    /// Counts a sample value (min, max, most recent).

    public mutating func observe(_ value: Double) {
        if count == 0 {
            minimum = value
            maximum = value
        } else {
            if value < minimum { minimum = value }
            if value > maximum { maximum = value }
        }
        last = value
        sum += value
        count += 1
    }

    /// Adds `durationMs` of `value` held while running to the average.

    public mutating func weigh(_ value: Double, durationMs: Int64) {
        assert(durationMs >= 0)
        weightedSum += value * Double(durationMs)
        weightMs += durationMs
    }

    /// Restores statistics from stored fields (journal checkpoints).
    public init(count: Int, minimum: Double, maximum: Double, last: Double, weightedSum: Double, weightMs: Int64, sum: Double) {
        self.count = count
        self.minimum = minimum
        self.maximum = maximum
        self.last = last
        self.weightedSum = weightedSum
        self.weightMs = weightMs
        self.sum = sum
    }
}

/// Statistics for every quantity, in a fixed array indexed by `Quantity.rawValue`, plus the
/// total of cumulative quantities (distance, energy) and the timer time they were gathered over.
public struct StatisticsSet: Sendable, Hashable {
    public var perQuantity: [QuantityStatistics]
    /// Increments of cumulative quantities counted while running (distance m, energy kJ).
    public var totals: [Double]
    public var timerTimeMs: Int64 = 0

    public init() {
        perQuantity = Array(repeating: QuantityStatistics(), count: Quantity.countMax)
        totals = Array(repeating: 0, count: Quantity.countMax)
    }

    @inlinable public subscript(q: Quantity) -> QuantityStatistics {
        get { perQuantity[q.index] }
        set { perQuantity[q.index] = newValue }
    }

    public var distanceM: Double { totals[Quantity.distance.index] }
    public var energyKJ: Double { totals[Quantity.energy.index] }

    /// Average speed = distance / timer time when distance is known, else the speed average.
    public var averageSpeedMps: Double? {
        if totals[Quantity.distance.index] > 0, timerTimeMs > 0 {
            return totals[Quantity.distance.index] / (Double(timerTimeMs) / 1000)
        }
        return self[.speed].average
    }
}
