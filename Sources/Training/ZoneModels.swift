import RideModel

/// What the rider told the device about themselves (the `[rider]` section of the config). Every
/// field is optional; zones are computed from whatever is there (`ZonesInForce.preferred`).
public struct RiderProfile: Sendable, Hashable {
    public var age: Int?
    public var restingHeartRateBpm: Double?
    /// Measured maximum heart rate; when absent it is estimated as 220 − age.
    public var maxHeartRateBpm: Double?
    public var lactateThresholdHeartRateBpm: Double?
    public var ftpW: Double?
    /// Which heart-rate model to use; nil picks one from the data present (see `ZonesInForce`).
    public var heartRateModel: HeartRateZoneModel?
    /// Hand-set zones; they win over every computed model.
    public var explicitHeartRateZones: ZoneConfiguration?
    public var explicitPowerZones: ZoneConfiguration?

    public init(age: Int? = nil, restingHeartRateBpm: Double? = nil, maxHeartRateBpm: Double? = nil,
                lactateThresholdHeartRateBpm: Double? = nil, ftpW: Double? = nil,
                heartRateModel: HeartRateZoneModel? = nil,
                explicitHeartRateZones: ZoneConfiguration? = nil, explicitPowerZones: ZoneConfiguration? = nil) {
        self.age = age
        self.restingHeartRateBpm = restingHeartRateBpm
        self.maxHeartRateBpm = maxHeartRateBpm
        self.lactateThresholdHeartRateBpm = lactateThresholdHeartRateBpm
        self.ftpW = ftpW
        self.heartRateModel = heartRateModel
        self.explicitHeartRateZones = explicitHeartRateZones
        self.explicitPowerZones = explicitPowerZones
    }
}

/// The computed heart-rate models.
public enum HeartRateZoneModel: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Five zones at 50/60/70/80/90 % of max HR.
    case percentOfMax = "percent-max"
    /// Karvonen: the same percentages of the heart-rate reserve (max − resting) above resting.
    case heartRateReserve = "reserve"
    /// Friel's seven cycling zones as percentages of lactate-threshold heart rate.
    case percentOfLactateThreshold = "lthr"

    public var description: String { rawValue }
}

/// Why zones could not be computed from a profile. Each message says what to set.
public enum ZoneModelError: Error, Sendable, Hashable, CustomStringConvertible {
    case ageOutOfRange(Int)
    case heartRateOutOfRange(name: String, value: Double)
    case restingNotBelowMax(resting: Double, max: Double)
    case ftpOutOfRange(Double)
    /// The model needs a figure the profile does not have.
    case missing(model: HeartRateZoneModel, need: String)
    /// The computed boundaries do not make valid zones (e.g. a tiny FTP rounds to equal boundaries).
    case invalidZones(ZoneConfigurationError)

    public var description: String {
        switch self {
        case .ageOutOfRange(let a): "age \(a) is out of range; give an age between \(ZoneFormulas.ageRange.lowerBound) and \(ZoneFormulas.ageRange.upperBound)"
        case .heartRateOutOfRange(let n, let v):
            "\(n) \(ZoneFormulas.format(v)) bpm is out of range; give a value between \(Int(ZoneFormulas.heartRateRange.lowerBound)) and \(Int(ZoneFormulas.heartRateRange.upperBound)) bpm"
        case .restingNotBelowMax(let r, let m):
            "resting heart rate \(ZoneFormulas.format(r)) bpm is not below max heart rate \(ZoneFormulas.format(m)) bpm; check both values"
        case .ftpOutOfRange(let f):
            "FTP \(ZoneFormulas.format(f)) W is out of range; give a value between \(Int(ZoneFormulas.ftpRange.lowerBound)) and \(Int(ZoneFormulas.ftpRange.upperBound)) W"
        case .missing(let model, let need): "the \(model) heart-rate model needs \(need); set it or choose another model"
        case .invalidZones(let e): "computed zones are invalid: \(e)"
        }
    }
}

/// The zone formulas. All boundaries are rounded to whole bpm / W, halves away from zero
/// (137.5 W → 138 W), computed as `reference × percent / 100` so that whole-number inputs give
/// exact halves before rounding.
public enum ZoneFormulas {
    public static let ageRange = 5...120
    public static let heartRateRange = 20.0...260.0
    public static let ftpRange = 20.0...2_500.0

    /// Lower edges of zones 1–5 as % of max HR (or of the reserve, for Karvonen). Five
    /// boundaries make six bands: the one below 50 % is "Z0" (below zone 1, not a training zone).
    public static let percentOfMaxPercents: [Double] = [50, 60, 70, 80, 90]
    public static let percentOfMaxZoneNames = ["Z0", "Z1", "Z2", "Z3", "Z4", "Z5"]
    /// Friel's cycling heart-rate zones as % of lactate-threshold HR, as published in
    /// "The Cyclist's Training Bible" and his "Quick guide to setting zones":
    /// Z1 < 81 %, Z2 81–89 %, Z3 90–93 %, Z4 94–99 %, Z5a 100–102 %, Z5b 103–106 %, Z5c > 106 %.
    /// As boundaries (lower edge of each zone above Z1): 81, 90, 94, 100, 103, 106 %.
    public static let frielLTHRPercents: [Double] = [81, 90, 94, 100, 103, 106]
    public static let frielZoneNames = ["Z1", "Z2", "Z3", "Z4", "Z5a", "Z5b", "Z5c"]
    /// Coggan's power levels as % of FTP: lower edges of L2–L7.
    public static let cogganFTPPercents: [Double] = [55, 75, 90, 105, 120, 150]
    public static let cogganZoneNames = ["Recovery", "Endurance", "Tempo", "Threshold", "VO2max", "Anaerobic", "Neuromuscular"]

    /// `reference × percent / 100` rounded to a whole number, halves away from zero.
    public static func percentOf(_ reference: Double, _ percent: Double) -> Double {
        (reference * percent / 100).rounded(.toNearestOrAwayFromZero)
    }

    /// 220 − age.
    public static func estimatedMaxHeartRate(age: Int) -> Double { Double(220 - age) }

    public static func percentOfMax(maxHeartRateBpm max: Double) throws(ZoneModelError) -> ZoneConfiguration {
        try make(.heartRate, percentOfMaxPercents.map { percentOf(max, $0) }, names: percentOfMaxZoneNames)
    }

    /// Karvonen: resting + percent × (max − resting), rounded.
    public static func heartRateReserve(maxHeartRateBpm max: Double, restingHeartRateBpm rest: Double) throws(ZoneModelError) -> ZoneConfiguration {
        guard rest < max else { throw .restingNotBelowMax(resting: rest, max: max) }
        return try make(.heartRate, percentOfMaxPercents.map { (rest + (max - rest) * $0 / 100).rounded(.toNearestOrAwayFromZero) },
                        names: percentOfMaxZoneNames)
    }

    public static func percentOfLactateThreshold(lthrBpm: Double) throws(ZoneModelError) -> ZoneConfiguration {
        try make(.heartRate, frielLTHRPercents.map { percentOf(lthrBpm, $0) }, names: frielZoneNames)
    }

    public static func coggan(ftpW: Double) throws(ZoneModelError) -> ZoneConfiguration {
        guard ftpRange.contains(ftpW) else { throw .ftpOutOfRange(ftpW) }
        return try make(.power, cogganFTPPercents.map { percentOf(ftpW, $0) }, names: cogganZoneNames)
    }

    static func make(_ q: Quantity, _ boundaries: [Double], names: [String]? = nil) throws(ZoneModelError) -> ZoneConfiguration {
        do { return try ZoneConfiguration(quantity: q, boundaries: boundaries, names: names) } catch { throw .invalidZones(error) }
    }

    /// A whole number without ".0", else the shortest decimal.
    public static func format(_ v: Double) -> String {
        if v.isFinite, v == v.rounded(), abs(v) < 1e15 { return String(Int64(v)) }
        return String(v)
    }
}

/// Where a zone configuration came from, for printing and for the ride file.
public enum ZoneSource: Sendable, Hashable, CustomStringConvertible {
    /// Boundaries set by hand in the settings.
    case explicit
    /// % of max HR; `estimatedFromAge` is the age when max HR was estimated as 220 − age.
    case percentOfMax(maxHeartRateBpm: Double, estimatedFromAge: Int?)
    case heartRateReserve(maxHeartRateBpm: Double, restingHeartRateBpm: Double, estimatedFromAge: Int?)
    case percentOfLactateThreshold(lthrBpm: Double)
    case ftp(ftpW: Double)
    /// Nothing configured: the built-in heart-rate boundaries 91, 114, 136, 158 bpm.
    case builtInDefault
    /// Set for one ride only (control command, scenario); never saved as preferred.
    case customForRide

    public var description: String {
        func maxText(_ m: Double, _ age: Int?) -> String {
            age.map { "max HR \(ZoneFormulas.format(m)) bpm = 220 − age \($0)" } ?? "max HR \(ZoneFormulas.format(m)) bpm"
        }
        switch self {
        case .explicit: return "explicit boundaries from the settings"
        case .percentOfMax(let m, let age): return "50/60/70/80/90 % of \(maxText(m, age))"
        case .heartRateReserve(let m, let r, let age):
            return "heart-rate reserve (Karvonen): resting \(ZoneFormulas.format(r)) bpm + 50/60/70/80/90 % of (\(maxText(m, age)) − resting)"
        case .percentOfLactateThreshold(let l): return "Friel: 81/90/94/100/103/106 % of LTHR \(ZoneFormulas.format(l)) bpm"
        case .ftp(let f): return "Coggan: 55/75/90/105/120/150 % of FTP \(ZoneFormulas.format(f)) W"
        case .builtInDefault: return "built-in default (nothing configured)"
        case .customForRide: return "custom zones for this ride"
        }
    }

    /// A short machine-readable name ("percent_max", "reserve", "lthr", "ftp", "explicit", "default", "custom").
    public var name: String {
        switch self {
        case .explicit: "explicit"
        case .percentOfMax: "percent_max"
        case .heartRateReserve: "reserve"
        case .percentOfLactateThreshold: "lthr"
        case .ftp: "ftp"
        case .builtInDefault: "default"
        case .customForRide: "custom"
        }
    }
}

/// A zone configuration and where it came from.
public struct SourcedZones: Sendable, Hashable {
    public var zones: ZoneConfiguration
    public var source: ZoneSource

    public init(_ zones: ZoneConfiguration, source: ZoneSource) {
        self.zones = zones
        self.source = source
    }
}

/// The zones in force: heart rate always (the built-in default when nothing is configured),
/// power when FTP or explicit power zones are known.
public struct ZonesInForce: Sendable, Hashable {
    public var heartRate: SourcedZones
    public var power: SourcedZones?

    public init(heartRate: SourcedZones, power: SourcedZones?) {
        self.heartRate = heartRate
        self.power = power
    }

    /// The preferred zones from a profile. Heart rate: explicit zones win; else the requested
    /// model; else, by what the profile has: LTHR → Friel, resting HR with max HR or age →
    /// Karvonen, max HR or age → % of max; else the built-in default. Power: explicit zones, else
    /// Coggan from FTP, else none. A requested model missing its inputs, or values out of
    /// range, are refused (never silently replaced by another model).
    public static func preferred(from p: RiderProfile) throws(ZoneModelError) -> ZonesInForce {
        try ZonesInForce(heartRate: heartRateZones(p), power: powerZones(p))
    }

    static func heartRateZones(_ p: RiderProfile) throws(ZoneModelError) -> SourcedZones {
        if let a = p.age, !ZoneFormulas.ageRange.contains(a) { throw .ageOutOfRange(a) }
        for (name, v) in [("max heart rate", p.maxHeartRateBpm), ("resting heart rate", p.restingHeartRateBpm),
                          ("lactate threshold heart rate", p.lactateThresholdHeartRateBpm)] {
            if let v, !ZoneFormulas.heartRateRange.contains(v) { throw .heartRateOutOfRange(name: name, value: v) }
        }
        if let z = p.explicitHeartRateZones { return SourcedZones(z, source: .explicit) }
        let maxHR: (bpm: Double, age: Int?)? = p.maxHeartRateBpm.map { ($0, nil) } ?? p.age.map { (ZoneFormulas.estimatedMaxHeartRate(age: $0), $0) }
        let model: HeartRateZoneModel?
        if let m = p.heartRateModel {
            model = m
        } else if p.lactateThresholdHeartRateBpm != nil {
            model = .percentOfLactateThreshold
        } else if p.restingHeartRateBpm != nil, maxHR != nil {
            model = .heartRateReserve
        } else if maxHR != nil {
            model = .percentOfMax
        } else {
            model = nil
        }
        switch model {
        case nil:
            return SourcedZones(.defaultHeartRate, source: .builtInDefault)
        case .percentOfMax:
            guard let m = maxHR else { throw .missing(model: .percentOfMax, need: "a max heart rate or an age") }
            return SourcedZones(try ZoneFormulas.percentOfMax(maxHeartRateBpm: m.bpm), source: .percentOfMax(maxHeartRateBpm: m.bpm, estimatedFromAge: m.age))
        case .heartRateReserve:
            guard let m = maxHR else { throw .missing(model: .heartRateReserve, need: "a max heart rate or an age") }
            guard let r = p.restingHeartRateBpm else { throw .missing(model: .heartRateReserve, need: "a resting heart rate") }
            return SourcedZones(try ZoneFormulas.heartRateReserve(maxHeartRateBpm: m.bpm, restingHeartRateBpm: r),
                                source: .heartRateReserve(maxHeartRateBpm: m.bpm, restingHeartRateBpm: r, estimatedFromAge: m.age))
        case .percentOfLactateThreshold:
            guard let l = p.lactateThresholdHeartRateBpm else { throw .missing(model: .percentOfLactateThreshold, need: "a lactate threshold heart rate") }
            return SourcedZones(try ZoneFormulas.percentOfLactateThreshold(lthrBpm: l), source: .percentOfLactateThreshold(lthrBpm: l))
        }
    }

    static func powerZones(_ p: RiderProfile) throws(ZoneModelError) -> SourcedZones? {
        if let z = p.explicitPowerZones { return SourcedZones(z, source: .explicit) }
        guard let f = p.ftpW else { return nil }
        return SourcedZones(try ZoneFormulas.coggan(ftpW: f), source: .ftp(ftpW: f))
    }

    /// Ride settings with these zones (and the FTP, when known) in place of `base`'s.
    public func applied(to base: RideSettings, ftpW: Double? = nil) -> RideSettings {
        var s = base
        s.heartRateZones = heartRate.zones
        s.powerZones = power?.zones
        if let ftpW { s.ftpW = ftpW }
        return s
    }
}
