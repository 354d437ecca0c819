import RideModel
import Training

// The app core's per-thing state, one small struct per thing, indexed by the enum it belongs
// to (not parallel arrays kept in step by hand).

/// The freshest live value of one quantity (`AppCore.liveValues`, by `Quantity.index`).
struct LiveValue: Sendable, Hashable {
    static let neverRecorded = MonotonicInstant(milliseconds: .min)

    var value = 0.0
    var instant = MonotonicInstant.zero
    /// Shown and recorded until its sensor is reported stale or lost.
    var seen = false
    /// The instant of the value last put into a 1 Hz record.
    var recordedAt = neverRecorded
}

/// One button's press in progress (`AppCore.holds`, by `Button.rawValue`).
struct ButtonHold: Sendable, Hashable {
    var downAt: MonotonicInstant?
    var longPressFired = false
    /// The press already acted when it went down; its release does nothing.
    var actedOnDown = false
}

/// The quantities with zones, target zones and zone updates.
enum ZoneSlot: Int, Sendable, Hashable, CaseIterable {
    case heartRate = 0, power = 1

    init?(_ q: Quantity) {
        switch q {
        case .heartRate: self = .heartRate
        case .power: self = .power
        default: return nil
        }
    }

    var quantity: Quantity { self == .heartRate ? .heartRate : .power }

    func zones(of settings: RideSettings) -> ZoneConfiguration? {
        self == .heartRate ? settings.heartRateZones : settings.powerZones
    }
}

/// What the core keeps per zone slot (`AppCore.zoneSlots`, by `ZoneSlot.rawValue`).
struct ZoneSlotState: Sendable, Equatable {
    /// The current zone as last announced (0-based), and its name, looked up at the change so
    /// screen refreshes never build strings.
    var lastZone: Int?
    var lastZoneName: String?
    /// Custom zones for the next ride (nil: the preferred zones).
    var customZones: ZoneConfiguration?
    var targetMonitor: TargetZoneMonitor?
}

/// The values of the 1 Hz record being processed that the training monitors read.
struct RecordValues: Sendable, Hashable {
    var heartRate: Double?
    var power: Double?
    var speed: Double?

    func value(_ slot: ZoneSlot) -> Double? { slot == .heartRate ? heartRate : power }
}

extension AppCore {
    /// Announces `zone` for `slot` (and looks its name up once, here).
    mutating func announceZone(_ zone: Int?, for slot: ZoneSlot) {
        guard zoneSlots[slot.rawValue].lastZone != zone else { return }
        zoneSlots[slot.rawValue].lastZone = zone
        zoneSlots[slot.rawValue].lastZoneName = zone.flatMap { z in builder.flatMap { slot.zones(of: $0.settings) }?.name(ofZone: z) }
    }

    /// No zone announced for any slot (a new ride, a replayed header).
    mutating func resetAnnouncedZones() {
        for slot in ZoneSlot.allCases {
            zoneSlots[slot.rawValue].lastZone = nil
            zoneSlots[slot.rawValue].lastZoneName = nil
        }
    }

    /// Custom zones for the next ride per quantity with zones (nil: preferred).
    public func customZones(_ q: Quantity) -> ZoneConfiguration? { ZoneSlot(q).flatMap { zoneSlots[$0.rawValue].customZones } }
}

/// What an action came to: done (what happened, in the rider's words) or refused (why not).
/// A command's reply is made from it in one place (`AppCore.handleCommand`); a button press runs
/// the same action and ignores it (a refusal the rider must see is an overlay).
enum ActionOutcome: Sendable, Hashable {
    case done(String)
    case refused(String)
}

extension SessionAction {
    /// Where the action takes a session in `state` (workout-model §1), stated apart from
    /// `SessionLifecycle.apply` so each checks the other (`AppCore.transition`).
    func target(from state: SessionState) -> SessionState {
        switch self {
        case .prepare: .prepared
        case .cancel, .dismiss: .idle
        case .start, .resume: .running
        case .pause: .paused
        case .lap: state
        case .stop: .stopped
        case .save, .discard: .ended
        }
    }
}

extension AppCore {
    /// What must hold between inputs, or nil (checked after every input in debug builds).
    var brokenInvariant: String? {
        let s = lifecycle.state
        if (s == .prepared) != (countdownStart != nil) { return "state \(s) with countdown start \(String(describing: countdownStart)) header \(header != nil) builder \(builder != nil) recovered \(recovered) offset \(instantOffsetMs) refusals \(replayRefusals)" }
        if s == .running || s == .paused || s == .stopped {
            if header == nil || builder == nil { return "a \(s) ride without its header or builder" }
            if builder?.startInstant == nil { return "a \(s) ride whose builder never started" }
        }
        if s == .running && nextRecordInstant == nil { return "a running ride with no next record instant" }
        if (s == .idle || s == .ended) && nextRecordInstant != nil { return "a \(s) device still taking records" }
        for b in Button.allCases {
            let h = holds[Int(b.rawValue)]
            if h.longPressFired && h.actedOnDown { return "the \(b) press acted on its down edge and as a long press" }
        }
        return nil
    }
}
