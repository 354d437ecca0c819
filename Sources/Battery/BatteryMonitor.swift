/// One reading of a fuel gauge, in units (what `FuelGauge.decode` makes of the registers).
/// A field the gauge does not measure is nil.
public struct BatteryReading: Sendable, Hashable {
    /// State of charge, 0…100 %.
    public var percent: Double?
    /// True when `percent` was estimated from the voltage (`LithiumCell`), not by a gauge's model.
    public var percentFromVoltage = false
    /// Battery (pack) voltage.
    public var voltageV: Double?
    /// Current into the battery, A: positive while charging, negative while the unit drains it.
    public var currentA: Double?
    /// The gauge's own charge rate, %/h: positive while charging (MAX17048 CRATE).
    public var chargeRatePercentPerHour: Double?
    /// External (USB) power is connected (PiSugar 3).
    public var externalPower: Bool?
    /// The battery board's own power button asked for a power-off (PiSugar 3 soft power-off).
    public var powerButtonRequest = false

    public init() {}
}

/// The `[battery]` settings (docs/config.md), typed.
public struct BatterySettings: Sendable, Hashable {
    /// Whether a gauge is read at all.
    public var enabled = false
    public var gauge: FuelGauge = .max17048
    /// INA219: the shunt resistor (Waveshare's UPS HATs: 0.1 Ω) and the cells in series.
    public var shuntOhms = 0.1
    public var cells = 1
    /// INA219: a positive shunt voltage means the battery discharges (the other wiring).
    public var invertCurrent = false
    /// The pack's capacity, mAh (optional): turns a measured current into a drain in %/h
    /// before enough minutes of charge readings exist.
    public var capacityMah: Int? = nil
    /// Alert levels, % (the rider is told once per level on the way down).
    public var lowPercent = 20
    public var veryLowPercent = 10
    /// At or below this the ride is paused and made durable and the unit powers off.
    public var criticalPercent = 5
    /// Whether the unit powers off at `criticalPercent` (false: it only warns).
    public var powerOff = true

    public init() {}
}

/// How full the battery is, in the words of the alerts.
public enum BatteryLevel: UInt8, Sendable, Hashable, Comparable, CustomStringConvertible {
    case ok = 0, low, veryLow, critical

    public var description: String {
        switch self {
        case .ok: "ok"
        case .low: "low"
        case .veryLow: "very_low"
        case .critical: "critical"
        }
    }

    public static func < (a: BatteryLevel, b: BatteryLevel) -> Bool { a.rawValue < b.rawValue }
}

/// What the screen, the status and the companion show of the battery.
public struct BatteryStatus: Sendable, Hashable {
    /// The charge, % (nil: no reading yet, or the last one is older than `BatteryMonitor.staleMs`).
    public var percent: Int?
    /// Minutes until the unit powers off at the critical level, at the measured drain (nil:
    /// not known yet, or charging).
    public var timeLeftMinutes: Int?
    public var charging = false
    public var level: BatteryLevel = .ok

    public init(percent: Int? = nil, timeLeftMinutes: Int? = nil, charging: Bool = false, level: BatteryLevel = .ok) {
        self.percent = percent
        self.timeLeftMinutes = timeLeftMinutes
        self.charging = charging
        self.level = level
    }
}

/// From readings to what the rider is told (docs/power.md, "What the unit does with it"):
///
/// - the **charge**: the gauge's, or from the voltage smoothed over `voltageSmoothingMs` (a
///   voltage under load wanders);
/// - the **drain**, %/h: the slope of the charge over the last `drainWindowMs` (least squares of
///   a sample every `drainSampleMs`) once it spans `drainWindowMinMs`; before that the gauge's
///   own rate (MAX17048 CRATE) or the measured current over `capacityMah`; unknown otherwise;
/// - the **time left**: (charge − critical level) / drain, the time until the unit powers off;
/// - the **level**: low, very low, critical, with `hysteresisPercent` before a level is left
///   again (a charge that wobbles around 20 % does not alert twice);
/// - **power off**: the charge at or below the critical level in `criticalReadingsMin`
///   readings in a row, not charging, `powerOff` set.
///
/// Pure: time comes in as milliseconds of a monotonic clock. Fixed-size state; no allocation.
public struct BatteryMonitor: Sendable {
    public let settings: BatterySettings

    public static let staleMs: Int64 = 30_000
    public static let voltageSmoothingMs: Int64 = 60_000
    public static let drainSampleMs: Int64 = 30_000
    public static let drainWindowMs: Int64 = 20 * 60_000
    public static let drainWindowMinMs: Int64 = 5 * 60_000
    /// Drain samples kept (the window at the sample period, plus room).
    public static let drainSamplesMax = 48
    public static let hysteresisPercent = 2.0
    public static let criticalReadingsMin = 3
    /// A time left beyond this is shown as this (a drain too small to measure).
    public static let timeLeftMinutesMax = 99 * 60
    /// Charging: current into the battery above this, or a gauge rate above `chargingRateMin`.
    public static let chargingCurrentMinA = 0.02
    public static let chargingRateMin = 0.5

    public private(set) var lastReading: BatteryReading?
    public private(set) var lastReadingAtMs: Int64?
    /// The charge as used (smoothed when it comes from the voltage).
    public private(set) var percent: Double?
    public private(set) var charging = false
    public private(set) var drainPercentPerHour: Double?
    public private(set) var level: BatteryLevel = .ok
    public private(set) var criticalReadings = 0
    public private(set) var readings: UInt64 = 0
    public private(set) var readingsRejected: UInt64 = 0
    /// Whether a power-off was asked for (once: `update` reports it a single time).
    public private(set) var powerOffAsked = false

    var samples: [(atMs: Int64, percent: Double)]
    var sampleCount = 0
    var sampleNext = 0

    public init(settings: BatterySettings) {
        precondition(settings.criticalPercent < settings.veryLowPercent && settings.veryLowPercent < settings.lowPercent,
                     "battery levels must fall: low \(settings.lowPercent) > very low \(settings.veryLowPercent) > critical \(settings.criticalPercent)")
        self.settings = settings
        samples = Array(repeating: (0, 0), count: Self.drainSamplesMax)
    }

    /// What changed with a reading, for the app core to act on.
    public enum Change: Sendable, Hashable {
        /// The level fell to this one (an alert for the rider).
        case levelFell(BatteryLevel)
        /// The battery is at the critical level: pause, make durable, power off.
        case powerOffNeeded
        /// The battery board's power button asked for a power-off.
        case powerButton
        /// External power came (charging) or went.
        case charging(Bool)
    }

    /// Takes a reading (nil: the gauge could not be read; counted, the last value ages out
    /// after `staleMs`). Returns the most important change it caused, if any.
    public mutating func update(_ reading: BatteryReading?, atMs now: Int64) -> Change? {
        guard let reading, let raw = reading.percent, raw.isFinite else {
            readingsRejected &+= 1
            return nil
        }
        readings &+= 1
        let p = max(0, min(100, raw))
        if reading.percentFromVoltage, let before = percent, let at = lastReadingAtMs, now > at, now - at < Self.staleMs {
            // Exponential smoothing with a time constant: the same weight per minute at any rate.
            let a = min(1, Double(now - at) / Double(Self.voltageSmoothingMs))
            percent = before + a * (p - before)
        } else {
            percent = p
        }
        lastReading = reading
        lastReadingAtMs = now
        let wasCharging = charging
        charging = Self.isCharging(reading)
        if charging != wasCharging { sampleCount = 0 } // a new slope after the charger came or went
        addSample(percent!, atMs: now)
        drainPercentPerHour = charging ? nil : measuredDrain() ?? instantDrain(reading)
        var change: Change? = charging != wasCharging ? .charging(charging) : nil
        if let fell = updateLevel() { change = .levelFell(fell) }
        if level == .critical && !charging { criticalReadings += 1 } else { criticalReadings = 0 }
        if settings.powerOff, !powerOffAsked, criticalReadings >= Self.criticalReadingsMin {
            powerOffAsked = true
            change = .powerOffNeeded
        }
        if reading.powerButtonRequest, !powerOffAsked {
            powerOffAsked = true
            change = .powerButton
        }
        return change
    }

    /// What to show at `now`.
    public func status(atMs now: Int64) -> BatteryStatus {
        guard let p = percent, let at = lastReadingAtMs, now - at <= Self.staleMs else {
            return BatteryStatus(percent: nil, timeLeftMinutes: nil, charging: false, level: level)
        }
        return BatteryStatus(percent: Int(p.rounded()), timeLeftMinutes: timeLeftMinutes, charging: charging, level: level)
    }

    /// Minutes until the critical level at the drain measured (nil: unknown or charging).
    public var timeLeftMinutes: Int? {
        guard !charging, let p = percent, let d = drainPercentPerHour, d > 0.05 else { return nil }
        let left = max(0, p - Double(settings.criticalPercent)) / d * 60
        return Int(min(Double(Self.timeLeftMinutesMax), left.rounded()))
    }

    static func isCharging(_ r: BatteryReading) -> Bool {
        if let e = r.externalPower { return e }
        if let i = r.currentA { return i > chargingCurrentMinA }
        if let c = r.chargeRatePercentPerHour { return c > chargingRateMin }
        return false
    }

    /// The gauge's own rate, or the current over the capacity: %/h drained (positive).
    func instantDrain(_ r: BatteryReading) -> Double? {
        if let i = r.currentA, let cap = settings.capacityMah, cap > 0 { return max(0, -i * 1000 / Double(cap) * 100) }
        if let c = r.chargeRatePercentPerHour { return max(0, -c) }
        return nil
    }

    mutating func addSample(_ p: Double, atMs now: Int64) {
        if sampleCount > 0 {
            let last = samples[(sampleNext + Self.drainSamplesMax - 1) % Self.drainSamplesMax]
            guard now - last.atMs >= Self.drainSampleMs else { return }
        }
        samples[sampleNext] = (now, p)
        sampleNext = (sampleNext + 1) % Self.drainSamplesMax
        sampleCount = min(sampleCount + 1, Self.drainSamplesMax)
    }

    /// Least-squares slope of the charge over the window, as a drain in %/h (≥ 0); nil until
    /// the samples span `drainWindowMinMs`.
    func measuredDrain() -> Double? {
        guard sampleCount >= 2 else { return nil }
        let newest = samples[(sampleNext + Self.drainSamplesMax - 1) % Self.drainSamplesMax].atMs
        var n = 0.0, sx = 0.0, sy = 0.0, sxx = 0.0, sxy = 0.0
        var oldest = newest
        for k in 0..<sampleCount {
            let s = samples[(sampleNext + Self.drainSamplesMax - 1 - k) % Self.drainSamplesMax]
            guard newest - s.atMs <= Self.drainWindowMs else { break }
            oldest = s.atMs
            let x = Double(s.atMs - newest) / 3_600_000 // hours, ≤ 0
            n += 1; sx += x; sy += s.percent; sxx += x * x; sxy += x * s.percent
        }
        guard newest - oldest >= Self.drainWindowMinMs, n >= 2 else { return nil }
        let denominator = n * sxx - sx * sx
        guard denominator > 0 else { return nil }
        let slope = (n * sxy - sx * sy) / denominator // %/h, negative while draining
        return max(0, -slope)
    }

    /// Moves the level with the charge (down at once, up only past the hysteresis or when
    /// charging); returns the level it fell to, if it fell.
    mutating func updateLevel() -> BatteryLevel? {
        guard let p = percent else { return nil }
        let s = settings
        let target: BatteryLevel = p <= Double(s.criticalPercent) ? .critical
            : p <= Double(s.veryLowPercent) ? .veryLow
            : p <= Double(s.lowPercent) ? .low : .ok
        if target > level {
            level = target
            return target
        }
        if target < level {
            let threshold = level == .critical ? s.criticalPercent : level == .veryLow ? s.veryLowPercent : s.lowPercent
            if charging || p >= Double(threshold) + Self.hysteresisPercent { level = target }
        }
        return nil
    }
}
