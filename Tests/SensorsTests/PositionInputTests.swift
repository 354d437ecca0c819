import Positioning
import RideModel
import Testing
@testable import Sensors

/// GPS and barometer through the one input path (`SensorInputs.receive`): gpsd lines and
/// barometer registers in, samples, role states, the GPS status and the clock out, with the data
/// source's rules — the wheel sensor wins while it delivers and the odometer never counts a
/// stretch twice.
@Suite struct PositionInputTests {
    static let wheel = SourceIdentity.ble(BLEAddress("AA:BB:CC:DD:EE:02")!)
    static let t0 = UTCDateTime.unixMs(year: 2026, month: 6, day: 6, hour: 7)
    static let degPerM = 1 / 111_200.0

    static func inputs(wheel: Bool = false, barometer: Bool = false) -> SensorInputs {
        var sensors: [PairedSensor] = []
        if wheel { sensors.append(PairedSensor(Self.wheel, provides: QuantitySet(.speed, .distance), priority: 0)) }
        if barometer {
            sensors.append(PairedSensor(.onboard(.barometer), provides: QuantitySet(.altitude, .ascent, .descent, .grade), priority: 50))
        }
        sensors.append(PairedSensor(.onboard(.gnss), provides: QuantitySet(.latitude, .longitude, .speed, .distance, .altitude, .ascent, .descent, .grade),
                                    priority: 100))
        return SensorInputs(DataSourceConfiguration(sensors: sensors, wheelCircumferenceMm: 2000))
    }

    struct Out {
        var samples: [Sample] = []
        var roles: [(SensorRole, SensorState)] = []
        var gps: [GpsStatus] = []
        var clock: [WallClockTime] = []
        mutating func take(_ e: SensorEvent) {
            switch e {
            case .sample(let s): samples.append(s)
            case .status(let st, _): roles.append((st.role, st.state))
            case .gps(let g, _): gps.append(g)
            case .clock(let w, _): clock.append(w)
            case .found, .search, .radar, .bridgeConfig: break
            }
        }
        func values(_ q: Quantity) -> [Double] { samples.filter { $0.quantity == q }.map(\.value) }
        func role(_ r: SensorRole) -> SensorState? { roles.last { $0.0 == r }?.1 }
    }

    static func tpv(_ s: Int, northM: Double, speed: Double = 8, mode: Int = 3, alt: Double = 400) -> String {
        let d = UTCDateTime(unixMs: t0 + Int64(s) * 1000)
        func p(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let time = "2026-06-06T\(p(d.hour)):\(p(d.minute)):\(p(d.second)).000Z"
        if mode < 2 { return #"{"class":"TPV","mode":1,"time":"\#(time)"}"# }
        return #"{"class":"TPV","mode":\#(mode),"time":"\#(time)","lat":\#(46 + northM * degPerM),"lon":7.0,"altMSL":\#(alt),"speed":\#(speed),"eph":9,"epv":15}"#
    }

    static func feed(_ i: inout SensorInputs, _ line: String, atMs ms: Int64, _ out: inout Out) {
        var text = line
        text.withUTF8 { p in i.receive(.gpsdLine(UnsafeRawBufferPointer(p)), at: MonotonicInstant(milliseconds: ms)) { out.take($0) } }
    }

    /// A wheel sensor's frame with `revolutions` (BLE CSC, 2000 mm wheel) at `ms`.
    static func wheelFrame(_ i: inout SensorInputs, revolutions: UInt32, atMs ms: Int64, _ out: inout Out) {
        let eventTime = UInt16(truncatingIfNeeded: ms * 1024 / 1000)
        let payload: [UInt8] = [0x01] + withUnsafeBytes(of: revolutions.littleEndian, Array.init) + withUnsafeBytes(of: eventTime.littleEndian, Array.init)
        let frame = BridgeFrame(bridgeTimeUs: UInt64(ms) * 1000, .data(Self.wheel, profileCode: 0x2A5B, Payload(payload)!))
        frame.encoded().withBytes { i.receive(.bridgePacket($0, truncated: false), at: MonotonicInstant(milliseconds: ms)) { out.take($0) } }
    }

    @Test func fixesBecomeSamplesTheRoleTheStatusAndTheClock() {
        var i = Self.inputs()
        var out = Out()
        i.start(at: .zero) { out.take($0) }
        for s in 0..<10 { Self.feed(&i, Self.tpv(s, northM: Double(s) * 8, alt: -12.5), atMs: Int64(s) * 1000 + 200, &out) }
        #expect(out.values(.latitude).count == 10)
        #expect(out.values(.longitude).allSatisfy { $0 == 7 })
        #expect(out.values(.speed).allSatisfy { $0 == 8 })
        #expect(abs((out.values(.distance).last ?? 0) - 72) < 0.05, "9 steps of 8 m")
        #expect(out.values(.altitude).allSatisfy { $0 < 0 }, "below sea level is a value, not an absurd one")
        #expect(out.role(.gps) == .connected)
        #expect(out.gps.last == GpsStatus(mode: .fix3D))
        #expect(out.clock.last == WallClockTime(unixMs: Self.t0 + 9000, trusted: true))
        #expect(i.status.bad.total == 0)
    }

    /// The receiver says "no fix": the GPS role is lost at once (alerted, its position absent);
    /// the fix coming back reconnects it.
    @Test func noFixLosesTheGpsRole() {
        var i = Self.inputs()
        var out = Out()
        i.start(at: .zero) { out.take($0) }
        Self.feed(&i, Self.tpv(0, northM: 0), atMs: 0, &out)
        Self.feed(&i, Self.tpv(1, northM: 8, mode: 1), atMs: 1000, &out)
        #expect(out.role(.gps) == .lost)
        #expect(out.gps.last?.mode == .noFix)
        Self.feed(&i, Self.tpv(2, northM: 16), atMs: 2000, &out)
        #expect(out.role(.gps) == .connected)
        // gpsd goes away: absent, lost.
        i.receive(.gpsdDisconnected, at: MonotonicInstant(milliseconds: 3000)) { out.take($0) }
        #expect(out.gps.last?.mode == .absent)
        #expect(out.role(.gps) == .lost)
    }

    /// The fix is lost for 5 s (mode 1): the GPS role is lost, but the odometer counts the way
    /// across the gap once the fix is back (the receiver's odometer does; the data source no longer
    /// starts a lost onboard source's counter again). And fixes far faster than the data source's
    /// rate limit (gpsd replaying a log) keep every metre: the counter carries what was dropped.
    @Test func aLostFixAndAFloodOfFixesLoseNoDistance() {
        var i = Self.inputs()
        var out = Out()
        i.start(at: .zero) { out.take($0) }
        for s in 0..<10 { Self.feed(&i, Self.tpv(s, northM: Double(s) * 8), atMs: Int64(s) * 1000, &out) }
        for s in 10..<15 { Self.feed(&i, Self.tpv(s, northM: 0, mode: 1), atMs: Int64(s) * 1000, &out) }
        #expect(out.role(.gps) == .lost)
        for s in 15..<20 { Self.feed(&i, Self.tpv(s, northM: Double(s) * 8), atMs: Int64(s) * 1000, &out) }
        #expect(abs(i.source.odometerM - 19 * 8) < 0.1, "the way across the gap counts: \(i.source.odometerM)")
        // 500 fixes in half a second of the device's clock (gpsd replaying a log): they go on as
        // one every 100 ms; the last waits for the tick, which hands it on.
        for s in 20..<520 { Self.feed(&i, Self.tpv(s, northM: Double(s) * 8), atMs: 20_000 + Int64(s), &out) }
        #expect(i.positioning.fixesCoalesced > 480)
        #expect(i.status.bad[.rateLimited] == 0)
        i.tick(at: MonotonicInstant(milliseconds: 21_000)) { out.take($0) }
        #expect(abs(i.source.odometerM - i.positioning.gps.odometerM) < 0.001, "\(i.source.odometerM) vs the receiver's \(i.positioning.gps.odometerM)")
        #expect(abs(i.source.odometerM - 519 * 8) < 0.001 * 519 * 8)
        // The flood's times run a thousand times faster than the device's clock: after its first
        // fix (1 s after the one before, 1.02 s by the device) the clock rules refuse them as
        // jumps, and the clock keeps the last time that agreed.
        #expect(out.clock.last == WallClockTime(unixMs: Self.t0 + 20_000, trusted: true))
        #expect(i.positioning.gps.counters.clockRejectedByRule[Int(GpsClockRejection.jump.rawValue)] == 499)
    }

    /// Riding with a wheel sensor and GPS: the wheel's speed and distance are the ride's while it
    /// delivers; it stops for 20 s and GPS fills in; it comes back and wins again. The odometer
    /// is wheel + GPS-in-the-gap + wheel, each metre once.
    @Test func theWheelWinsWhileItDeliversAndNoStretchCountsTwice() {
        var i = Self.inputs(wheel: true)
        var out = Out()
        i.start(at: .zero) { out.take($0) }
        var revs: UInt32 = 0
        var north = 0.0
        // 30 s with both: 5 m/s. The wheel turns 2.5 times a second (2000 mm).
        for s in 0..<30 {
            revs += s % 2 == 0 ? 2 : 3
            Self.wheelFrame(&i, revolutions: revs, atMs: Int64(s) * 1000 + 100, &out)
            north += 5
            Self.feed(&i, Self.tpv(s, northM: north, speed: 5), atMs: Int64(s) * 1000 + 400, &out)
        }
        let afterFirst = i.source.odometerM
        #expect(abs(afterFirst - Double(revs - 2) * 2) < 0.01, "only the wheel counted: \(afterFirst)")
        // The wheel falls silent for 20 s (its sensor is stale after 3 s): GPS carries on.
        for s in 30..<50 {
            north += 5
            Self.feed(&i, Self.tpv(s, northM: north, speed: 5), atMs: Int64(s) * 1000 + 400, &out)
        }
        let gpsPart = i.source.odometerM - afterFirst
        #expect(gpsPart > 80 && gpsPart < 105, "GPS filled the gap: \(gpsPart)")
        // The wheel is back.
        for s in 50..<60 {
            revs += s % 2 == 0 ? 2 : 3
            Self.wheelFrame(&i, revolutions: revs, atMs: Int64(s) * 1000 + 100, &out)
            north += 5
            Self.feed(&i, Self.tpv(s, northM: north, speed: 5), atMs: Int64(s) * 1000 + 400, &out)
        }
        let total = i.source.odometerM
        #expect(total < Double(60 * 5) + 10, "no stretch counted twice: \(total)")
        #expect(total > Double(60 * 5) - 25, "no stretch lost: \(total)")
        // The distance readings never go back.
        let d = out.values(.distance)
        #expect(zip(d, d.dropFirst()).allSatisfy { $0 <= $1 })
    }

    /// The barometer's registers through the input path: altitude is the barometer's (measured),
    /// calibrated from the GPS fixes; GPS altitude does not show while the barometer delivers.
    @Test func barometerAltitudeWinsAndIsCalibratedFromGps() {
        var i = Self.inputs(barometer: true)
        var out = Out()
        i.start(at: .zero) { out.take($0) }
        let calibration: [UInt8] = [0x70, 0x6B, 0x43, 0x67, 0x18, 0xFC, 0x7D, 0x8E, 0x43, 0xD6, 0xD0, 0x0B,
                                    0x27, 0x0B, 0x8C, 0x00, 0xF9, 0xFF, 0x8C, 0x3C, 0xF8, 0xC6, 0x70, 0x17]
        let data: [UInt8] = [0x65, 0x5A, 0xC0, 0x7E, 0xED, 0x00] // 100 653.25 Pa: 56.07 m in the standard atmosphere
        calibration.withUnsafeBytes { i.receive(.barometerCalibration($0), at: .zero) { out.take($0) } }
        for s in 0..<30 {
            data.withUnsafeBytes { i.receive(.barometerData($0), at: MonotonicInstant(milliseconds: Int64(s) * 1000 + 100)) { out.take($0) } }
            Self.feed(&i, Self.tpv(s, northM: Double(s) * 5, speed: 5, alt: 120), atMs: Int64(s) * 1000 + 400, &out)
        }
        let alts = out.samples.filter { $0.quantity == .altitude }
        #expect(alts.allSatisfy { $0.origin == .measured }, "only the barometer's altitude")
        #expect(abs(alts.last!.value - 120) < 0.5, "calibrated to GPS: \(alts.last!.value)")
        #expect(abs(alts.first!.value - 56.07) < 0.1, "before any fix: the standard atmosphere")
        #expect(out.values(.ascent).allSatisfy { $0 == 0 }, "calibration is not climbing")
        #expect(i.positioning.barometerReadings == 30)
    }

    @Test func garbageAndBadRegistersAreCountedNeverFatal() {
        var i = Self.inputs(barometer: true)
        var out = Out()
        for junk in ["", "{", "not json", #"{"class":"TPV","lat":500}"#, String(repeating: "x", count: 9000)] {
            Self.feed(&i, junk, atMs: 10, &out)
        }
        i.receive(.gpsdLineTooLong, at: MonotonicInstant(milliseconds: 20)) { out.take($0) }
        // Data before the calibration, and blank registers.
        [UInt8](repeating: 0x80, count: 6).withUnsafeBytes { i.receive(.barometerData($0), at: MonotonicInstant(milliseconds: 30)) { out.take($0) } }
        #expect(i.positioning.gps.counters.badReports == 5)
        #expect(i.positioning.gps.counters.linesTooLong == 1)
        #expect(i.positioning.barometerBadReadings == 1)
        #expect(out.samples.isEmpty)
        var logged: [String] = []
        i.drainPositionProblems { p, n in logged.append("\(p) \(n)") }
        #expect(logged.count >= 4 && logged.contains { $0.contains("truncated") })
        var again: [String] = []
        i.drainPositionProblems { p, _ in again.append("\(p)") }
        #expect(again.isEmpty)
    }
}
