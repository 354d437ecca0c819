import RideModel

/// Why a training setting was refused.
public enum TrainingSettingsError: Error, Sendable, Hashable, CustomStringConvertible {
    case targetQuantity(Quantity)
    case targetWithoutZones(Quantity)
    case targetZoneOutOfRange(Quantity, zone: Int, zoneCount: Int)
    case outOfRange(name: String, value: Double, unit: String)
    case autoLapWithoutTrigger
    /// A journaled setting could not be read back.
    case unreadable(key: String, value: String)

    public var description: String {
        switch self {
        case .targetQuantity(let q): "target zones are for heart rate or power, not \(q)"
        case .targetWithoutZones(let q): "no \(q) zones are configured; set \(q == .power ? "an FTP or power zones" : "heart-rate zones") before a \(q) target"
        case .targetZoneOutOfRange(let q, let z, let n): "\(q) target zone Z\(z + 1) does not exist; choose Z1 to Z\(n)"
        case .outOfRange(let name, let v, let unit): "\(name) \(ZoneFormulas.format(v)) \(unit) is out of range; see docs/training.md for the allowed values"
        case .autoLapWithoutTrigger: "auto-lap needs a distance or a time; give one, or turn auto-lap off"
        case .unreadable(let k, let v): "journaled training setting \(k)=\(v) could not be read; it was ignored"
        }
    }
}

/// The training features of a ride: target zones, auto-pause, auto-lap. All off by default.
public struct TrainingSettings: Sendable, Hashable {
    /// Longest grace period, auto-pause delay or auto-lap time accepted (24 h).
    public static let durationMaxMs: Int64 = 86_400_000

    public var heartRateTarget: TargetZone?
    public var powerTarget: TargetZone?
    public var autoPause: AutoPauseSettings?
    public var autoLap: AutoLapSettings?

    public init(heartRateTarget: TargetZone? = nil, powerTarget: TargetZone? = nil,
                autoPause: AutoPauseSettings? = nil, autoLap: AutoLapSettings? = nil) {
        self.heartRateTarget = heartRateTarget
        self.powerTarget = powerTarget
        self.autoPause = autoPause
        self.autoLap = autoLap
    }

    public func target(_ q: Quantity) -> TargetZone? { q == .power ? powerTarget : (q == .heartRate ? heartRateTarget : nil) }

    public mutating func setTarget(_ q: Quantity, _ t: TargetZone?) {
        if q == .power { powerTarget = t } else if q == .heartRate { heartRateTarget = t }
    }

    // MARK: Journal form

    /// Metadata keys under which a ride's training settings are journaled (and kept in the ride
    /// file's metadata). Values are "off" or comma-separated `name=value` pairs.
    public static let heartRateTargetKey = "training.target.heart_rate"
    public static let powerTargetKey = "training.target.power"
    public static let autoPauseKey = "training.auto_pause"
    public static let autoLapKey = "training.auto_lap"
    public static let keys = [heartRateTargetKey, powerTargetKey, autoPauseKey, autoLapKey]

    public static func isTrainingKey(_ key: String) -> Bool { key.hasPrefix("training.") }

    /// Every setting as (key, value), in a fixed order.
    public var metadataEntries: [(key: String, value: String)] {
        Self.keys.map { ($0, metadataValue(forKey: $0)!) }
    }

    public func metadataValue(forKey key: String) -> String? {
        func num(_ v: Double) -> String { ZoneFormulas.format(v) }
        switch key {
        case Self.heartRateTargetKey, Self.powerTargetKey:
            guard let t = target(key == Self.powerTargetKey ? .power : .heartRate) else { return "off" }
            return "zone=\(t.zone + 1),grace_ms=\(t.graceMs),hysteresis=\(num(t.hysteresis))"
        case Self.autoPauseKey:
            guard let a = autoPause else { return "off" }
            return "below_mps=\(num(a.thresholdMps)),delay_ms=\(a.delayMs)"
        case Self.autoLapKey:
            guard let l = autoLap else { return "off" }
            var parts: [String] = []
            if let d = l.everyDistanceM { parts.append("distance_m=\(num(d))") }
            if let t = l.everyTimerMs { parts.append("timer_ms=\(t)") }
            return parts.joined(separator: ",")
        default:
            return nil
        }
    }

    /// Applies one journaled entry. Unknown keys are not training keys (returns false);
    /// unreadable values throw.
    @discardableResult
    public mutating func apply(metadataKey key: String, value: String) throws(TrainingSettingsError) -> Bool {
        guard Self.keys.contains(key) else { return false }
        let bad = TrainingSettingsError.unreadable(key: key, value: value)
        var fields: [(String, String)] = []
        if value != "off" {
            for part in value.split(separator: ",") {
                let kv = part.split(separator: "=", maxSplits: 1)
                guard kv.count == 2 else { throw bad }
                fields.append((String(kv[0]), String(kv[1])))
            }
            guard !fields.isEmpty else { throw bad }
        }
        func field(_ name: String) -> String? { fields.first { $0.0 == name }?.1 }
        func double(_ name: String) throws(TrainingSettingsError) -> Double? {
            guard let s = field(name) else { return nil }
            guard let v = Double(s), v.isFinite else { throw bad }
            return v
        }
        func int(_ name: String) throws(TrainingSettingsError) -> Int64? {
            guard let s = field(name) else { return nil }
            guard let v = Int64(s) else { throw bad }
            return v
        }
        switch key {
        case Self.heartRateTargetKey, Self.powerTargetKey:
            let q: Quantity = key == Self.powerTargetKey ? .power : .heartRate
            if fields.isEmpty { setTarget(q, nil); return true }
            guard let z = try int("zone"), z >= 1, z <= Int64(ZoneConfiguration.zonesMax) else { throw bad }
            setTarget(q, TargetZone(quantity: q, zone: Int(z - 1), graceMs: try int("grace_ms") ?? TargetZone.defaultGraceMs,
                                    hysteresis: try double("hysteresis")))
        case Self.autoPauseKey:
            if fields.isEmpty { autoPause = nil; return true }
            autoPause = AutoPauseSettings(thresholdMps: try double("below_mps") ?? AutoPauseSettings.defaultThresholdMps,
                                          delayMs: try int("delay_ms") ?? AutoPauseSettings.defaultDelayMs)
        default: // auto-lap
            if fields.isEmpty { autoLap = nil; return true }
            let l = AutoLapSettings(everyDistanceM: try double("distance_m"), everyTimerMs: try int("timer_ms"))
            guard l.everyDistanceM != nil || l.everyTimerMs != nil else { throw bad }
            autoLap = l
        }
        return true
    }
}
