/// How the average of a quantity treats zero values (cadence while coasting, power while not
/// pedalling). Garmin's defaults: cadence without zeros, power with zeros.
public enum ZeroAveraging: UInt8, Sendable, Hashable, CustomStringConvertible {
    /// Zeros count: the average is over all the time with data.
    case includeZeros = 0
    /// Zeros are left out: the average is over the time with a non-zero value.
    case excludeZeros = 1

    public var description: String { self == .includeZeros ? "with zeros" : "without zeros" }
}

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
    /// Σ duration (ms) over which a value of exactly zero was held (part of `weightMs`).
    public internal(set) var zeroWeightMs: Int64 = 0
    /// Plain sum, for the arithmetic mean used when no time weight accrued yet.
    public internal(set) var sum: Double = 0
    /// Samples of exactly zero (part of `count`).
    public internal(set) var zeroCount: Int = 0
    /// Which convention `average` follows (set by the builder from the ride's settings).
    public internal(set) var zeroAveraging: ZeroAveraging = .includeZeros

    public init() {}

    public var hasData: Bool { count > 0 }
    public var min: Double? { count > 0 ? minimum : nil }
    public var max: Double? { count > 0 ? maximum : nil }
    public var mostRecent: Double? { count > 0 ? last : nil }

    /// The time-weighted average by this statistic's convention (`zeroAveraging`).
    public var average: Double? { zeroAveraging == .includeZeros ? averageIncludingZeros : averageExcludingZeros }

    /// Time-weighted average over the time with data, zeros included; the arithmetic mean while
    /// no time has been weighed (a single sample at the very end of a lap); nil with no data.
    public var averageIncludingZeros: Double? {
        guard count > 0 else { return nil }
        if weightMs > 0 { return weightedSum / Double(weightMs) }
        return sum / Double(count)
    }

    /// Time-weighted average over the time with a non-zero value (zeros do not add to the sum,
    /// so only the weight changes); nil when every value was zero.
    public var averageExcludingZeros: Double? {
        guard count > zeroCount else { return nil }
        let w = weightMs - zeroWeightMs
        if w > 0 { return weightedSum / Double(w) }
        return sum / Double(count - zeroCount)
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
        if value == 0 { zeroCount += 1 }
    }

    /// Adds `durationMs` of `value` held while running to the average. A negative duration is a
    /// bug that would corrupt every average after it: checked in release builds too.
    public mutating func weigh(_ value: Double, durationMs: Int64) {
        precondition(durationMs >= 0, "negative weight \(durationMs) ms")
        weightedSum += value * Double(durationMs)
        weightMs += durationMs
        if value == 0 { zeroWeightMs += durationMs }
    }

    mutating func setZeroAveraging(_ z: ZeroAveraging) { zeroAveraging = z }

    /// Restores statistics from stored fields (journal checkpoints).
    public init(count: Int, minimum: Double, maximum: Double, last: Double, weightedSum: Double, weightMs: Int64, sum: Double,
                zeroCount: Int = 0, zeroWeightMs: Int64 = 0, zeroAveraging: ZeroAveraging = .includeZeros) {
        self.count = count
        self.minimum = minimum
        self.maximum = maximum
        self.last = last
        self.weightedSum = weightedSum
        self.weightMs = weightMs
        self.sum = sum
        self.zeroCount = zeroCount
        self.zeroWeightMs = zeroWeightMs
        self.zeroAveraging = zeroAveraging
    }
}

/// Statistics for every quantity, in a fixed array indexed by `Quantity.rawValue`, plus the
/// total of cumulative quantities (distance, energy), the timer time they were gathered over and
/// the moving time (timer time with a speed at or above `RideSettings.movingSpeedMps`).
///
/// In a builder's `ride` and `laps`, `timerTimeMs` is complete up to the builder's last update;
/// `RideBuilder.statistics(at:)` / `lapStatistics(at:)` give it at any instant.
public struct StatisticsSet: Sendable, Hashable {
    public var perQuantity: [QuantityStatistics]
    /// Increments of cumulative quantities counted while running (distance m, energy kJ).
    public var totals: [Double]
    public var timerTimeMs: Int64 = 0
    /// Timer time during which a speed at or above the moving threshold was held.
    public var movingTimeMs: Int64 = 0

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

    /// Moving time, nil without speed data (it cannot be told then).
    public var movingTime: Int64? { self[.speed].hasData ? movingTimeMs : nil }

    /// Average speed = distance / timer time when distance is known, else the time-weighted
    /// speed average. (Garmin and Strava: distance / timer time and distance / moving time.)
    public var averageSpeedMps: Double? {
        if totals[Quantity.distance.index] > 0, timerTimeMs > 0 {
            return totals[Quantity.distance.index] / (Double(timerTimeMs) / 1000)
        }
        return self[.speed].average
    }

    /// Average moving speed = distance / moving time (Strava's "average speed").
    public var averageMovingSpeedMps: Double? {
        guard totals[Quantity.distance.index] > 0, movingTimeMs > 0 else { return nil }
        return totals[Quantity.distance.index] / (Double(movingTimeMs) / 1000)
    }
}
