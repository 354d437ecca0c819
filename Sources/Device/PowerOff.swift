import AppCore
import Battery
import RideModel

/// Where the device asks for the board to be powered off (docs/power.md): on the board a
/// request file that a root-owned systemd path unit turns into `systemctl poweroff` (the app
/// itself never gets the right to power the board off); in the simulator the simulated board
/// goes dark.
public protocol PowerPort: AnyObject {
    /// Asks for a clean power-off. Returns why it could not be asked (nil: asked).
    func requestPowerOff(_ reason: PowerOffReason) -> String?
}

extension DeviceRuntime {
    /// A fuel gauge's reading (nil: it could not be read this time), docs/power.md.
    public func battery(_ reading: BatteryReading?, at now: MonotonicInstant) { handle(.battery(reading, at: now)) }

    /// How long the screen says why before the power-off is asked for (the rider reads it; the
    /// ride's records are made durable meanwhile).
    public static let powerOffNoticeMs: Int64 = 3_000

    /// The core asked to power off: noted; `powerOffIfDue` carries it out.
    func powerOffAsked(_ reason: PowerOffReason, at now: MonotonicInstant) {
        guard powerOffState == nil else { return }
        powerOffState = PowerOffState(reason: reason, askedAt: now)
        log.log(.warning, "power: powering off (\(reason)) in \(Self.powerOffNoticeMs) ms, once the ride is durable")
    }

    /// The power-off the core asked for, if any, and whether it was handed to the system.
    public var powerOffReason: PowerOffReason? { powerOffState?.reason }
    public var powerOffRequested: Bool { powerOffState?.requested ?? false }
    /// Why the last request could not be made (no power port, the request file not writable).
    public var powerOffProblem: String? { powerOffState?.problem }

    /// Once `powerOffNoticeMs` have passed since the core asked: the journal is made durable
    /// (waited for: nothing else matters now) and the power port asked. Called at every tick.
    /// Returns true when the request was handed over now.
    @discardableResult
    public func powerOffIfDue(at now: MonotonicInstant) -> Bool {
        guard var s = powerOffState, !s.requested, now.milliseconds(since: s.askedAt) >= Self.powerOffNoticeMs else { return false }
        journal.flush(at: now)
        guard let port = powerPort else {
            s.problem = "no way to power off on this device (no power port)"
            s.requested = true
            powerOffState = s
            log.log(.error, "power: \(s.problem!)")
            return false
        }
        if let problem = port.requestPowerOff(s.reason) {
            s.problem = problem
            s.retries += 1
            // Asked again every `powerOffNoticeMs` (a request file that could not be written).
            s.askedAt = now
            if s.retries >= Self.powerOffRequestsMax { s.requested = true }
            log.log(.error, "power: cannot ask for the power-off: \(problem)\(s.requested ? "; giving up: switch the unit off by hand" : "; trying again")")
            powerOffState = s
            return false
        }
        s.requested = true
        s.problem = nil
        powerOffState = s
        log.log(.warning, "power: power-off asked for (\(s.reason)); the journal is durable")
        return true
    }

    /// Tries at most this many times to hand the request over.
    public static let powerOffRequestsMax = 5
}

/// A power-off on its way.
struct PowerOffState {
    var reason: PowerOffReason
    var askedAt: MonotonicInstant
    var requested = false
    var retries = 0
    var problem: String?
}
