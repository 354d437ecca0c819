import RideModel

/// When the radar beeps: once for vehicles coming up behind, once (a different beep) when the
/// road is clear again, and never a beep storm in traffic (docs/sensors.md, "Rear radar"):
///
/// - a **vehicle** beep when the number of vehicles in view rises, unless one sounded less than
///   `vehicleBeepGapMs` ago (a platoon gets one beep; its vehicles are all counted);
/// - a **clear** beep once the road has stayed clear for `clearHoldMs` after vehicles;
/// - a vehicle the radar loses for less than `flickerMs` and finds again is the same vehicle: no
///   clear beep, no new vehicle (nor a new count);
/// - vehicles only close in, so a farthest vehicle `arrivalJumpM` farther than the last frame's is
///   a new one even when another left in the same frame (the count alone would miss it).
/// - nothing while the radar is not connected: the column says it is lost, and when it is back
///   the vehicles in view are new ones.
///
/// Pure: pictures and time come in, what to do goes out.
public struct RadarAlerting: Sendable, Hashable {
    public static let vehicleBeepGapMs: Int64 = 3_000
    public static let clearHoldMs: Int64 = 2_000
    public static let flickerMs: Int64 = 1_000
    public static let arrivalJumpM = 15.0

    public enum Outcome: Sendable, Hashable {
        case nothing
        /// `arrived` vehicles came into view; `beep` unless within the gap.
        case vehicles(arrived: Int, beep: Bool)
        /// The road has been clear for `clearHoldMs`.
        case clear
    }

    var inView = 0
    /// The farthest vehicle of the last frame, m.
    var farthestM = 0.0
    /// The most vehicles in view just before the count last fell, and when it fell.
    var recentMax = 0
    var fellAt: MonotonicInstant?
    var lastVehicleBeepAt: MonotonicInstant?
    /// Since when the road is clear after vehicles (nil: not waiting to say so).
    var clearSince: MonotonicInstant?
    /// Vehicle beeps not sounded for the gap.
    public private(set) var beepsHeldBack: UInt64 = 0
    /// Vehicle beeps sounded and road-clear beeps sounded since the app started (`ctl status`).
    public private(set) var vehicleBeeps: UInt64 = 0
    public private(set) var clearBeeps: UInt64 = 0

    public init() {}

    public mutating func picture(_ p: RadarPicture, at now: MonotonicInstant) -> Outcome {
        let n = p.count
        let farthest = n > 0 ? p[n - 1].rangeM : 0
        let jumped = n > 0 && n == inView && farthest > farthestM + Self.arrivalJumpM
        defer { inView = n; farthestM = farthest }
        if n < inView {
            if fellAt.map({ now.milliseconds(since: $0) >= Self.flickerMs }) ?? true { recentMax = 0 }
            recentMax = max(recentMax, inView)
            fellAt = now
        }
        // Vehicles back within the flicker time are the ones the radar lost for a moment.
        let known = fellAt.map { now.milliseconds(since: $0) < Self.flickerMs } ?? false ? max(inView, recentMax) : inView
        if n > known || jumped {
            clearSince = nil
            let beep = lastVehicleBeepAt.map { now.milliseconds(since: $0) >= Self.vehicleBeepGapMs } ?? true
            if beep { lastVehicleBeepAt = now; vehicleBeeps &+= 1 } else { beepsHeldBack &+= 1 }
            return .vehicles(arrived: max(1, n - known), beep: beep)
        }
        if n == 0 && inView > 0 { clearSince = now }
        if n > 0 { clearSince = nil }
        return tick(at: now)
    }

    /// Time passing (a radar sends several frames a second, clear or not; the tick is a backstop).
    public mutating func tick(at now: MonotonicInstant) -> Outcome {
        guard let since = clearSince, now.milliseconds(since: since) >= Self.clearHoldMs else { return .nothing }
        clearSince = nil
        clearBeeps &+= 1
        return .clear
    }

    /// The radar is not connected: what was in view is forgotten, nothing is pending.
    public mutating func radarGone() {
        inView = 0
        recentMax = 0
        fellAt = nil
        clearSince = nil
    }
}

/// The app core's side of a rear radar: the column's picture, the beeps, the ride's radar events.
extension AppCore {
    /// A radar frame (the data source sends it after the radar role is connected).
    mutating func handleRadar(_ picture: RadarPicture, at now: MonotonicInstant) {
        guard sensorStates[Int(SensorRole.radar.rawValue)] == .connected else { return }
        screen.radar = picture
        radarOutcome(radarAlerting.picture(picture, at: now), picture, at: now)
    }

    /// The radar role's state changed: a radar that is not connected shows no vehicles (the
    /// column says why) and its beeps start afresh.
    mutating func radarStateChanged(_ state: SensorState) {
        guard state != .connected else { return }
        screen.radar.removeAll()
        radarAlerting.radarGone()
    }

    mutating func radarTick(at now: MonotonicInstant) {
        guard sensorStates[Int(SensorRole.radar.rawValue)] == .connected else { return }
        radarOutcome(radarAlerting.tick(at: now), screen.radar, at: now)
    }

    private mutating func radarOutcome(_ o: RadarAlerting.Outcome, _ picture: RadarPicture, at now: MonotonicInstant) {
        switch o {
        case .nothing:
            break
        case let .vehicles(arrived, beep):
            if beep { emit(.alert(.vehicleBehind(picture.maxThreat))) }
            // Recorded while a ride is in progress (a full event table drops it, the ride goes on).
            guard lifecycle.state == .running || lifecycle.state == .paused, let b = builder, b.canRecord(.radar) else { return }
            let e = RideEvent(.radar, at: now, value: RadarAlertRecord(picture, arrived: arrived, alerted: beep).value)
            do { try builder?.mark(e) } catch { return }
            journal(.event(e))
        case .clear:
            emit(.alert(.roadClear))
        }
    }
}
