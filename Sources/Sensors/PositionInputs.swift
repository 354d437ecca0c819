import Positioning
import RideModel

/// The onboard position and altitude receivers behind `SensorInputs` (docs/gps.md): gpsd's
/// report lines go through the fix rules (`GpsReceiver`), the barometer's data registers through
/// the BMP280 compensation, both through `Altimetry`; what comes out is handed to the data source
/// as decoded readings of `.onboard(.gnss)` and `.onboard(.barometer)`, so pairing, priority
/// (a wheel sensor wins while it delivers), the one odometer and the lost/stale rules are the
/// same as for radio sensors. The fix mode and satellites, and the receiver's clock, go to the
/// app core as `SensorEvent`s. Nothing here allocates per report.
public struct PositionInputs: Sendable {
    public static let gnss = SourceIdentity.onboard(.gnss)
    public static let barometer = SourceIdentity.onboard(.barometer)
    /// Problems kept for the log until drained (older ones are counted as overwritten).
    public static let problemsKeptMax = 16
    /// Fixes closer together than this go on as one (the latest): a receiver reports 1–10 Hz,
    /// but gpsd replaying a log can report hundreds a second. The last one waits for the next
    /// tick at most, so the odometer never loses its end.
    public static let fixIntervalMinMs: Int64 = 100

    public private(set) var gps = GpsReceiver()
    public private(set) var altimetry = Altimetry()
    /// The barometer's calibration (nil until its 24 calibration bytes arrive).
    public private(set) var barometerCalibration: BMP280.Calibration?
    /// Barometer readings that could not be compensated (blank registers, no calibration).
    public private(set) var barometerBadReadings: UInt64 = 0
    public private(set) var barometerReadings: UInt64 = 0
    var problems = RingBuffer<(GpsProblem, UInt64)>(capacity: PositionInputs.problemsKeptMax)
    var pendingFix: GpsFix?
    /// The last fix time the clock rules let through, and when it came.
    var pendingClock: (unixMs: Int64, at: MonotonicInstant)?
    var lastHandedAt: MonotonicInstant?
    /// Fixes taken into a later one (faster than `fixIntervalMinMs`).
    public private(set) var fixesCoalesced: UInt64 = 0

    public init() {}

    // MARK: GPS

    /// What one call into the receiver emitted, held inline (a report emits at most four
    /// outputs: a status, the time, a fix, or a problem): the receiver is not copied (its
    /// counters would be copied on write) and `self` is not borrowed twice.
    struct Outputs {
        static let countMax = 8
        var items = InlineArray<8, GpsOutput?>(repeating: nil)
        var count = 0
        mutating func append(_ o: GpsOutput) {
            precondition(count < Self.countMax, "more outputs from one GPS report than expected")
            items[count] = o
            count += 1
        }
    }

    mutating func gpsdLine(_ line: UnsafeRawBufferPointer, at now: MonotonicInstant, _ source: inout DataSource,
                           _ emit: (SensorEvent) -> Void) {
        var outs = Outputs()
        gps.receive(line: line, at: now) { outs.append($0) }
        handle(outs, at: now, &source, emit)
    }

    mutating func gpsdLineTooLong(at now: MonotonicInstant, _ source: inout DataSource, _ emit: (SensorEvent) -> Void) {
        var outs = Outputs()
        gps.lineTooLong { outs.append($0) }
        handle(outs, at: now, &source, emit)
    }

    mutating func gpsdDisconnected(at now: MonotonicInstant, _ source: inout DataSource, _ emit: (SensorEvent) -> Void) {
        var outs = Outputs()
        gps.disconnected(at: now) { outs.append($0) }
        handle(outs, at: now, &source, emit)
    }

    mutating func tick(at now: MonotonicInstant, _ source: inout DataSource, _ emit: (SensorEvent) -> Void) {
        var outs = Outputs()
        gps.tick(at: now) { outs.append($0) }
        handle(outs, at: now, &source, emit)
        if let f = pendingFix { hand(f, at: now, &source, emit) }
    }

    mutating func handle(_ outs: Outputs, at now: MonotonicInstant, _ source: inout DataSource, _ emit: (SensorEvent) -> Void) {
        for i in 0..<outs.count { if let o = outs.items[i] { handle(o, at: now, &source, emit) } }
    }

    mutating func handle(_ o: GpsOutput, at now: MonotonicInstant, _ source: inout DataSource, _ emit: (SensorEvent) -> Void) {
        switch o {
        case .fix(let f):
            if let last = lastHandedAt, now.milliseconds(since: last) < Self.fixIntervalMinMs {
                if pendingFix != nil { fixesCoalesced &+= 1 }
                pendingFix = f
                return
            }
            hand(f, at: now, &source, emit)
        case .status(let s, let at):
            emit(.gps(s, at: at))
            // No fix: the GPS source is lost at once (its position shows as absent, alerted),
            // after the fix still waiting to go on (it came before).
            if !s.mode.hasFix {
                if let f = pendingFix { hand(f, at: at, &source, emit) }
                source.link(Self.gnss, s.mode == .absent ? .disconnected : .searching, at: at, emit)
            }
        case .time(let unixMs, let at):
            pendingClock = (unixMs, at)
        case .problem(let p, let count):
            problems.append((p, count))
        }
    }

    /// A fix to the data source (and its clock to the app core).
    mutating func hand(_ f: GpsFix, at now: MonotonicInstant, _ source: inout DataSource, _ emit: (SensorEvent) -> Void) {
        pendingFix = nil
        lastHandedAt = now
        if let c = pendingClock {
            // The receiver's time (of this fix, or of an earlier one whose fix was coalesced into
            // it), advanced by how long it waited here.
            emit(.clock(WallClockTime(unixMs: c.unixMs + now.milliseconds(since: c.at), trusted: true), at: now))
            pendingClock = nil
        }
        do {
            var v = DerivedValues()
            v.latitudeDeg = f.latitudeDeg
            v.longitudeDeg = f.longitudeDeg
            v.speedMps = f.speedMps
            v.distanceM = f.odometerM
            if let a = f.altitudeM {
                altimetry.distance(source.odometerM)
                altimetry.gps(altitudeM: a, verticalErrorM: f.verticalErrorM, at: now) { Self.put($0, into: &v) }
            }
            source.handle(v, from: Self.gnss, at: now, emit)
        }
    }

    /// Calls `body` with every problem kept since the last call (for the log), oldest first.
    public mutating func drainProblems(_ body: (GpsProblem, UInt64) -> Void) {
        while let (p, n) = problems.removeFirst() { body(p, n) }
    }

    // MARK: Barometer

    mutating func barometerCalibrationBytes(_ bytes: UnsafeRawBufferPointer) {
        barometerCalibration = BMP280.Calibration(bytes: Array(bytes))
    }

    mutating func barometerData(_ bytes: UnsafeRawBufferPointer, at now: MonotonicInstant, _ source: inout DataSource,
                                _ emit: (SensorEvent) -> Void) {
        guard let c = barometerCalibration, let raw = BMP280.Raw(bytes: bytes), let reading = BMP280.compensate(raw, c) else {
            barometerBadReadings += 1
            return
        }
        barometerReadings += 1
        altimetry.distance(source.odometerM)
        var v = DerivedValues()
        var any = false
        altimetry.pressure(reading.pressurePa, at: now) { Self.put($0, into: &v); any = true }
        if any { source.handle(v, from: Self.barometer, at: now, emit) }
    }

    /// An altimetry sample into the reading it goes out with.
    static func put(_ s: Sample, into v: inout DerivedValues) {
        switch s.quantity {
        case .altitude: v.altitudeM = s.value
        case .ascent: v.ascentM = s.value
        case .descent: v.descentM = s.value
        case .grade: v.gradePercent = s.value
        default: break
        }
    }
}

extension SensorInputs {
    /// GPS problems kept for the log since the last call, oldest first.
    public mutating func drainPositionProblems(_ body: (GpsProblem, UInt64) -> Void) { positioning.drainProblems(body) }
}
