/// Why a zone configuration was refused.
public enum ZoneConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    case empty
    case tooMany(count: Int, max: Int)
    case negative(Double)
    /// NaN or infinite.
    case notFinite(index: Int)
    case notIncreasing(index: Int, previous: Double, value: Double)
    case unsupportedQuantity(Quantity)
    case namesMismatch(names: Int, zones: Int)

    public var description: String {
        switch self {
        case .empty: "a zone configuration needs at least one boundary"
        case .tooMany(let c, let m): "\(c) boundaries given; at most \(m) are allowed (\(m + 1) zones)"
        case .negative(let v): "boundary \(v) is negative; give boundaries of 0 or more"
        case .notFinite(let i): "boundary \(i + 1) is not a finite number; give plain numbers such as 120"
        case .notIncreasing(let i, let p, let v):
            "boundary \(i + 1) (\(v)) is not above boundary \(i) (\(p)); list boundaries in strictly increasing order"
        case .unsupportedQuantity(let q): "zones are for heart rate or power, not \(q)"
        case .namesMismatch(let n, let z): "\(n) zone names given for \(z) zones; give one name per zone or none"
        }
    }
}

/// A quantity (heart rate or power) and an ordered list of boundaries: n boundaries make n + 1
/// contiguous zones. Zone 0 is below the first boundary; a value equal to a boundary belongs to
/// the zone above it. Zones are shown to the rider numbered from 1 (Z1 ... Zn+1).
public struct ZoneConfiguration: Sendable, Hashable {
    public static let boundariesMax = 9
    public static let zonesMax = boundariesMax + 1

    public let quantity: Quantity
    public let boundaries: [Double]
    public let names: [String]?

    public init(quantity: Quantity, boundaries: [Double], names: [String]? = nil) throws(ZoneConfigurationError) {
        guard quantity == .heartRate || quantity == .power else { throw .unsupportedQuantity(quantity) }
        guard !boundaries.isEmpty else { throw .empty }
        guard boundaries.count <= Self.boundariesMax else { throw .tooMany(count: boundaries.count, max: Self.boundariesMax) }
        for (i, b) in boundaries.enumerated() {
            guard b.isFinite else { throw .notFinite(index: i) }
            guard b >= 0 else { throw .negative(b) }
            if i > 0, b <= boundaries[i - 1] { throw .notIncreasing(index: i, previous: boundaries[i - 1], value: b) }
        }
        if let names, names.count != boundaries.count + 1 { throw .namesMismatch(names: names.count, zones: boundaries.count + 1) }
        self.quantity = quantity
        self.boundaries = boundaries
        self.names = names
    }

    public var zoneCount: Int { boundaries.count + 1 }

    /// The 0-based zone of `value`.
    public func zone(of value: Double) -> Int {
        var z = 0
        for b in boundaries where value >= b { z += 1 }
        return z
    }

    /// The lowest value in 0-based `zone` (0 for the first zone).
    public func lowerBound(ofZone zone: Int) -> Double { zone <= 0 ? 0 : boundaries[min(zone, boundaries.count) - 1] }

    /// The first value above 0-based `zone` (infinity for the last zone).
    public func upperBound(ofZone zone: Int) -> Double { zone >= boundaries.count ? .infinity : boundaries[max(zone, 0)] }

    /// The rider-facing name of 0-based `zone`: its configured name, else "Z1", "Z2", ...
    public func name(ofZone zone: Int) -> String {
        if let names, zone >= 0, zone < names.count { return names[zone] }
        return "Z\(zone + 1)"
    }

    /// The zone number shown for 0-based `zone`: zone + 1, except when the first zone is named
    /// "Z0" (a band below zone 1, as in the percent-of-max and heart-rate-reserve models, whose
    /// five zones start at 50 %): then the number is `zone`.
    public func number(ofZone zone: Int) -> Int { names?.first == "Z0" ? zone : zone + 1 }

    /// The default heart-rate model when nothing is configured: 91, 114, 136, 158 bpm.
    public static let defaultHeartRate = try! ZoneConfiguration(quantity: .heartRate, boundaries: [91, 114, 136, 158])
}

/// Time spent in each zone, ms, in fixed storage (no allocation after creation).
public struct ZoneTimes: Sendable, Hashable {
    public internal(set) var milliseconds: [Int64]
    public let zoneCount: Int

    public init(zoneCount: Int) {
        precondition(zoneCount >= 0 && zoneCount <= ZoneConfiguration.zonesMax)
        self.zoneCount = zoneCount
        milliseconds = Array(repeating: 0, count: ZoneConfiguration.zonesMax)
    }

    public init(milliseconds: [Int64]) {
        precondition(milliseconds.count <= ZoneConfiguration.zonesMax)
        zoneCount = milliseconds.count
        self.milliseconds = milliseconds + Array(repeating: 0, count: ZoneConfiguration.zonesMax - milliseconds.count)
    }

    @inlinable public subscript(zone: Int) -> Int64 { milliseconds[zone] }

    public mutating func add(_ ms: Int64, toZone zone: Int) {
        precondition(zone >= 0 && zone < zoneCount, "zone \(zone) of \(zoneCount)") // a wrong index would corrupt the zone times
        milliseconds[zone] += ms
    }

    public var totalMs: Int64 {
        var t: Int64 = 0
        for i in 0..<zoneCount { t += milliseconds[i] }
        return t
    }

    /// The times of the configured zones (allocates; for summaries and files).
    public var values: [Int64] { Array(milliseconds[0..<zoneCount]) }
}
