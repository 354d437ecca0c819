import Battery
import Navigation
import RideModel
import Training

/// The device's buttons.
public enum Button: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case startPause = 0
    case lap = 1
    case page = 2
    /// A power button (`[buttons] power_pin`): held `AppConfiguration.powerOffHoldMs`, the ride
    /// is paused and made durable and the unit powers off (docs/power.md).
    case power = 3

    public var description: String {
        switch self {
        case .startPause: "start"
        case .lap: "lap"
        case .page: "page"
        case .power: "power"
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
    /// Show a companion's pairing code on the display (nil clears it): `PairingCode.digits`
    /// digits, drawn with leading zeros.
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
    /// Follow this course (read and checked by the device from the card): in the ride in
    /// progress at once, else from the next ride on (docs/navigation.md).
    case loadCourse(Course)
    /// Stop following the course.
    case clearCourse
    /// Where the rider is on the course, in words.
    case courseStatus
    /// A paired phone's time (the companion page sends it when it opens): dates the ride while
    /// the unit's clock is not trusted, never over a trusted one (docs/power.md, "Time from the phone").
    case phoneTime(unixMs: Int64)
}

/// The companion's pairing code, one rule for every layer: exactly six decimal digits (the
/// companion issues them; the screen draws them with leading zeros, so a shorter code would be
/// shown as one the companion never issued).
public enum PairingCode {
    public static let digits = 6
    public static let valueMax: UInt32 = 999_999

    /// The code's value if `text` is exactly `digits` ASCII digits.
    public static func parse(_ text: String) -> UInt32? {
        guard text.utf8.count == digits, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
        return UInt32(text)
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
    /// What the data source reports: a live decoded value, a role's state (RideModel's
    /// `SensorEvent`, handled in `AppCore.handleSensorEvent`).
    case sensor(SensorEvent)
    /// Time passing: call at `AppCore.nextDeadline` (and at least once per second).
    case tick(MonotonicInstant)
    case command(ControlCommand, at: MonotonicInstant)
    /// A wall-clock reading (from the system clock, NTP or GPS).
    case wallClock(WallClockTime, at: MonotonicInstant)
    case storage(StorageCondition, at: MonotonicInstant)
    /// What became of a saved ride's file: durable (file and directory synced: "RIDE SAVED"),
    /// or not written this time ("RIDE NOT SAVED"; the runtime keeps the ride and retries).
    case rideFile(RideID, durable: Bool, at: MonotonicInstant)
    /// The device's answer to the Sensors screen: the paired sensors, the outcome of pairing or
    /// forgetting.
    case sensors(SensorsUpdate, at: MonotonicInstant)
    /// The device's answer to the Courses screen (or to a recovered ride's course).
    case courses(CoursesUpdate, at: MonotonicInstant)
    /// A fuel gauge's reading (nil: the gauge could not be read this time), docs/power.md.
    case battery(BatteryReading?, at: MonotonicInstant)

    /// A live decoded value (`.sensor(.sample(s))`).
    public static func sample(_ s: Sample) -> AppInput { .sensor(.sample(s)) }

    /// A role's state (`.sensor(.status(status, at: t))`).
    public static func sensor(_ status: SensorStatus, at t: MonotonicInstant) -> AppInput { .sensor(.status(status, at: t)) }

    public var instant: MonotonicInstant {
        switch self {
        case .button(let b): b.instant
        case .sensor(let e): e.instant
        case .tick(let t), .command(_, let t), .wallClock(_, let t), .storage(_, let t), .sensors(_, let t), .rideFile(_, _, let t),
             .courses(_, let t): t
        case .battery(_, let t): t
        }
    }
}

/// What the device reports to the Sensors screen (`AppInput.sensors`).
public enum SensorsUpdate: Sendable, Hashable {
    /// The paired sensors with their state and battery (after pairing, forgetting, a change).
    case paired([SensorsMenu.Paired])
    /// Pairing or forgetting went through ("PAIRED", "FORGOTTEN"; `selecting` the sensor just
    /// paired) or failed (the reason, short).
    case outcome(String, selecting: String?)
}

/// What the device says to the Courses screen (`AppInput.courses`).
public enum CoursesUpdate: Sendable, Hashable {
    /// The courses on the card.
    case listed([CourseListing])
    /// The course asked for, read and checked.
    case loaded(Course)
    /// It could not be read (short, for the screen).
    case failed(String)
}
