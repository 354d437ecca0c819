/// What a sample measures. Units are fixed per quantity and named in `unit`.
public enum Quantity: UInt8, CaseIterable, Sendable, Hashable, CustomStringConvertible {
    case heartRate = 0        // bpm
    case power = 1            // W
    case cadence = 2          // rpm
    case speed = 3            // m/s
    case distance = 4         // m, cumulative reading of a counter (not per-sample increments)
    case rrInterval = 5       // s
    case pedalBalanceRight = 6 // % of power from the right pedal
    case torqueEffectivenessLeft = 7  // %
    case torqueEffectivenessRight = 8 // %
    case pedalSmoothnessLeft = 9      // % (or combined, when only one is reported)
    case pedalSmoothnessRight = 10    // %
    case energy = 11          // kJ, cumulative
    case battery = 12         // %
    case altitude = 13        // m
    case latitude = 14        // degrees
    case longitude = 15       // degrees
    case temperature = 16     // °C
    case ascent = 17          // m, cumulative total climbed (device-generated, docs/gps.md)
    case descent = 18         // m, cumulative total descended
    case grade = 19           // %, over the last stretch of road

    /// Number of quantities; arrays indexed by `rawValue` have this many slots.
    public static let countMax = 20

    @inlinable public var index: Int { Int(rawValue) }

    public var unit: String {
        switch self {
        case .heartRate: "bpm"
        case .power: "W"
        case .cadence: "rpm"
        case .speed: "m/s"
        case .distance: "m"
        case .rrInterval: "s"
        case .pedalBalanceRight, .torqueEffectivenessLeft, .torqueEffectivenessRight,
             .pedalSmoothnessLeft, .pedalSmoothnessRight, .battery: "%"
        case .energy: "kJ"
        case .altitude: "m"
        case .latitude, .longitude: "deg"
        case .temperature: "C"
        case .ascent, .descent: "m"
        case .grade: "%"
        }
    }

    /// A cumulative counter (distance, energy, ascent, descent): its statistics are totals of
    /// increments, not averages of readings.
    public var isCumulative: Bool { self == .distance || self == .energy || self == .ascent || self == .descent }

    /// A counter whose change across a pause counts (ascent, descent): recording devices count
    /// the climb between the last reading before a pause and the first after it (an auto-pause
    /// on a steep climb at walking pace), and the altitude's hysteresis carries over the pause.
    /// Distance and energy do not: what was covered while paused is not the ride's.
    public var countsAcrossPauses: Bool { self == .ascent || self == .descent }

    /// Bucketed in the interval table (the quantities charts are drawn from).
    public var isCharted: Bool {
        switch self {
        case .heartRate, .power, .cadence, .speed, .altitude: true
        default: false
        }
    }

    /// snake_case name used in JSON and docs.
    public var name: String {
        switch self {
        case .heartRate: "heart_rate"
        case .power: "power"
        case .cadence: "cadence"
        case .speed: "speed"
        case .distance: "distance"
        case .rrInterval: "rr_interval"
        case .pedalBalanceRight: "pedal_balance_right"
        case .torqueEffectivenessLeft: "torque_effectiveness_left"
        case .torqueEffectivenessRight: "torque_effectiveness_right"
        case .pedalSmoothnessLeft: "pedal_smoothness_left"
        case .pedalSmoothnessRight: "pedal_smoothness_right"
        case .energy: "energy"
        case .battery: "battery"
        case .altitude: "altitude"
        case .latitude: "latitude"
        case .longitude: "longitude"
        case .temperature: "temperature"
        case .ascent: "ascent"
        case .descent: "descent"
        case .grade: "grade"
        }
    }

    public var description: String { name }

    /// The resolution a recorded (1 Hz) value keeps: what the ride file stores anyway (FIT keeps
    /// speed in mm/s, distance in cm, ...). Computed rates carry meaningless low bits; dropping
    /// them keeps the journal small without changing any figure the rider sees or downloads.
    public var recordedResolution: Double {
        switch self {
        case .heartRate, .power, .battery: 1
        case .cadence, .temperature: 0.1
        case .speed: 0.001
        case .distance: 0.01
        case .rrInterval: 0.001
        case .pedalBalanceRight, .torqueEffectivenessLeft, .torqueEffectivenessRight,
             .pedalSmoothnessLeft, .pedalSmoothnessRight: 0.5
        case .energy: 0.001
        case .altitude, .ascent, .descent: 0.2
        case .grade: 0.1
        case .latitude, .longitude: 0.000_000_1
        }
    }

    /// `value` rounded to `recordedResolution`.
    @inlinable public func recordedValue(_ value: Double) -> Double {
        let r = recordedResolution
        return (value / r).rounded() * r
    }
}

/// Where a value came from: a sensor measured it, or the device computed it (distance from wheel
/// revolutions, speed from distance, energy from power).
public enum SampleOrigin: UInt8, Sendable, Hashable {
    case measured = 0
    case generated = 1
}

/// One typed value with its timestamp.
public struct Sample: Sendable, Hashable {
    public var quantity: Quantity
    public var value: Double
    public var instant: MonotonicInstant
    public var origin: SampleOrigin

    @inlinable
    public init(_ quantity: Quantity, _ value: Double, at instant: MonotonicInstant, origin: SampleOrigin = .measured) {
        self.quantity = quantity
        self.value = value
        self.instant = instant
        self.origin = origin
    }
}
