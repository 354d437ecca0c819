import Battery
import Navigation
import Positioning
import RideModel

/// Metrics a screen field can show. Layouts (in the Screens module) are lists of these.
public enum Metric: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case speed = 0, averageSpeed, maxSpeed, distance
    case heartRate, averageHeartRate, maxHeartRate, heartRateZone
    case power, averagePower, maxPower, normalizedPower, powerZone
    case cadence, averageCadence
    case lapDistance, lapAveragePower, lapAverageSpeed, lapAverageHeartRate
    /// Climbing (docs/gps.md): altitude (m), the ride's total ascent (m), grade (%).
    case altitude, ascent, grade

    public static let countMax = 22

    public var description: String {
        switch self {
        case .speed: "speed"
        case .averageSpeed: "avg_speed"
        case .maxSpeed: "max_speed"
        case .distance: "distance"
        case .heartRate: "heart_rate"
        case .averageHeartRate: "avg_heart_rate"
        case .maxHeartRate: "max_heart_rate"
        case .heartRateZone: "hr_zone"
        case .power: "power"
        case .averagePower: "avg_power"
        case .maxPower: "max_power"
        case .normalizedPower: "np"
        case .powerZone: "power_zone"
        case .cadence: "cadence"
        case .averageCadence: "avg_cadence"
        case .lapDistance: "lap_distance"
        case .lapAveragePower: "lap_avg_power"
        case .lapAverageSpeed: "lap_avg_speed"
        case .lapAverageHeartRate: "lap_avg_heart_rate"
        case .altitude: "altitude"
        case .ascent: "ascent"
        case .grade: "grade"
        }
    }
}

/// What the screen must show.
public enum ScreenMode: Sendable, Hashable, CustomStringConvertible {
    case idle
    /// Seconds left: 3, 2, 1.
    case countdown(Int)
    /// Data page k (0-based).
    case running(page: Int)
    case paused
    /// Summary page k (0-based).
    case summary(page: Int)
    /// "Discard ride?" confirmation on the summary.
    case confirmDiscard
    /// The Sensors screen (from idle): `ScreenModel.sensorsMenu`.
    case sensors
    /// The Courses screen (LAP on idle): `ScreenModel.coursesMenu`.
    case courses

    public var description: String {
        switch self {
        case .idle: "idle"
        case .countdown(let n): "countdown \(n)"
        case .running(let p): "running page \(p + 1)"
        case .paused: "paused"
        case .summary(let p): "summary page \(p + 1)"
        case .confirmDiscard: "confirm discard"
        case .sensors: "sensors"
        case .courses: "courses"
        }
    }
}

/// The finished ride's figures, for the summary screen (built once at the stop).
public struct RideSummary: Sendable, Hashable {
    public var rideID: RideID
    public var saved: Bool?
    public var timerTimeMs: Int64
    public var elapsedTimeMs: Int64
    /// Timer time with a speed of at least `RideSettings.movingSpeedMps` (nil without speed).
    public var movingTimeMs: Int64? = nil
    public var distanceM: Double?
    public var averageSpeedMps: Double?
    public var maxSpeedMps: Double?
    public var averageHeartRate: Double?
    public var maxHeartRate: Double?
    public var averagePowerW: Double?
    public var maxPowerW: Double?
    public var normalizedPowerW: Double?
    public var averageCadence: Double?
    public var maxCadence: Double?
    public var lapCount: Int
    public var heartRateZoneTimes: ZoneTimes
    public var powerZoneTimes: ZoneTimes
    public var recovered: Bool
    /// The zones the ride used (for labelling the time-in-zone charts).
    public var heartRateZones: ZoneConfiguration? = nil
    public var powerZones: ZoneConfiguration? = nil
    /// Time in zone per lap, in lap order.
    public var lapHeartRateZoneTimes: [ZoneTimes] = []
    public var lapPowerZoneTimes: [ZoneTimes] = []
    /// Speed, heart rate, power, cadence and altitude over timer time (the chart pages).
    public var charts = SummaryCharts()
    /// What a rear radar saw (vehicles, beeps, the worst threat); empty without one.
    public var radar = RadarRideStatistics()
}

/// The screen value: everything the renderer needs, and nothing it must compute. Updated in
/// place by the app core (no allocation per update).
public struct ScreenModel: Sendable, Hashable {
    public var mode: ScreenMode = .idle
    public var timerMs: Int64 = 0
    public var elapsedMs: Int64 = 0
    /// Moving time of the ride (timer time at speed ≥ the moving threshold; nil without speed).
    public var movingMs: Int64?
    public var lapTimerMs: Int64 = 0
    /// 1-based number of the current lap.
    public var lapNumber: Int = 0
    /// Metric values indexed by `Metric.rawValue`; nil = no live data ("--").
    public var metrics: [Double?] = Array(repeating: nil, count: Metric.countMax)
    /// Sensor states indexed by `SensorRole.rawValue`.
    public var sensors: [SensorState] = Array(repeating: .notConfigured, count: SensorRole.allCases.count)
    /// Last battery level each sensor reported, %, indexed by `SensorRole.rawValue` (nil: none yet).
    public var sensorBatteryPercent: [Int?] = Array(repeating: nil, count: SensorRole.allCases.count)
    public var overlay: Alert?
    public var storage: StorageCondition = .ok
    /// The ride on screen was recovered after a crash.
    public var recovered = false
    public var summary: RideSummary?
    /// A companion's pairing code to show until it is cleared (six digits): the whole screen
    /// when idle, a small badge over anything else (the rider's ride is never hidden); any
    /// button press clears it.
    public var pairingCode: UInt32?
    /// Number of running data pages (for "1/3" indicators).
    public var runningPageCount = 3
    /// The Sensors screen's rows, selection and search (shown in mode `.sensors`).
    public var sensorsMenu = SensorsMenu()
    /// Zone bars: how many zones the ride has per quantity (0: no zones), and the target zone
    /// (0-based) if one is set. The current zone number as shown ("Z3") is
    /// `metrics[.heartRateZone]` / `[.powerZone]`; its name ("Z5a", "Tempo") is below.
    public var heartRateZoneCount = 0
    public var powerZoneCount = 0
    public var heartRateTargetZone: Int?
    public var powerTargetZone: Int?
    public var heartRateZoneName: String?
    public var powerZoneName: String?
    /// The GPS receiver: fix mode and satellites (the status row, idle).
    public var gps = GpsStatus()
    /// The track so far, for the map page (stored inline: no allocation when copied).
    public var track = Breadcrumb()
    /// The rear radar's vehicles while it is connected (empty: a clear road, or no radar: its
    /// state is `sensor(.radar)`); the radar column is shown on every running page while a radar
    /// is paired.
    public var radar = RadarPicture()

    /// Whether a radar is paired: the running pages make room for its column.
    public var radarShown: Bool { sensor(.radar) != .notConfigured }
    /// The course being followed and where the rider is on it (the navigation pages, the map).
    public var navigation = NavigationView()
    /// The Courses screen's rows and selection (shown in mode `.courses`).
    public var coursesMenu = CoursesMenu()
    /// The unit's own battery (nil: no gauge configured): idle and the running pages' status.
    public var battery: BatteryStatus?
    /// The unit is powering off (the battery, the power button): shown over everything.
    public var poweringOff: PowerOffReason?

    public init() {}

    @inlinable public subscript(metric: Metric) -> Double? {
        get { metrics[Int(metric.rawValue)] }
        set { metrics[Int(metric.rawValue)] = newValue }
    }

    public func sensor(_ role: SensorRole) -> SensorState { sensors[Int(role.rawValue)] }
}
