import RideModel

/// A target zone for one quantity and how strict its alert is.
public struct TargetZone: Sendable, Hashable {
    public var quantity: Quantity
    /// 0-based zone (Z1 = 0).
    public var zone: Int
    /// Out of the zone this long before the alert sounds.
    public var graceMs: Int64
    /// Leaving the zone counts only beyond this margin (bpm or W); coming back counts as soon as
    /// the value is inside the zone again. Values within the margin never change the state, so a
    /// value wobbling on a boundary makes no alerts.
    public var hysteresis: Double

    public static let defaultGraceMs: Int64 = 10_000
    public static func defaultHysteresis(_ q: Quantity) -> Double { q == .power ? 10 : 3 }

    public init(quantity: Quantity, zone: Int, graceMs: Int64 = TargetZone.defaultGraceMs, hysteresis: Double? = nil) {
        self.quantity = quantity
        self.zone = zone
        self.graceMs = graceMs
        self.hysteresis = hysteresis ?? Self.defaultHysteresis(quantity)
    }

    /// Checks the target against the zones it will be used with.
    public func validate(against zones: ZoneConfiguration?) throws(TrainingSettingsError) {
        guard quantity == .heartRate || quantity == .power else { throw .targetQuantity(quantity) }
        guard let zones else { throw .targetWithoutZones(quantity) }
        guard zone >= 0, zone < zones.zoneCount else { throw .targetZoneOutOfRange(quantity, zone: zone, zoneCount: zones.zoneCount) }
        guard graceMs >= 0, graceMs <= TrainingSettings.durationMaxMs else { throw .outOfRange(name: "grace period", value: Double(graceMs) / 1000, unit: "s") }
        guard hysteresis.isFinite, hysteresis >= 0 else { throw .outOfRange(name: "hysteresis", value: hysteresis, unit: quantity.unit) }
    }
}

/// What the target-zone monitor asks the app to show.
public enum TargetZoneAlertEvent: Sendable, Hashable {
    /// Out of the zone for the grace period: above (true) or below it.
    case drift(above: Bool)
    /// Back in the zone after an alert.
    case backInZone
}

/// Target-zone alerts as a pure state machine (a Schmitt trigger with a timer). Feed it the
/// value of each 1 Hz record while the ride runs; it answers at most one `.drift` per excursion
/// and one `.backInZone` when the excursion ends. A record without a value (no sensor data)
/// changes nothing, so the state depends only on the values recorded — which is what lets crash
/// recovery rebuild it from the journal.
public struct TargetZoneMonitor: Sendable, Hashable {
    public enum State: Sendable, Hashable {
        /// No value since the start or the last pause.
        case unknown
        case inZone
        /// Out since `since`, not yet alerted.
        case drifting(since: MonotonicInstant, above: Bool)
        /// Alerted; waiting to come back.
        case alerted(above: Bool)
    }

    public let target: TargetZone
    public let low: Double
    public let high: Double
    public private(set) var state: State = .unknown
    /// Alerts answered so far (for tests and status).
    public private(set) var alertCount = 0

    public init(target: TargetZone, zones: ZoneConfiguration) {
        self.target = target
        low = zones.lowerBound(ofZone: target.zone)
        high = zones.upperBound(ofZone: target.zone)
    }

    /// Where `value` is: -1 below by more than the margin, +1 above by more than it, 0 inside the
    /// zone, nil within the margin of a boundary (outside the zone but not beyond the margin).
    func classify(_ value: Double) -> Int? {
        if value >= low && value < high { return 0 }
        if value >= high + target.hysteresis { return 1 }
        if value < low - target.hysteresis { return -1 }
        return nil
    }

    public mutating func observe(_ value: Double?, at instant: MonotonicInstant) -> TargetZoneAlertEvent? {
        guard let value, value.isFinite else { return nil }
        let where_ = classify(value)
        switch (state, where_) {
        case (.alerted, 0?):
            state = .inZone
            return .backInZone
        case (_, 0?):
            state = .inZone
            return nil
        case (.unknown, nil), (.inZone, nil):
            return nil // within the margin: still counts as in (or still unknown)
        case (.unknown, let side?), (.inZone, let side?):
            state = .drifting(since: instant, above: side > 0)
            return check(at: instant)
        case (.drifting(let since, let above), let side):
            // within the margin counts as still out (hysteresis on the way back)
            state = .drifting(since: since, above: side.map { $0 > 0 } ?? above)
            return check(at: instant)
        case (.alerted, _):
            return nil // one alert per excursion
        }
    }

    private mutating func check(at instant: MonotonicInstant) -> TargetZoneAlertEvent? {
        guard case .drifting(let since, let above) = state, instant.milliseconds(since: since) >= target.graceMs else { return nil }
        state = .alerted(above: above)
        alertCount += 1
        return .drift(above: above)
    }

    /// Forgets the current excursion (pause, ride start): after a pause the rider gets a new
    /// grace period.
    public mutating func reset() { state = .unknown }
}
