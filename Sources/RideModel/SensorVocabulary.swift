// The sensor vocabulary every pure module shares, defined once: the roles a screen shows status
// for, a source's state, and what the data source tells the app (`SensorEvent`). Sensors emits
// these, AppCore consumes them, Screens and the control stream show them; nothing maps one set
// of roles or states onto another.

/// What a sensor is for, as the rider sees it: one status box on the screen, one "LOST" alert.
/// Adding a role (a GPS fix, a radar) is one case here; arrays indexed by role are sized by
/// `allCases`.
public enum SensorRole: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case heartRate = 0, power = 1, speed = 2, cadence = 3
    /// The GPS fix (docs/gps.md): connected while fixes come, lost when the fix is.
    case gps = 4

    /// The quantity whose sources decide this role's state (the best state among the paired
    /// sources that provide it).
    public var quantity: Quantity {
        switch self {
        case .heartRate: .heartRate
        case .power: .power
        case .speed: .speed
        case .cadence: .cadence
        case .gps: .latitude
        }
    }

    /// The live quantities a source in this role provides (shown as "--" once it is lost).
    public var liveQuantities: [Quantity] {
        switch self {
        case .heartRate: [.heartRate, .rrInterval]
        case .power: [.power, .pedalBalanceRight, .torqueEffectivenessLeft, .torqueEffectivenessRight,
                      .pedalSmoothnessLeft, .pedalSmoothnessRight]
        case .speed: [.speed]
        case .cadence: [.cadence]
        case .gps: [.latitude, .longitude]
        }
    }

    /// The short word on the screen and in alerts ("HR LOST").
    public var description: String {
        switch self {
        case .heartRate: "HR"
        case .power: "PWR"
        case .speed: "SPD"
        case .cadence: "CAD"
        case .gps: "GPS"
        }
    }

    /// The role's key in JSON (control stream, status).
    public var key: String { self == .gps ? "gps" : quantity.name }
}

/// A source's (or a role's) state. Ordered by how much it tells: a role with one lost and one
/// never-seen source shows lost; with one connected source it shows connected.
public enum SensorState: UInt8, Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Nothing provides this (a role no paired source fills), or not expected for the ride.
    case notConfigured = 0
    /// Paired, not heard from yet.
    case searching = 1
    /// Was connected, then nothing for the data source's `lostAfterMs`, the bridge said
    /// disconnected, or the bridge itself went away.
    case lost = 2
    /// Heard from, but nothing decodable for `staleAfterMs`.
    case stale = 3
    case connected = 4

    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }

    public var description: String {
        switch self {
        case .notConfigured: "not_configured"
        case .searching: "searching"
        case .lost: "lost"
        case .stale: "stale"
        case .connected: "connected"
        }
    }
}

/// A role's state and battery, as the data source reports it.
public struct SensorStatus: Sendable, Hashable {
    public var role: SensorRole
    public var state: SensorState
    public var batteryPercent: Int?

    public init(_ role: SensorRole, _ state: SensorState, batteryPercent: Int? = nil) {
        self.role = role
        self.state = state
        self.batteryPercent = batteryPercent
    }
}

/// A sensor a search found, in the words pairing uses (`bikecomputer sensors pair ID --role
/// ROLE`, the config file's [[sensor]] keys).
public struct FoundSensor: Sendable, Hashable {
    /// "ble:C0:FF:EE:00:11:22" or "ant:12345/11/0" (as `bikecomputer sensors` lists sensors).
    public var id: String
    /// The config file's role it would be paired with: heart_rate, power, speed_cadence, speed,
    /// cadence (the first service a BLE device advertises; an ANT+ device type's).
    public var role: String
    /// Its advertised name (empty for ANT+).
    public var name: String
    /// Signal strength, dBm; nil when the radio did not say.
    public var rssi: Int?

    public init(id: String, role: String, name: String = "", rssi: Int? = nil) {
        self.id = id
        self.role = role
        self.name = name
        self.rssi = rssi
    }
}

/// What the data source tells the app. A new kind of reading that is not a plain quantity (a
/// position fix with its quality, a list of radar threats) is a new case here, emitted by the
/// data source and handled by `AppCore.handleSensorEvent`; nothing in between changes.
public enum SensorEvent: Sendable, Hashable {
    /// A live decoded value.
    case sample(Sample)
    /// A role's state or battery changed.
    case status(SensorStatus, at: MonotonicInstant)
    /// The GPS receiver's fix mode or satellites changed.
    case gps(GpsStatus, at: MonotonicInstant)
    /// A receiver's clock (GPS time from a fix): a trusted wall-clock reading.
    case clock(WallClockTime, at: MonotonicInstant)
    /// A search for sensors found one (or heard it again).
    case found(FoundSensor, at: MonotonicInstant)
    /// A search started or ended, with the number of sensors found so far.
    case search(running: Bool, found: Int, at: MonotonicInstant)
    /// The sensor bridge read the config file (`readable`), or could not and keeps the sensors
    /// it had; `line` is where the file is wrong (0: it cannot tell). Said when it changes.
    case bridgeConfig(readable: Bool, line: Int, at: MonotonicInstant)

    public var instant: MonotonicInstant {
        switch self {
        case .sample(let s): s.instant
        case .status(_, let t), .gps(_, let t), .clock(_, let t), .found(_, let t), .search(_, _, let t), .bridgeConfig(_, _, let t): t
        }
    }
}
