/// Normalized power: the 30-second rolling average of 1-second power, raised to the 4th power,
/// averaged, and the 4th root taken. Seconds are timer-time seconds; a second in which no power
/// was held (sensor absent) is skipped rather than counted as zero. Fixed storage.
public struct NormalizedPowerAccumulator: Sendable, Hashable {
    public static let windowSeconds = 30

    /// The timer-time second being filled and its Σ W·ms and Σ ms.
    public internal(set) var currentSecond: Int64 = 0
    public internal(set) var secondWeighted: Double = 0
    public internal(set) var secondWeightMs: Int64 = 0
    /// The last `windowSeconds` one-second averages (circular) and their sum.
    public internal(set) var window: [Double] = Array(repeating: 0, count: NormalizedPowerAccumulator.windowSeconds)
    public internal(set) var windowCount = 0
    public internal(set) var windowNext = 0
    /// Σ (rolling average)^4 and how many rolling averages were taken.
    public internal(set) var fourthPowerSum: Double = 0
    public internal(set) var rollingCount: Int64 = 0

    public init() {}

    /// Adds `durationMs` of `powerW` held from timer time `timerMs` on. The span must lie within
    /// one second (the caller splits).

    mutating func add(powerW: Double, timerMs: Int64, durationMs: Int64) {
        let second = timerMs / 1000
        if second != currentSecond { finishSecond(); currentSecond = second }
        secondWeighted += powerW * Double(durationMs)
        secondWeightMs += durationMs
    }

    /// Closes the second being filled (at a later second's data, or at the stop).
    mutating func finishSecond() {
        guard secondWeightMs > 0 else { return }
        let avg = secondWeighted / Double(secondWeightMs)
        secondWeighted = 0
        secondWeightMs = 0
        window[windowNext] = avg
        windowNext = (windowNext + 1) % Self.windowSeconds
        if windowCount < Self.windowSeconds { windowCount += 1 }
        if windowCount == Self.windowSeconds {
            var sum = 0.0
            for v in window { sum += v } // 30 adds: exact, no drift from a running sum
            let rolling = sum / Double(Self.windowSeconds)
            let sq = rolling * rolling
            fourthPowerSum += sq * sq
            rollingCount += 1
        }
    }

    /// Normalized power in W, nil before 30 seconds of power.
    public var normalizedPowerW: Double? {
        guard rollingCount > 0 else { return nil }
        return (fourthPowerSum / Double(rollingCount)).squareRoot().squareRoot()
    }
}

/// Intensity factor and training stress from normalized power and FTP.
public struct TrainingLoad: Sendable, Hashable {
    public var intensityFactor: Double
    public var trainingStressScore: Double

    /// IF = NP / FTP; TSS = (t · NP · IF) / (FTP · 3600) · 100 with t the timer time in seconds.
    public init?(normalizedPowerW: Double?, ftpW: Double?, timerTimeMs: Int64) {
        guard let np = normalizedPowerW, let ftp = ftpW, ftp > 0 else { return nil }
        intensityFactor = np / ftp
        let seconds = Double(timerTimeMs) / 1000
        trainingStressScore = seconds * np * intensityFactor / (ftp * 3600) * 100
    }
}
