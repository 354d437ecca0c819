import Navigation
import RideModel

/// Alerts shown as an overlay over the current screen.
public enum Alert: Sendable, Hashable, CustomStringConvertible {
    case sensorLost(SensorRole)
    case sensorBack(SensorRole)
    /// Out of the target zone: the quantity and whether above (true) or below it.
    case zoneDrift(Quantity, above: Bool)
    case backInZone(Quantity)
    case lowStorage
    case storageFull
    case storageError
    case rideRecovered
    case rideInProgress
    /// The ride ended and its file is being written (the end of a ride on the board's loop).
    case savingRide
    /// The ride's file is durable (written and synced, its directory too): only then.
    case rideSaved
    /// The ride's file could not be written: it is kept (journal and memory) and retried.
    case rideNotSaved
    case rideDiscarded
    /// A pause, resume or lap refused because the ride's event table is full.
    case rideTableFull
    /// At the start of a ride: a sensor's battery is under `AppCore.sensorBatteryLowPercent`.
    case lowSensorBattery(SensorRole, percent: Int)
    /// The rear radar: vehicles coming up behind (the highest threat in view), and the road
    /// clear again. A beep each (different ones), no overlay: the radar column shows them.
    case vehicleBehind(RadarThreat)
    case roadClear
    /// Navigation (docs/navigation.md): off the course, riding it the wrong way, back on it.
    case offCourse
    case wrongWay
    case backOnCourse
    /// A cue: its type, the stage of its announcement, the distance to it (m) and its name.
    case cue(CueType, stage: CueStage, distanceM: Int, name: String)
    /// The foot of climb `number` of `count`: its length (m) and mean grade (tenths of %).
    case climbStart(number: Int, count: Int, lengthM: Int, gradeTenths: Int)
    /// The end of the course.
    case courseFinished
    /// The unit's own battery fell to a warning level (`BatterySettings.lowPercent`, `veryLowPercent`).
    case lowBattery(percent: Int)
    /// The unit's battery is at the critical level: the ride is paused and saved, the unit powers off.
    case batteryEmpty
    /// The unit powers off (the battery, or the power button held).
    case poweringOff(PowerOffReason)
    /// The sensor bridge cannot read the config file (a pairing or an edit made one it cannot
    /// read): it keeps the sensors it had. `line` 0: it cannot tell where.
    case sensorConfigUnreadable(line: Int)

    public var description: String {
        switch self {
        case .sensorLost(let r): "\(r) LOST"
        case .sensorBack(let r): "\(r) BACK"
        case .zoneDrift(let q, let above): "\(q == .power ? "PWR" : "HR") \(above ? "HIGH" : "LOW")"
        case .backInZone(let q): "\(q == .power ? "PWR" : "HR") IN ZONE"
        case .lowStorage: "STORAGE LOW"
        case .storageFull: "STORAGE FULL"
        case .storageError: "STORAGE ERROR"
        case .rideRecovered: "RIDE RECOVERED"
        case .rideInProgress: "RIDE IN PROGRESS"
        case .savingRide: "SAVING RIDE"
        case .rideSaved: "RIDE SAVED"
        case .rideNotSaved: "RIDE NOT SAVED"
        case .rideDiscarded: "RIDE DISCARDED"
        case .rideTableFull: "RIDE FULL"
        case .lowSensorBattery(let r, let p): "\(r) BATTERY \(p)%"
        case .vehicleBehind(let t): t == .fastApproach ? "VEHICLE FAST" : "VEHICLE"
        case .roadClear: "ROAD CLEAR"
        case .offCourse: "OFF COURSE"
        case .wrongWay: "WRONG WAY"
        case .backOnCourse: "BACK ON COURSE"
        case .cue(let t, let stage, let d, let name): "\(t.word)\(stage == .now ? " NOW" : " \(d) M")\(name.isEmpty ? "" : " " + name)"
        case .climbStart(let n, let count, let l, let g): "CLIMB \(n)/\(count) \(l) M \(g / 10).\(g % 10)%"
        case .courseFinished: "COURSE DONE"
        case .lowBattery(let p): "BATTERY \(p)%"
        case .batteryEmpty: "BATTERY EMPTY"
        case .poweringOff: "POWERING OFF"
        case .sensorConfigUnreadable(let line): line > 0 ? "CONFIG ERR LINE \(line)" : "SENSOR CONFIG ERR"
        }
    }

    /// Whether a buzzer/LED line should pulse for it.
    public var sounds: Bool {
        switch self {
        case .sensorLost, .zoneDrift, .storageFull, .storageError, .rideNotSaved, .lowSensorBattery, .lowBattery, .batteryEmpty, .vehicleBehind, .roadClear, .offCourse, .wrongWay: true
        // The approach beep and the beep at the turn (the first word is silent).
        case .cue(_, let stage, _, _): stage == .approach || stage == .now
        default: false
        }
    }

    /// How the buzzer sounds it: (on, off) pulse pairs in ms, at most `Beep.pulsesMax`.
    public var beep: Beep {
        switch self {
        case .vehicleBehind(let t): t == .fastApproach ? .vehicleFast : .vehicle
        case .roadClear: .roadClear
        default: .single
        }
    }
}

/// A buzzer pattern: pulses of `onMs` separated by `offMs`. Named once so the rider learns them:
/// one 300 ms pulse for alerts, two short ones for a vehicle behind (three when it closes fast),
/// one long one when the road is clear again.
public struct Beep: Sendable, Hashable {
    public static let pulsesMax = 3
    public var pulses: Int
    public var onMs: Int64
    public var offMs: Int64

    public static let single = Beep(pulses: 1, onMs: 300, offMs: 0)
    public static let vehicle = Beep(pulses: 2, onMs: 80, offMs: 80)
    public static let vehicleFast = Beep(pulses: 3, onMs: 80, offMs: 80)
    public static let roadClear = Beep(pulses: 1, onMs: 600, offMs: 0)

    /// The whole pattern's length, ms.
    public var durationMs: Int64 { Int64(pulses) * onMs + Int64(max(0, pulses - 1)) * offMs }
}

/// A live zone update: emitted whenever the current zone of heart rate or power changes.
public struct ZoneUpdate: Sendable, Hashable {
    public var quantity: Quantity
    /// 0-based zones; nil when there is no current value.
    public var zone: Int?
    public var previousZone: Int?
    public var rideZoneTimes: ZoneTimes
    public var lapZoneTimes: ZoneTimes
    /// Instant of the last sample processed.
    public var lastSampleInstant: MonotonicInstant
}

/// The answer to a control command.
public struct CommandReply: Sendable, Hashable {
    public var ok: Bool
    public var message: String
    public var state: SessionState
}

/// What the app core asks the outside world to do. The runtime drains these after each input,
/// in order: journal records first (durable before the screen confirms), then the rest.
public enum AppEffect: Sendable, Hashable {
    case journal(RideRecord)
    /// Make everything journaled so far durable now (state transitions).
    case syncJournal
    case alert(Alert)
    case zoneUpdate(ZoneUpdate)
    case reply(CommandReply)
    /// The ride ended: write its file (saved) or drop it (discarded).
    case rideFinished(RideID, saved: Bool)
    /// A saved ride was discarded afterwards from the summary screen.
    case rideDeleted(RideID)
    /// The Sensors screen asks the device to search, pair, forget, or to report the paired
    /// sensors (the board asks the bridge, writes the config file, answers with `AppInput.sensors`).
    case sensors(SensorsRequest)
    /// The Courses screen (or a recovered ride) asks for the list of courses on the card, or a
    /// course read from it (the device answers with `AppInput.courses`).
    case courses(CoursesRequest)
    /// The wall clock became trusted (NTP through the kernel, or GPS time): `anchor` is the
    /// trusted reading at a device instant (not a ride instant). Rides saved on the untrusted
    /// clock are dated by it (docs/journal.md, "The clock").
    case clockTrusted(WallClockAnchor)
    /// The rider cleared a companion's pairing code with a button: the companion cancels it
    /// (the control stream's `pairing` line).
    case pairingCodeDismissed
    /// Power the board off cleanly (docs/power.md): the ride was paused and its records synced
    /// (`syncJournal` came first); the device makes them durable, then asks the system.
    case powerOff(PowerOffReason)
}

/// Why the unit powers off by itself.
public enum PowerOffReason: UInt8, Sendable, Hashable, CustomStringConvertible {
    /// The battery reached `BatterySettings.criticalPercent`.
    case batteryCritical = 0
    /// The power button was held (`AppConfiguration.powerOffHoldMs`), or the battery board's.
    case powerButton = 1

    public var description: String {
        switch self {
        case .batteryCritical: "battery critical"
        case .powerButton: "power button"
        }
    }
}

/// What the Sensors screen asks of the device (`AppEffect.sensors`).
public enum SensorsRequest: Sendable, Hashable {
    /// The screen opened: report the paired sensors (and keep reporting changes while it is open).
    case open
    case close
    case search(seconds: Int)
    case stopSearch
    case pair(id: String, kind: SensorKind, name: String)
    case forget(id: String)
}

/// What the app core asks of the card's courses (`AppEffect.courses`).
public enum CoursesRequest: Sendable, Hashable {
    case list
    case load(String)
}
