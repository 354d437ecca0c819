import RideModel

/// Auto-pause: pause when the speed stays below a threshold for a while, resume when it rises
/// above it again.
public struct AutoPauseSettings: Sendable, Hashable {
    public static let defaultThresholdMps = 3.0 / 3.6 // 3 km/h
    public static let defaultDelayMs: Int64 = 5_000

    /// Below this speed counts as stopped.
    public var thresholdMps: Double
    /// Stopped this long (from the first slow record) before the pause.
    public var delayMs: Int64

    public init(thresholdMps: Double = AutoPauseSettings.defaultThresholdMps, delayMs: Int64 = AutoPauseSettings.defaultDelayMs) {
        self.thresholdMps = thresholdMps
        self.delayMs = delayMs
    }

    public init(thresholdKmh: Double, delaySeconds: Int) {
        self.init(thresholdMps: thresholdKmh / 3.6, delayMs: Int64(delaySeconds) * 1000)
    }

    public func validate() throws(TrainingSettingsError) {
        guard thresholdMps.isFinite, thresholdMps > 0, thresholdMps <= 20 else {
            throw .outOfRange(name: "auto-pause speed", value: thresholdMps * 3.6, unit: "km/h")
        }
        guard delayMs >= 0, delayMs <= TrainingSettings.durationMaxMs else {
            throw .outOfRange(name: "auto-pause delay", value: Double(delayMs) / 1000, unit: "s")
        }
    }
}

/// The auto-pause state machine. Pure: feed it the speed of each 1 Hz record (`observe`) and
/// tell it what the session actually did (`didStart`, `didPause`, `didResume`). `observe` only
/// answers a decision; it is the app's pause/resume that changes the paused state, so replaying
/// the journal (records, then the events they caused) rebuilds the same state.
public struct AutoPauseMonitor: Sendable, Hashable {
    public enum Decision: Sendable, Hashable { case pause, resume }

    /// nil: auto-pause is off (the monitor still follows the session so it can be turned on).
    public private(set) var settings: AutoPauseSettings?
    /// First slow record of the current slow stretch (while running).
    public private(set) var slowSince: MonotonicInstant?
    /// What paused the ride (nil while running or before the start).
    public private(set) var pausedBy: Trigger?
    public private(set) var running = false

    public init(settings: AutoPauseSettings?) { self.settings = settings }

    /// Turns auto-pause on, off or changes it; the current slow stretch starts over.
    public mutating func update(settings: AutoPauseSettings?) {
        self.settings = settings
        slowSince = nil
    }

    /// A record's speed (nil: no speed data then, which changes nothing).
    public mutating func observe(speedMps: Double?, at instant: MonotonicInstant) -> Decision? {
        guard let settings, let v = speedMps, v.isFinite else { return nil }
        if running {
            if v >= settings.thresholdMps { slowSince = nil; return nil }
            let since = slowSince ?? instant
            slowSince = since
            return instant.milliseconds(since: since) >= settings.delayMs ? .pause : nil
        }
        // Only a pause auto-pause made is ended by riding on; a manual pause waits for the rider.
        if pausedBy == .auto, v >= settings.thresholdMps { return .resume }
        return nil
    }

    public mutating func didStart(at instant: MonotonicInstant) { running = true; pausedBy = nil; slowSince = nil }
    public mutating func didPause(at instant: MonotonicInstant, trigger: Trigger) { running = false; pausedBy = trigger; slowSince = nil }
    public mutating func didResume(at instant: MonotonicInstant, trigger: Trigger) { running = true; pausedBy = nil; slowSince = nil }
    public mutating func didStop() { running = false; pausedBy = nil; slowSince = nil }
}

/// Auto-lap: a new lap each time the current lap reaches a distance or a timer time (whichever
/// comes first when both are set). The count restarts with every lap, manual ones included.
public struct AutoLapSettings: Sendable, Hashable {
    public var everyDistanceM: Double?
    public var everyTimerMs: Int64?

    public init(everyDistanceM: Double? = nil, everyTimerMs: Int64? = nil) {
        self.everyDistanceM = everyDistanceM
        self.everyTimerMs = everyTimerMs
    }

    public static func kilometres(_ km: Double) -> AutoLapSettings { AutoLapSettings(everyDistanceM: km * 1000) }
    public static func minutes(_ min: Int) -> AutoLapSettings { AutoLapSettings(everyTimerMs: Int64(min) * 60_000) }

    public func validate() throws(TrainingSettingsError) {
        guard everyDistanceM != nil || everyTimerMs != nil else { throw .autoLapWithoutTrigger }
        if let d = everyDistanceM, !(d.isFinite && d >= 10 && d <= 1_000_000) {
            throw .outOfRange(name: "auto-lap distance", value: d, unit: "m")
        }
        if let t = everyTimerMs, !(t >= 10_000 && t <= TrainingSettings.durationMaxMs) {
            throw .outOfRange(name: "auto-lap time", value: Double(t) / 1000, unit: "s")
        }
    }

    /// The lap trigger due for a lap that has covered `lapDistanceM` in `lapTimerMs`, if any.
    /// `carriedM` is how far the previous distance lap ran past its mark (`carry(after:...)`):
    /// distance laps end on the true marks (every 1 km of the ride, not 1 km after wherever the
    /// last lap happened to be taken), so they do not drift by a record's worth each lap.
    public func due(lapDistanceM: Double, lapTimerMs: Int64, carriedM: Double = 0) -> Trigger? {
        if let d = everyDistanceM, lapDistanceM + carriedM >= d { return .distance }
        if let t = everyTimerMs, lapTimerMs >= t { return .time }
        return nil
    }

    /// The carry after a lap that ended with `trigger` having covered `lapDistanceM`: the part
    /// past the distance mark after a distance lap (kept below one lap length), nothing after a
    /// manual or time lap (they restart the count).
    public func carry(after trigger: Trigger, lapDistanceM: Double, carriedM: Double) -> Double {
        guard trigger == .distance, let d = everyDistanceM, d > 0 else { return 0 }
        let over = lapDistanceM + carriedM - d
        return over > 0 && over < d ? over : 0
    }
}
