// The sensor vocabulary every module shares, defined once: the kinds of sensor a rider pairs
// (`SensorKind`: what each provides, the roles it fills, its radios and their profiles), the
// roles a screen shows status for, a source's state, and what the data source tells the app
// (`SensorEvent`). The config file, the bridge protocol, the control protocol, the Sensors screen,
// pairing and the data source all use these as they are; nothing maps one set of kinds, roles or
// states onto another. The bridge's copy (board/bridge/bikebridge/kinds.py) is checked against
// `bikecomputer sensors kinds` by its tests.

/// The radio a sensor speaks: the bridge frame's transport byte, the config's `transport`.
public enum SensorTransport: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case ant = 1
    case ble = 2
    /// The config file's and the sensor id's word ("ant", "ble").
    public var description: String { self == .ant ? "ant" : "ble" }
}

/// What a sensor is, as a rider pairs it: the config file's `role`, the control protocol's and
/// the Sensors screen's kind, what a search reports. Everything that depends on the kind of a
/// sensor is a property here, so a new kind of sensor is one case (and its decoder).
public enum SensorKind: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case heartRate = "heart_rate", power, speedCadence = "speed_cadence", speed, cadence
    /// A rear radar (ANT+ Bike Radar, device type 40; Garmin Varia's BLE radar service).
    case radar

    /// The config file's `role`, the control protocol's and the JSON's word.
    public var description: String { rawValue }

    /// Three letters for the small screen.
    public var label: String {
        switch self {
        case .heartRate: "HR"
        case .power: "PWR"
        case .speedCadence: "S+C"
        case .speed: "SPD"
        case .cadence: "CAD"
        case .radar: "RDR"
        }
    }

    /// The roles a ride expects once such a sensor is paired (a missing one is alerted).
    public var roles: [SensorRole] {
        switch self {
        case .heartRate: [.heartRate]
        case .power: [.power]
        case .speedCadence: [.speed, .cadence]
        case .speed: [.speed]
        case .cadence: [.cadence]
        case .radar: [.radar]
        }
    }

    /// The roles whose state such a sensor decides (with the others that fill them): a power
    /// meter's cadence and wheel speed stand for the cadence and speed roles too.
    public var statusRoles: [SensorRole] {
        switch self {
        case .power: [.power, .cadence, .speed]
        default: roles
        }
    }

    /// What such a sensor provides, whichever radio it speaks (a BLE address says nothing of it).
    public var quantities: [Quantity] {
        switch self {
        case .heartRate: [.heartRate, .rrInterval, .battery]
        case .power: [.power, .cadence, .speed, .distance, .energy, .pedalBalanceRight, .torqueEffectivenessLeft,
                      .torqueEffectivenessRight, .pedalSmoothnessLeft, .pedalSmoothnessRight, .battery]
        case .speedCadence: [.speed, .distance, .cadence, .battery]
        case .speed: [.speed, .distance, .battery]
        case .cadence: [.cadence, .battery]
        case .radar: [.battery]  // and the vehicles behind (`SensorEvent.radar`), not a ride quantity
        }
    }

    /// The radios such a sensor can speak.
    public var transports: [SensorTransport] { [.ant, .ble] }

    // MARK: ANT+

    /// The ANT+ device type (the channel id's, the bridge's profile code, FIT's antplus_device_type).
    public var antDeviceType: UInt8 {
        switch self {
        case .heartRate: 120
        case .power: 11
        case .speedCadence: 121
        case .cadence: 122
        case .speed: 123
        case .radar: 40
        }
    }

    /// The ANT+ channel period, 1/32768 s (the profile's message rate).
    public var antChannelPeriod: UInt16 {
        switch self {
        case .heartRate: 8070
        case .power: 8182
        case .speedCadence: 8086
        case .cadence: 8102
        case .speed: 8118
        case .radar: 4084  // 8 Hz
        }
    }

    /// The kind of an ANT+ device type; nil for a type no kind has.
    public init?(antDeviceType t: UInt8) {
        guard let k = Self.allCases.first(where: { $0.antDeviceType == t }) else { return nil }
        self = k
    }

    // MARK: BLE

    /// The GATT service a BLE sensor of this kind advertises (what a search filters on), 128-bit
    /// text; several kinds may share one (CSC 0x1816: speed, cadence, both).
    public var bleService: String {
        switch self {
        case .heartRate: Self.sigUUID(0x180D)
        case .power: Self.sigUUID(0x1818)
        case .speedCadence, .speed, .cadence: Self.sigUUID(0x1816)
        case .radar: Self.variaUUID(0x3200)
        }
    }

    /// The kind a search reports for a device advertising `bleService` (the first kind with it).
    public var isSearchKind: Bool { Self.allCases.first { $0.bleService == bleService } == self }

    /// The found frame's service bit for `bleService` (bridge protocol version 2): one bit per
    /// distinct advertised service, in kind order.
    public var foundServiceBit: UInt16 {
        let services = Self.allCases.filter(\.isSearchKind).map(\.bleService)
        return 1 << UInt16(services.firstIndex(of: bleService)!)
    }

    /// The kind a search reports for a found frame's service bits; nil when none is known. A
    /// device advertising several is taken for the kind that fills the most roles (a trainer
    /// advertising power and speed/cadence is paired as a power meter).
    public init?(foundServices bits: UInt16) {
        let candidates = Self.allCases.filter { $0.isSearchKind && bits & $0.foundServiceBit != 0 }
        guard let k = candidates.max(by: { $0.statusRoles.count < $1.statusRoles.count }) else { return nil }
        self = k
    }

    /// The characteristics whose notifications carry its measurements (the bridge frame's BLE
    /// profile code: a SIG characteristic's 16-bit UUID).
    public var bleMeasurements: [UInt16] {
        switch self {
        case .heartRate: [0x2A37]
        case .power: [0x2A63]
        case .speedCadence, .speed, .cadence: [0x2A5B]
        case .radar: [0x3203]  // Garmin's shorthand of its 128-bit characteristic
        }
    }

    /// The 128-bit UUIDs of `bleMeasurements`, in the same order.
    public var bleMeasurementUUIDs: [String] { bleMeasurements.map(self == .radar ? Self.variaUUID : Self.sigUUID) }

    /// Characteristics read once after connecting (Cycling Power Feature).
    public var bleReads: [UInt16] { self == .power ? [0x2A65] : [] }

    /// FIT's ble_device_type for it (the ride file's device_info).
    public var fitBleDeviceType: UInt8 {
        switch self {
        case .heartRate: 1
        case .power: 2
        case .speedCadence: 3
        case .speed: 4
        case .cadence: 5
        case .radar: 0xFF  // FIT has no BLE radar type: invalid
        }
    }

    /// A 16-bit SIG UUID in 128-bit text form.
    public static func sigUUID(_ u: UInt16) -> String {
        let digits: [Character] = Array("0123456789abcdef")
        var s = "0000"
        for shift in stride(from: 12, through: 0, by: -4) { s.append(digits[Int((u >> UInt16(shift)) & 0xF)]) }
        return s + "-0000-1000-8000-00805f9b34fb"
    }

    /// A UUID of Garmin's Varia radar family, 6a4e`u`-667b-11e3-949a-0800200c9a66 (its radar
    /// service is 0x3200, the targets characteristic 0x3203).
    public static func variaUUID(_ u: UInt16) -> String {
        "6a4e" + String(sigUUID(u).dropFirst(4).prefix(4)) + "-667b-11e3-949a-0800200c9a66"
    }

    /// The bridge protocol's profile code of a BLE characteristic given as typed: 4 hex digits
    /// (a SIG UUID), a kind's 8-digit shorthand ("6a4e3203") or its 128-bit text.
    public static func bleProfileCode(uuid typed: String) -> UInt16? {
        let u = typed.lowercased().hasPrefix("0x") ? String(typed.lowercased().dropFirst(2)) : typed.lowercased()
        for k in allCases {
            for (code, full) in zip(k.bleMeasurements, k.bleMeasurementUUIDs) where full == u || (u.count == 8 && full.hasPrefix(u)) {
                return code
            }
        }
        if u.count == 4 { return UInt16(u, radix: 16) }
        if u.count == 36, u.hasPrefix("0000"), u.hasSuffix(String(sigUUID(0).dropFirst(8))) { return UInt16(u.dropFirst(4).prefix(4), radix: 16) }
        return nil
    }

    /// The kinds' words, for messages ("heart_rate, power, ...").
    public static var names: String { allCases.map(\.rawValue).joined(separator: ", ") }
}

/// What a sensor is for, as the rider sees it: one status box on the screen, one "LOST" alert.
/// Adding a role (a GPS fix, a radar) is one case here; arrays indexed by role are sized by
/// `allCases`. Which sources decide a role's state is the sources' business (`SensorKind
/// .statusRoles`, or the onboard receiver's), not a quantity's.
public enum SensorRole: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case heartRate = 0, power = 1, speed = 2, cadence = 3
    /// The GPS fix (docs/gps.md): connected while fixes come, lost when the fix is.
    case gps = 4
    /// The rear radar: connected while it reports (a clear road included), lost when it stops.
    case radar = 5

    /// The live quantities a source in this role provides (shown as "--" once it is lost); the
    /// first is the one whose enabling decides whether the role is in use.
    public var liveQuantities: [Quantity] {
        switch self {
        case .heartRate: [.heartRate, .rrInterval]
        case .power: [.power, .pedalBalanceRight, .torqueEffectivenessLeft, .torqueEffectivenessRight,
                      .pedalSmoothnessLeft, .pedalSmoothnessRight]
        case .speed: [.speed]
        case .cadence: [.cadence]
        case .gps: [.latitude, .longitude]
        case .radar: []  // the vehicles behind are its reading (`SensorEvent.radar`)
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
        case .radar: "RDR"
        }
    }

    /// The role's key in JSON (control stream, status).
    public var key: String {
        switch self {
        case .heartRate: "heart_rate"
        case .power: "power"
        case .speed: "speed"
        case .cadence: "cadence"
        case .gps: "gps"
        case .radar: "radar"
        }
    }
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
    /// The kind it would be paired as (the first service a BLE device advertises; an ANT+
    /// device type's); nil when the bridge reported something no kind knows.
    public var kind: SensorKind?
    /// Its advertised name (empty for ANT+).
    public var name: String
    /// Signal strength, dBm; nil when the radio did not say.
    public var rssi: Int?

    public init(id: String, kind: SensorKind?, name: String = "", rssi: Int? = nil) {
        self.id = id
        self.kind = kind
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
    /// A rear radar's frame: the vehicles behind (none: a clear road).
    case radar(RadarPicture, at: MonotonicInstant)
    /// The sensor bridge read the config file (`readable`), or could not and keeps the sensors
    /// it had; `line` is where the file is wrong (0: it cannot tell). Said when it changes.
    case bridgeConfig(readable: Bool, line: Int, at: MonotonicInstant)

    public var instant: MonotonicInstant {
        switch self {
        case .sample(let s): s.instant
        case .status(_, let t), .gps(_, let t), .clock(_, let t), .found(_, let t), .search(_, _, let t), .radar(_, let t),
             .bridgeConfig(_, _, let t): t
        }
    }
}
