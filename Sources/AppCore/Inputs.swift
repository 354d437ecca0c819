import RideModel
import Training

/// The device's buttons.
public enum Button: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case startPause = 0
    case lap = 1
    case page = 2

    public var description: String {
        switch self {
        case .startPause: "start"
        case .lap: "lap"
        case .page: "page"
        }
    }
}

/// A debounced button edge with its timestamp (the board layer debounces).
public struct ButtonEvent: Sendable, Hashable {
    public enum Edge: UInt8, Sendable, Hashable { case down, up }
    public var button: Button
    public var edge: Edge
    public var instant: MonotonicInstant

    public init(_ button: Button, _ edge: Edge, at instant: MonotonicInstant) {
        self.button = button
        self.edge = edge
        self.instant = instant
    }
}

/// Commands from the control socket, a companion or a script.
public enum ControlCommand: Sendable, Hashable {
    case start
    case pause
    case resume
    case lap
    /// Stop and save.
    case end
    /// Stop and discard (or cancel a countdown).
    case discard
    /// Dismiss the summary.
    case dismiss
    /// Record a marker (water, food, note) in the ride.
    case marker(RideEvent.MarkerKind, value: Int64)
    /// Switch the running data page.
    case nextPage
    /// Show a companion's pairing code on the display (nil clears it). Six digits at most.
    case showPairingCode(UInt32?)
    /// Custom zones (heart rate or power, by the configuration's quantity) for the next ride
    /// only: accepted before the ride starts (idle, countdown, summary), refused once it runs;
    /// journaled in the ride's header, never saved as preferred.
    case setRideZones(ZoneConfiguration)
    /// The next ride uses the preferred zones of this quantity again.
    case clearRideZones(Quantity)
    /// A target zone (alerts when out of it) for the ride in progress, or the next ride if none.
    case setTargetZone(TargetZone)
    /// A target zone by the number the rider sees on the screen ("Z3"), with the default grace
    /// period and hysteresis (the control socket's `target hr 3`).
    case setTargetZoneNumber(Quantity, Int)
    case clearTargetZone(Quantity)
    /// Auto-pause on (with these settings) or off (nil), for the ride in progress or the next.
    case setAutoPause(AutoPauseSettings?)
    /// Auto-lap on or off (nil), for the ride in progress or the next.
    case setAutoLap(AutoLapSettings?)
}

/// Sensor roles the screens show status for.
public enum SensorRole: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case heartRate = 0, power = 1, speed = 2, cadence = 3

    /// The live quantities a sensor in this role provides (shown as "--" once it is lost).
    public var liveQuantities: [Quantity] {
        switch self {
        case .heartRate: [.heartRate, .rrInterval]
        case .power: [.power, .pedalBalanceRight, .torqueEffectivenessLeft, .torqueEffectivenessRight,
                      .pedalSmoothnessLeft, .pedalSmoothnessRight]
        case .speed: [.speed]
        case .cadence: [.cadence]
        }
    }

    public var description: String {
        switch self {
        case .heartRate: "HR"
        case .power: "PWR"
        case .speed: "SPD"
        case .cadence: "CAD"
        }
    }
}

/// A sensor's connection state, as the data source reports it.
public enum SensorState: UInt8, Sendable, Hashable, CustomStringConvertible {
    /// Not expected for this ride.
    case notConfigured = 0
    case searching = 1
    case connected = 2
    /// Connected but no new data for a while.
    case stale = 3
    /// Was connected, now gone (bridge down, out of range).
    case lost = 4

    public var description: String {
        switch self {
        case .notConfigured: "not_configured"
        case .searching: "searching"
        case .connected: "connected"
        case .stale: "stale"
        case .lost: "lost"
        }
    }
}

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

/// Storage health, as the journal writer reports it.
public enum StorageCondition: UInt8, Sendable, Hashable {
    case ok = 0
    case low = 1
    case full = 2
    case failing = 3
}

/// Everything that can happen to the device. Each input carries its own timestamp.
public enum AppInput: Sendable, Hashable {
    case button(ButtonEvent)
    /// A live decoded value from the data source.
    case sample(Sample)
    case sensor(SensorStatus, at: MonotonicInstant)
    /// Time passing: call at `AppCore.nextDeadline` (and at least once per second).
    case tick(MonotonicInstant)
    case command(ControlCommand, at: MonotonicInstant)
    /// A wall-clock reading (from the system clock, NTP or GPS).
    case wallClock(WallClockTime, at: MonotonicInstant)
    case storage(StorageCondition, at: MonotonicInstant)

    public var instant: MonotonicInstant {
        switch self {
        case .button(let b): b.instant
        case .sample(let s): s.instant
        case .sensor(_, let t), .tick(let t), .command(_, let t), .wallClock(_, let t), .storage(_, let t): t
        }
    }
}
