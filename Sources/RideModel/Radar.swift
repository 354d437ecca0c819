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
