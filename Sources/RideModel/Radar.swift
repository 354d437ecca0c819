// What a rear radar sees, as every module shares it: the vehicles behind the rider, nearest first,
// with their range, closing speed and threat. The radar decoders (Sensors) make it, the data
// source hands it to the app (`SensorEvent.radar`), the app core turns it into alerts and ride
// statistics, the screens draw it. Fixed size: a picture allocates nothing.

/// How much a vehicle behind threatens the rider (the ANT+ Bike Radar profile's threat level).
public enum RadarThreat: UInt8, Sendable, Hashable, Comparable, CaseIterable, CustomStringConvertible {
    case none = 0
    case approaching = 1
    /// Closing fast: drawn distinctly, counted apart.
    case fastApproach = 2

    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }

    public var description: String {
        switch self {
        case .none: "none"
        case .approaching: "approaching"
        case .fastApproach: "fast_approach"
        }
    }
}

/// Where a vehicle is behind the rider (ANT+ only; a BLE radar does not say).
public enum RadarSide: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case behind = 0, right = 1, left = 2

    public var description: String {
        switch self {
        case .behind: "behind"
        case .right: "right"
        case .left: "left"
        }
    }
}

/// One vehicle the radar tracks.
public struct RadarTarget: Sendable, Hashable {
    /// Distance behind the rider, m.
    public var rangeM: Double
    /// How fast it closes in, m/s; nil when the radar did not say (and it could not be estimated yet).
    public var closingSpeedMps: Double?
    public var threat: RadarThreat
    public var side: RadarSide?

    public init(rangeM: Double, closingSpeedMps: Double? = nil, threat: RadarThreat = .approaching, side: RadarSide? = nil) {
        self.rangeM = rangeM
        self.closingSpeedMps = closingSpeedMps
        self.threat = threat
        self.side = side
    }
}

/// The vehicles behind the rider in one radar frame, nearest first; empty is a clear road (which
/// only a connected radar can say: a lost radar's state is the radar role's, never an empty picture).
public struct RadarPicture: Sendable, Hashable {
    /// The most vehicles a radar reports (ANT+ pages 48 and 49: 4 each).
    public static let targetsMax = 8
    /// How far back the radars see (Garmin Varia: 140 m); the screen's scale. Farther ranges
    /// (an ANT+ range reaches 196.9 m) are drawn at the top.
    public static let reachM: Double = 140

    var storage = InlineArray<8, RadarTarget>(repeating: RadarTarget(rangeM: 0, threat: .none))
    public private(set) var count = 0

    public init() {}

    public init(_ targets: [RadarTarget]) {
        for t in targets { insert(t) }
    }

    public var isClear: Bool { count == 0 }

    public subscript(i: Int) -> RadarTarget {
        precondition(i >= 0 && i < count, "radar target index out of range")
        return storage[i]
    }

    /// Adds a vehicle in range order; false (and nothing changes) when the picture is full.
    @discardableResult
    public mutating func insert(_ t: RadarTarget) -> Bool {
        guard count < Self.targetsMax else { return false }
        var i = count
        while i > 0 && storage[i - 1].rangeM > t.rangeM {
            storage[i] = storage[i - 1]
            i -= 1
        }
        storage[i] = t
        count += 1
        assert(count <= Self.targetsMax)
        return true
    }

    public mutating func removeAll() { count = 0 }

    /// The nearest vehicle (nil on a clear road).
    public var nearest: RadarTarget? { count > 0 ? storage[0] : nil }

    /// The highest threat in the picture (`.none` on a clear road).
    public var maxThreat: RadarThreat {
        var m = RadarThreat.none
        for i in 0..<count where storage[i].threat > m { m = storage[i].threat }
        return m
    }

    /// The fastest closing speed reported, m/s.
    public var maxClosingSpeedMps: Double? {
        var m: Double?
        for i in 0..<count { if let s = storage[i].closingSpeedMps, s > (m ?? -.infinity) { m = s } }
        return m
    }

    public static func == (a: Self, b: Self) -> Bool {
        guard a.count == b.count else { return false }
        for i in 0..<a.count where a.storage[i] != b.storage[i] { return false }
        return true
    }

    public func hash(into h: inout Hasher) {
        h.combine(count)
        for i in 0..<count { h.combine(storage[i]) }
    }
}

/// Vehicles coming up behind, as a ride records them (a `RideEvent` of kind `.radar`, its
/// fields packed into the event's `value`; a FIT radar_threat_alert event in the file).
public struct RadarAlertRecord: Sendable, Hashable {
    /// Vehicles that came into view since the previous frame (1...8).
    public var vehiclesArrived: Int
    /// Vehicles in view with them (1...8).
    public var vehiclesInView: Int
    public var maxThreat: RadarThreat
    /// The rider was beeped for them (not within the beep's debounce).
    public var alerted: Bool
    /// Closing speeds of the vehicles in view, m/s (0.1 m/s steps, at most 25.5 m/s as FIT keeps them).
    public var averageClosingSpeedMps: Double?
    public var maxClosingSpeedMps: Double?

    public init(vehiclesArrived: Int, vehiclesInView: Int, maxThreat: RadarThreat, alerted: Bool,
                averageClosingSpeedMps: Double? = nil, maxClosingSpeedMps: Double? = nil) {
        self.vehiclesArrived = min(max(vehiclesArrived, 0), RadarPicture.targetsMax)
        self.vehiclesInView = min(max(vehiclesInView, 0), RadarPicture.targetsMax)
        self.maxThreat = maxThreat
        self.alerted = alerted
        self.averageClosingSpeedMps = averageClosingSpeedMps.map(Self.tenths)
        self.maxClosingSpeedMps = maxClosingSpeedMps.map(Self.tenths)
    }

    /// The vehicles that arrived in `picture` (`arrived` of them), as recorded.
    public init(_ picture: RadarPicture, arrived: Int, alerted: Bool) {
        var sum = 0.0, n = 0
        for i in 0..<picture.count { if let s = picture[i].closingSpeedMps { sum += s; n += 1 } }
        self.init(vehiclesArrived: arrived, vehiclesInView: picture.count, maxThreat: picture.maxThreat, alerted: alerted,
                  averageClosingSpeedMps: n > 0 ? sum / Double(n) : nil, maxClosingSpeedMps: picture.maxClosingSpeedMps)
    }

    static func tenths(_ v: Double) -> Double { (min(max(v, 0), 25.4) * 10).rounded() / 10 }

    /// The event's value: arrived (bits 0–3), in view (4–7), threat (8–9), alerted (10),
    /// average and maximum speed in 0.1 m/s + 1 (16–23, 24–31; 0: none).
    public var value: Int64 {
        func speed(_ v: Double?) -> Int64 { v.map { Int64(($0 * 10).rounded()) + 1 } ?? 0 }
        return Int64(vehiclesArrived) | Int64(vehiclesInView) << 4 | Int64(maxThreat.rawValue) << 8
            | (alerted ? 1 << 10 : 0) | speed(averageClosingSpeedMps) << 16 | speed(maxClosingSpeedMps) << 24
    }

    public init?(value v: Int64) {
        guard v >= 0, v < 1 << 32, let threat = RadarThreat(rawValue: UInt8((v >> 8) & 3)) else { return nil }
        func speed(_ bits: Int64) -> Double? { bits == 0 ? nil : Double(bits - 1) / 10 }
        self.init(vehiclesArrived: Int(v & 0xF), vehiclesInView: Int((v >> 4) & 0xF), maxThreat: threat,
                  alerted: v & (1 << 10) != 0, averageClosingSpeedMps: speed((v >> 16) & 0xFF), maxClosingSpeedMps: speed((v >> 24) & 0xFF))
    }
}

/// A ride's radar figures, from its `.radar` events (the builder adds them as they come, the
/// recovery and the export rebuild them from the journal or the file).
public struct RadarRideStatistics: Sendable, Hashable {
    /// Vehicles that came up behind the rider.
    public private(set) var vehicles = 0
    /// Times the rider was beeped for them.
    public private(set) var alerts = 0
    /// The highest threat any of them posed (`.none` when none came).
    public private(set) var maxThreat = RadarThreat.none
    /// The fastest closing speed reported, m/s.
    public private(set) var maxClosingSpeedMps: Double?

    public init() {}

    public mutating func add(_ r: RadarAlertRecord) {
        vehicles += r.vehiclesArrived
        if r.alerted { alerts += 1 }
        maxThreat = max(maxThreat, r.maxThreat)
        if let s = r.maxClosingSpeedMps { maxClosingSpeedMps = max(maxClosingSpeedMps ?? 0, s) }
    }
}
