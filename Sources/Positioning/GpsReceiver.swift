import RideModel

/// The rules a fix must pass (docs/gps.md, "Which fixes count"). Defaults suit a bicycle.
public struct GpsFixRules: Sendable, Hashable {
    /// A fix whose horizontal error estimate (eph) is larger gives no position, m.
    public var horizontalErrorMaxM = 50.0
    /// GPS altitude needs a 3D fix with a vertical error estimate (epv) no larger, m.
    public var verticalErrorMaxM = 60.0
    /// A position implying a faster move from the last accepted one is a jump, m/s (180 km/h).
    public var jumpSpeedMaxMps = 50.0
    /// After this many jumps in a row the new place is believed (the earlier fix was the wrong
    /// one): the position restarts there and the gap adds no distance.
    public var jumpsInARowMax = 5
    /// While the receiver reports a speed below this, no distance is added (a stationary
    /// receiver's position wanders by metres), m/s.
    public var stationarySpeedMps = 0.5
    /// No accepted fix for this long: the fix is lost (shown as absent, alerted), ms.
    public var fixLostAfterMs: Int64 = 3_000
    /// The receiver's time is believed for the wall clock only from this instant on (2025-01-01,
    /// before this app existed): a receiver that has not yet decoded the date, a GPS week-number
    /// rollover (1024 weeks back: 1999, 2006 or 2019 dates) or a 32-bit time that wrapped all
    /// read earlier. Unix ms.
    public var clockEarliestUnixMs: Int64 = 1_704_067_200_000
    /// ... and up to one GPS week-number era (1024 weeks, about 19.6 years) after it: a time off
    /// by a whole number of eras (a rollover either way) can never land inside the window.
    public var clockSpanMs: Int64 = 1024 * 7 * 86_400_000
    /// The receiver's time goes to the wall clock once this many fixes in a row have times that
    /// advance with the device's monotonic clock (a receiver's first times after a cold start
    /// can still jump).
    public var clockAgreeingFixesMin = 3
    /// How far the advance of the receiver's time between two fixes may differ from the
    /// monotonic clock's before it is a jump (gpsd hands reports on with some delay, well under
    /// this; a replay at twice real time is already a jump), ms.
    public var clockToleranceMs: Int64 = 500

    public init() {}
}

/// Why the time of an accepted fix was not handed to the wall clock (docs/gps.md, "The wall
/// clock"). The fix itself still counts: only its time is not believed.
public enum GpsClockRejection: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Outside `clockEarliestUnixMs` ..< + `clockSpanMs` (no date yet, a week-number rollover).
    case outOfRange = 0
    /// Its advance since the previous fix's time differs from the monotonic clock's by more than
    /// `clockToleranceMs` (the receiver's clock jumped, or a log replayed faster than real time).
    case jump

    public var description: String {
        switch self {
        case .outOfRange: "GPS time outside the years the app can run in (week-number rollover?)"
        case .jump: "GPS time jumped against the device's clock"
        }
    }
}

/// Why an otherwise valid TPV report gave no position.
public enum GpsFixRejection: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// A fix without a time (cannot be ordered).
    case noTime = 0
    /// Its time is before the last accepted fix's (the receiver's clock went back).
    case notNewer
    /// eph above `horizontalErrorMaxM`.
    case inaccurate
    /// Implied speed above `jumpSpeedMaxMps`.
    case jump

    public var description: String {
        switch self {
        case .noTime: "fix without a time"
        case .notNewer: "fix older than the last one"
        case .inaccurate: "horizontal error above the limit"
        case .jump: "impossible jump"
        }
    }
}

/// Something about the gpsd stream worth a log line (the receiver counts every one; it emits a
/// problem when its count reaches 1, 2, 4, 8, ... so a steady stream of bad lines cannot flood
/// the log).
public enum GpsProblem: Sendable, Hashable, CustomStringConvertible {
    case badReport(GpsdReportError)
    case rejected(GpsFixRejection)
    /// A report class the app does not read (GST, ATT, PPS, ...): ignored.
    case ignoredClass
    /// gpsd sent an ERROR report.
    case gpsdError
    /// gpsd speaks a protocol major version other than 3.
    case protocolVersion(Int)
    /// A line longer than the client's buffer (dropped).
    case lineTooLong
    /// A fix's time not handed to the wall clock.
    case clockRejected(GpsClockRejection)

    public var description: String {
        switch self {
        case .badReport(let e): "bad report from gpsd: \(e)"
        case .rejected(let r): "fix rejected: \(r)"
        case .ignoredClass: "report of a class the app does not read (ignored)"
        case .gpsdError: "gpsd reported an error"
        case .protocolVersion(let v): "gpsd speaks protocol version \(v), this app reads version 3"
        case .lineTooLong: "a line from gpsd longer than the buffer (dropped)"
        case .clockRejected(let r): "time not used for the wall clock: \(r)"
        }
    }
}

/// An accepted fix and what the ride takes from it.
public struct GpsFix: Sendable, Hashable {
    public var instant: MonotonicInstant
    public var timeUnixMs: Int64
    public var mode: GpsFixMode
    public var latitudeDeg: Double
    public var longitudeDeg: Double
    /// Reported speed over ground, or (when the receiver reports none) distance over time since
    /// the previous accepted fix.
    public var speedMps: Double?
    /// Altitude above mean sea level when the fix is 3D and its epv passes the rule.
    public var altitudeM: Double?
    public var horizontalErrorM: Double?
    public var verticalErrorM: Double?
    /// Distance from GPS since the receiver started (every accepted move), m.
    public var odometerM: Double
}

/// What the receiver tells its owner.
public enum GpsOutput: Sendable, Hashable {
    case fix(GpsFix)
    case status(GpsStatus, at: MonotonicInstant)
    /// The receiver's UTC time (from a 2D or 3D fix), for the wall clock.
    case time(unixMs: Int64, at: MonotonicInstant)
    case problem(GpsProblem, count: UInt64)
}

/// Counters of everything the receiver saw (status queries, logs, tests).
public struct GpsCounters: Sendable, Hashable {
    public var lines: UInt64 = 0
    public var reportsByClass: [UInt64] = Array(repeating: 0, count: GpsdReportClass.allCases.count)
    public var badReportsByCode: [UInt64] = Array(repeating: 0, count: GpsdReportError.codeCount)
    public var rejectedByRule: [UInt64] = Array(repeating: 0, count: GpsFixRejection.allCases.count)
    public var fixesAccepted: UInt64 = 0
    public var noFixReports: UInt64 = 0
    /// TPV reports of an epoch already taken (gpsd may report an epoch once per sentence when
    /// its input comes faster than the receiver's cycle): they only complete the speed.
    public var sameEpochReports: UInt64 = 0
    public var positionRestarts: UInt64 = 0
    public var gpsdErrors: UInt64 = 0
    public var linesTooLong: UInt64 = 0
    public var fixesLost: UInt64 = 0
    /// Fix times handed to the wall clock, and those the clock rules refused, by rule.
    public var clockTimes: UInt64 = 0
    public var clockRejectedByRule: [UInt64] = Array(repeating: 0, count: GpsClockRejection.allCases.count)

    public var badReports: UInt64 { badReportsByCode.reduce(0, +) }
    public var rejected: UInt64 { rejectedByRule.reduce(0, +) }

    public init() {}
}

/// Turns gpsd's reports into fixes: applies the fix rules, keeps the GPS odometer, tracks the
/// fix mode and satellites, and notices a lost fix. Pure: time comes in with every call. Its
/// storage is allocated at init; a report allocates nothing.
public struct GpsReceiver: Sendable {
    public let rules: GpsFixRules
    public private(set) var status = GpsStatus()
    public private(set) var counters = GpsCounters()
    public private(set) var odometerM = 0.0
    /// The last accepted fix (nil: none yet, or lost).
    public private(set) var lastFix: GpsFix?

    /// Where distance is measured from: the last accepted position that added distance.
    var anchor: (latDeg: Double, lonDeg: Double, timeUnixMs: Int64)?
    var lastAcceptedTimeUnixMs: Int64?
    var lastAcceptedAt: MonotonicInstant?
    var jumpsInARow = 0
    /// Whether the last accepted fix's speed was the receiver's (not derived from positions).
    var speedReported = false
    var problemCounts: [UInt64] = Array(repeating: 0, count: 18)
    /// The last fix whose time was in range (receiver's time, device's instant), and how many
    /// fixes in a row up to it had times advancing with the monotonic clock.
    var lastClock: (unixMs: Int64, at: MonotonicInstant)?
    var clockAgreeing = 0

    public init(rules: GpsFixRules = GpsFixRules()) {
        self.rules = rules
    }

    /// One line from gpsd (without its line end).
    public mutating func receive(line: UnsafeRawBufferPointer, at now: MonotonicInstant, _ emit: (GpsOutput) -> Void) {
        counters.lines += 1
        let report: GpsdReport
        do {
            report = try GpsdReport.parse(line)
        } catch {
            counters.badReportsByCode[error.code] += 1
            problem(.badReport(error), slot: error.code, emit)
            return
        }
        handle(report, at: now, emit)
    }

    /// A line the client had to drop because it did not fit its buffer.
    public mutating func lineTooLong(_ emit: (GpsOutput) -> Void) {
        counters.linesTooLong += 1
        problem(.lineTooLong, slot: 8, emit)
    }

    public mutating func handle(_ r: GpsdReport, at now: MonotonicInstant, _ emit: (GpsOutput) -> Void) {
        counters.reportsByClass[Int(r.reportClass.rawValue)] += 1
        switch r.reportClass {
        case .tpv: tpv(r, at: now, emit)
        case .sky: sky(r, at: now, emit)
        case .version:
            if let v = r.protocolMajor, v != 3 { problem(.protocolVersion(v), slot: 9, emit) }
        case .error:
            counters.gpsdErrors += 1
            problem(.gpsdError, slot: 10, emit)
        case .other:
            problem(.ignoredClass, slot: 11, emit)
        case .devices, .device, .watch:
            break
        }
    }

    /// Checks for a lost fix; call on the 1 Hz tick.
    public mutating func tick(at now: MonotonicInstant, _ emit: (GpsOutput) -> Void) {
        guard status.mode.hasFix, let last = lastAcceptedAt, now.milliseconds(since: last) > rules.fixLostAfterMs else { return }
        counters.fixesLost += 1
        lastFix = nil
        setMode(.noFix, at: now, emit)
    }

    /// gpsd went away: no fix, nothing heard.
    public mutating func disconnected(at now: MonotonicInstant, _ emit: (GpsOutput) -> Void) {
        if status.mode.hasFix { counters.fixesLost += 1 }
        lastFix = nil
        status.satellitesUsed = nil
        status.satellitesVisible = nil
        setMode(.absent, at: now, emit, force: true)
    }

    // MARK: Reports

    mutating func sky(_ r: GpsdReport, at now: MonotonicInstant, _ emit: (GpsOutput) -> Void) {
        guard r.satellitesUsed != nil || r.satellitesVisible != nil else { return }
        let next = GpsStatus(mode: status.mode == .absent ? .noFix : status.mode,
                             satellitesUsed: r.satellitesUsed ?? status.satellitesUsed,
                             satellitesVisible: r.satellitesVisible ?? status.satellitesVisible)
        if next != status {
            status = next
            emit(.status(status, at: now))
        }
    }

    mutating func tpv(_ r: GpsdReport, at now: MonotonicInstant, _ emit: (GpsOutput) -> Void) {
        guard r.mode >= 2, let lat = r.latitudeDeg, let lon = r.longitudeDeg else {
            counters.noFixReports += 1
            if status.mode == .absent { setMode(.noFix, at: now, emit) }
            // A receiver reporting "no fix" loses the fix at once (not after fixLostAfterMs).
            if r.mode == 1, status.mode.hasFix {
                counters.fixesLost += 1
                lastFix = nil
                setMode(.noFix, at: now, emit)
            }
            return
        }
        guard let t = r.timeUnixMs else { reject(.noTime, emit); return }
        if let last = lastAcceptedTimeUnixMs, t == last { sameEpoch(r, emit); return }
        if let last = lastAcceptedTimeUnixMs, t < last { reject(.notNewer, emit); return }
        if let eph = r.horizontalErrorM, eph > rules.horizontalErrorMaxM { reject(.inaccurate, emit); return }

        var added = 0.0
        var derivedSpeed: Double?
        if let a = anchor {
            let d = Geodesy.distanceM(latDeg: a.latDeg, lonDeg: a.lonDeg, latDeg: lat, lonDeg: lon)
            let dtS = Double(t - a.timeUnixMs) / 1000
            if d > rules.jumpSpeedMaxMps * dtS {
                jumpsInARow += 1
                if jumpsInARow < rules.jumpsInARowMax { reject(.jump, emit); return }
                counters.positionRestarts += 1 // believed: restart here, the gap adds nothing
                anchor = (lat, lon, t)
            } else if let v = r.speedMps, v < rules.stationarySpeedMps {
                // Standing: keep the anchor; distance counts again once the bike moves.
            } else {
                added = d
                if let last = lastAcceptedTimeUnixMs, last == a.timeUnixMs, dtS > 0 { derivedSpeed = d / dtS }
                anchor = (lat, lon, t)
            }
        } else {
            anchor = (lat, lon, t)
        }
        jumpsInARow = 0
        odometerM += added
        lastAcceptedTimeUnixMs = t
        lastAcceptedAt = now
        counters.fixesAccepted += 1

        let mode: GpsFixMode = r.mode == 3 ? .fix3D : .fix2D
        var altitude: Double?
        if mode == .fix3D, let alt = r.altitudeMSLM, (r.verticalErrorM ?? 0) <= rules.verticalErrorMaxM { altitude = alt }
        speedReported = r.speedMps != nil
        let fix = GpsFix(instant: now, timeUnixMs: t, mode: mode, latitudeDeg: lat, longitudeDeg: lon,
                         speedMps: r.speedMps ?? derivedSpeed, altitudeM: altitude,
                         horizontalErrorM: r.horizontalErrorM, verticalErrorM: r.verticalErrorM, odometerM: odometerM)
        lastFix = fix
        setMode(mode, at: now, emit)
        if clockBelieves(t, at: now, emit) { emit(.time(unixMs: t, at: now)) }
        emit(.fix(fix))
    }

    /// Another report of the last accepted epoch: when it brings the receiver's speed and the
    /// fix had only a derived one, the fix is sent again with it (same place, same odometer).
    mutating func sameEpoch(_ r: GpsdReport, _ emit: (GpsOutput) -> Void) {
        counters.sameEpochReports += 1
        guard !speedReported, let v = r.speedMps, var fix = lastFix else { return }
        speedReported = true
        fix.speedMps = v
        lastFix = fix
        emit(.fix(fix))
    }

    /// The clock rules for a fix's time (`GpsFixRules.clock...`): in range, and the last
    /// `clockAgreeingFixesMin` fixes' times advancing with the monotonic clock. A refusal is
    /// counted and logged; it resets the run of agreeing fixes.
    mutating func clockBelieves(_ t: Int64, at now: MonotonicInstant, _ emit: (GpsOutput) -> Void) -> Bool {
        guard t >= rules.clockEarliestUnixMs, t - rules.clockEarliestUnixMs < rules.clockSpanMs else {
            lastClock = nil
            clockAgreeing = 0
            rejectClock(.outOfRange, emit)
            return false
        }
        defer { lastClock = (t, now) }
        if let last = lastClock {
            let drift = (t - last.unixMs) - now.milliseconds(since: last.at)
            guard abs(drift) <= rules.clockToleranceMs else {
                clockAgreeing = 1 // this fix starts a new run
                rejectClock(.jump, emit)
                return false
            }
            clockAgreeing += 1
        } else {
            clockAgreeing = 1
        }
        guard clockAgreeing >= rules.clockAgreeingFixesMin else { return false }
        counters.clockTimes += 1
        return true
    }

    mutating func rejectClock(_ why: GpsClockRejection, _ emit: (GpsOutput) -> Void) {
        counters.clockRejectedByRule[Int(why.rawValue)] += 1
        problem(.clockRejected(why), slot: 16 + Int(why.rawValue), emit)
    }

    // MARK: Helpers

    mutating func setMode(_ mode: GpsFixMode, at now: MonotonicInstant, _ emit: (GpsOutput) -> Void, force: Bool = false) {
        guard mode != status.mode || force else { return }
        status.mode = mode
        emit(.status(status, at: now))
    }

    mutating func reject(_ why: GpsFixRejection, _ emit: (GpsOutput) -> Void) {
        counters.rejectedByRule[Int(why.rawValue)] += 1
        problem(.rejected(why), slot: 12 + Int(why.rawValue), emit)
    }

    /// Counts `p` in its slot; emits it when the count is a power of two.
    mutating func problem(_ p: GpsProblem, slot: Int, _ emit: (GpsOutput) -> Void) {
        problemCounts[slot] += 1
        let n = problemCounts[slot]
        if n & (n - 1) == 0 { emit(.problem(p, count: n)) }
    }
}

extension GpsFix {
    /// The live samples a fix gives the ride: latitude, longitude, speed and the GPS odometer
    /// (generated: the device computed it). Altitude goes through `Altimetry` instead.
    public func forEachSample(_ body: (Sample) -> Void) {
        body(Sample(.latitude, latitudeDeg, at: instant))
        body(Sample(.longitude, longitudeDeg, at: instant))
        if let v = speedMps { body(Sample(.speed, v, at: instant)) }
        body(Sample(.distance, odometerM, at: instant, origin: .generated))
    }
}
