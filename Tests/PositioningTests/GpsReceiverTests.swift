import RideModel
import TestSupport
import Testing
@testable import Positioning

/// The fix rules and the GPS odometer, fed gpsd lines as the socket delivers them.
@Suite struct GpsReceiverTests {
    static let t0 = UTCDateTime.unixMs(year: 2024, month: 6, day: 9, hour: 10)

    /// A TPV line at `s` seconds after t0.
    static func tpv(_ s: Double, lat: Double, lon: Double, mode: Int = 3, speed: Double? = 8, eph: Double? = 5,
                    alt: Double? = 400, epv: Double? = 8) -> String {
        let ms = Self.t0 + Int64((s * 1000).rounded())
        let d = UTCDateTime(unixMs: ms)
        func pad(_ v: Int, _ n: Int) -> String { String(repeating: "0", count: max(0, n - String(v).count)) + String(v) }
        let time = "\(pad(d.year, 4))-\(pad(d.month, 2))-\(pad(d.day, 2))T\(pad(d.hour, 2)):\(pad(d.minute, 2)):\(pad(d.second, 2)).\(pad(d.millisecond, 3))Z"
        var line = "{\"class\":\"TPV\",\"device\":\"/dev/ttyAMA0\",\"mode\":\(mode),\"time\":\"\(time)\",\"lat\":\(lat),\"lon\":\(lon)"
        if let alt { line += ",\"altMSL\":\(alt)" }
        if let speed { line += ",\"speed\":\(speed)" }
        if let eph { line += ",\"eph\":\(eph)" }
        if let epv { line += ",\"epv\":\(epv)" }
        return line + "}"
    }

    struct Run {
        var receiver = GpsReceiver()
        var outputs: [GpsOutput] = []
        var fixes: [GpsFix] { outputs.compactMap { if case .fix(let f) = $0 { f } else { nil } } }
        var statuses: [GpsStatus] { outputs.compactMap { if case .status(let s, _) = $0 { s } else { nil } } }
        var problems: [GpsProblem] { outputs.compactMap { if case .problem(let p, _) = $0 { p } else { nil } } }

        mutating func feed(_ line: String, atMs ms: Int64) {
            var copy = line
            var out: [GpsOutput] = []
            copy.withUTF8 { p in receiver.receive(line: UnsafeRawBufferPointer(p), at: MonotonicInstant(milliseconds: ms)) { out.append($0) } }
            outputs += out
        }

        mutating func tick(atMs ms: Int64) {
            var out: [GpsOutput] = []
            receiver.tick(at: MonotonicInstant(milliseconds: ms)) { out.append($0) }
            outputs += out
        }
    }

    /// Northwards along a meridian at 10 m/s: the odometer is the meridian arc, and each fix
    /// gives its position, the reported speed and the time.
    @Test func odometerFollowsTheTrack() throws {
        var run = Run()
        let lat0 = 52.0
        let (m, _) = Geodesy.radii(latDeg: lat0)
        let degPerM = 1 / (m * Geodesy.radiansPerDegree)
        for s in 0...100 {
            run.feed(Self.tpv(Double(s), lat: lat0 + Double(s) * 10 * degPerM, lon: 5.0, speed: 10), atMs: Int64(s) * 1000 + 300)
        }
        let fixes = run.fixes
        #expect(fixes.count == 101)
        #expect(abs(fixes.last!.odometerM - 1000) < 0.05)
        #expect(fixes.last!.speedMps == 10)
        #expect(fixes.last!.altitudeM == 400)
        #expect(fixes.last!.mode == .fix3D)
        #expect(run.statuses.first?.mode == .fix3D)
        let times = run.outputs.compactMap { if case .time(let t, _) = $0 { t } else { nil } }
        // The first two fixes' times only start the run of agreeing times the clock waits for.
        #expect(times.count == 99 && times.first == Self.t0 + 2_000 && times.last == Self.t0 + 100_000)
    }

    @Test func inaccurateFixesGivePositionNeverAndCountAsRejected() {
        var run = Run()
        run.feed(Self.tpv(0, lat: 52, lon: 5, eph: 60), atMs: 0)
        run.feed(Self.tpv(1, lat: 52, lon: 5, eph: 50), atMs: 1000)
        #expect(run.fixes.count == 1)
        #expect(run.receiver.counters.rejectedByRule[Int(GpsFixRejection.inaccurate.rawValue)] == 1)
        #expect(run.problems == [.rejected(.inaccurate)])
    }

    @Test func altitudeNeedsA3DFixWithAGoodEpv() {
        var run = Run()
        run.feed(Self.tpv(0, lat: 52, lon: 5, mode: 2, alt: 100), atMs: 0)
        run.feed(Self.tpv(1, lat: 52, lon: 5, mode: 3, alt: 100, epv: 61), atMs: 1000)
        run.feed(Self.tpv(2, lat: 52, lon: 5, mode: 3, alt: 100, epv: nil), atMs: 2000)
        run.feed(Self.tpv(3, lat: 52, lon: 5, mode: 3, alt: nil), atMs: 3000)
        #expect(run.fixes.map(\.altitudeM) == [nil, nil, 100, nil])
        #expect(run.fixes.map(\.mode) == [.fix2D, .fix3D, .fix3D, .fix3D])
    }

    /// A multipath spike 500 m away for two seconds is dropped and adds no distance; a real
    /// relocation (the first fix was the wrong one) is believed after `jumpsInARowMax` fixes.
    @Test func jumpsAreRejectedThenBelievedWhenTheyPersist() {
        var run = Run()
        let east = 1 / (Geodesy.radii(latDeg: 52).primeVerticalM * Geodesy.radiansPerDegree * 0.615_661_475_3) // ≈ deg per m at 52°
        var s = 0.0
        func at(_ m: Double) -> Double { 5 + m * east }
        run.feed(Self.tpv(s, lat: 52, lon: at(0), speed: 5), atMs: 0)
        for k in 1...3 { s += 1; run.feed(Self.tpv(s, lat: 52, lon: at(Double(k) * 5), speed: 5), atMs: Int64(s * 1000)) }
        s += 1; run.feed(Self.tpv(s, lat: 52, lon: at(520), speed: 5), atMs: Int64(s * 1000))
        s += 1; run.feed(Self.tpv(s, lat: 52, lon: at(525), speed: 5), atMs: Int64(s * 1000))
        s += 1; run.feed(Self.tpv(s, lat: 52, lon: at(30), speed: 5), atMs: Int64(s * 1000))
        #expect(run.receiver.counters.rejectedByRule[Int(GpsFixRejection.jump.rawValue)] == 2)
        #expect(abs(run.receiver.odometerM - 30) < 0.01)
        // Now the receiver insists on a place 3 km away.
        for _ in 0..<GpsFixRules().jumpsInARowMax {
            s += 1; run.feed(Self.tpv(s, lat: 52, lon: at(3_000), speed: 5), atMs: Int64(s * 1000))
        }
        #expect(run.receiver.counters.positionRestarts == 1)
        #expect(abs(run.receiver.odometerM - 30) < 0.01, "the relocation adds no distance")
        s += 1; run.feed(Self.tpv(s, lat: 52, lon: at(3_005), speed: 5), atMs: Int64(s * 1000))
        #expect(abs(run.receiver.odometerM - 35) < 0.01)
        #expect(run.fixes.last.map { abs($0.longitudeDeg - at(3_005)) < 1e-9 } == true)
    }

    /// A receiver standing still wanders by metres; no distance is added while it reports no
    /// speed, and the distance from where it stood counts once it moves.
    @Test func standingStillAddsNoDistance() {
        var run = Run()
        var rng = SeededRandom(seed: 7)
        let degPerM = 1 / 111_000.0
        for s in 0..<300 {
            run.feed(Self.tpv(Double(s), lat: 52 + rng.double(-3...3) * degPerM, lon: 5 + rng.double(-3...3) * degPerM / 0.6, speed: 0.1),
                     atMs: Int64(s) * 1000)
        }
        #expect(run.receiver.odometerM == 0)
        #expect(run.fixes.count == 300, "positions are still shown")
        run.feed(Self.tpv(300, lat: 52 + 8 * degPerM, lon: 5, speed: 6), atMs: 300_000)
        #expect(run.receiver.odometerM > 4 && run.receiver.odometerM < 12)
    }

    @Test func repeatsAndFixesWithoutTimeAreNotPositions() {
        var run = Run()
        run.feed(Self.tpv(1, lat: 52, lon: 5), atMs: 0)
        run.feed(Self.tpv(1, lat: 52.001, lon: 5), atMs: 100)
        run.feed(Self.tpv(0, lat: 52.002, lon: 5), atMs: 150)
        run.feed(#"{"class":"TPV","mode":3,"lat":52.0,"lon":5.0}"#, atMs: 200)
        #expect(run.fixes.count == 1)
        #expect(run.receiver.counters.sameEpochReports == 1)
        #expect(run.receiver.counters.rejectedByRule[Int(GpsFixRejection.notNewer.rawValue)] == 1)
        #expect(run.receiver.counters.rejectedByRule[Int(GpsFixRejection.noTime.rawValue)] == 1)
        #expect(run.problems == [.rejected(.notNewer), .rejected(.noTime)], "a repeat of the epoch is no problem")
    }

    /// gpsd fed faster than the receiver's cycle reports an epoch once per sentence: GGA (no
    /// speed) then RMC (speed). The second completes the fix's speed and adds no distance.
    @Test func aRepeatOfTheEpochCompletesTheSpeed() {
        var run = Run()
        run.feed(Self.tpv(0, lat: 52, lon: 5, speed: nil), atMs: 0)
        run.feed(Self.tpv(1, lat: 52.0001, lon: 5, speed: nil), atMs: 1000)
        run.feed(Self.tpv(1, lat: 52.0001, lon: 5, speed: 11.5), atMs: 1010)
        run.feed(Self.tpv(1, lat: 52.0001, lon: 5, speed: 12.5), atMs: 1020)
        let fixes = run.fixes
        #expect(fixes.count == 3)
        #expect(abs(fixes[1].speedMps! - 11.13) < 0.01, "derived from the positions first")
        #expect(fixes[2].speedMps == 11.5)
        #expect(fixes[2].odometerM == fixes[1].odometerM)
    }

    /// "No fix" from the receiver loses the fix at once; silence loses it after
    /// `fixLostAfterMs`; a fix coming back is announced again.
    @Test func lostAndRegainedFix() {
        var run = Run()
        run.feed(Self.tpv(0, lat: 52, lon: 5), atMs: 0)
        run.feed(#"{"class":"TPV","mode":1,"time":"2024-06-09T10:00:01.000Z"}"#, atMs: 1000)
        #expect(run.statuses.map(\.mode) == [.fix3D, .noFix])
        #expect(run.receiver.lastFix == nil)
        run.feed(Self.tpv(2, lat: 52, lon: 5, mode: 2), atMs: 2000)
        run.tick(atMs: 4_900)
        #expect(run.statuses.last?.mode == .fix2D)
        run.tick(atMs: 5_001)
        #expect(run.statuses.map(\.mode) == [.fix3D, .noFix, .fix2D, .noFix])
        #expect(run.receiver.counters.fixesLost == 2)
        var disconnected: [GpsOutput] = []
        run.receiver.disconnected(at: MonotonicInstant(milliseconds: 6000)) { disconnected.append($0) }
        #expect(disconnected == [.status(GpsStatus(mode: .absent), at: MonotonicInstant(milliseconds: 6000))])
    }

    @Test func satellitesFromSky() {
        var run = Run()
        run.feed(GpsdReportTests.sky, atMs: 0)
        #expect(run.statuses == [GpsStatus(mode: .noFix, satellitesUsed: 2, satellitesVisible: 3)])
        run.feed(GpsdReportTests.sky, atMs: 1000)
        #expect(run.statuses.count == 1, "an unchanged status is not repeated")
    }

    /// Garbage is counted by kind and logged at counts 1, 2, 4, 8, ...: 100 bad lines give 7
    /// log lines, and the good reports between them still count.
    @Test func garbageIsCountedAndLoggedSparingly() {
        var run = Run()
        for k in 0..<100 {
            run.feed(#"{"class":"TPV","mode":3,"lat":52.0"#, atMs: Int64(k) * 10)
            run.feed(#"{"class":"ATT","heading":10}"#, atMs: Int64(k) * 10 + 1)
            run.feed(Self.tpv(Double(k), lat: 52, lon: 5), atMs: Int64(k) * 10 + 2)
        }
        run.feed(#"{"class":"VERSION","proto_major":4}"#, atMs: 2000)
        #expect(run.receiver.counters.badReportsByCode[GpsdReportError.truncated.code] == 100)
        #expect(run.receiver.counters.reportsByClass[Int(GpsdReportClass.other.rawValue)] == 100)
        #expect(run.fixes.count == 100)
        let truncatedLogs = run.outputs.compactMap { if case .problem(.badReport(.truncated), let n) = $0 { n } else { nil } }
        #expect(truncatedLogs == [1, 2, 4, 8, 16, 32, 64])
        #expect(run.problems.contains(.protocolVersion(4)))
    }

    @Test func fixSamples() {
        let fix = GpsFix(instant: MonotonicInstant(milliseconds: 5), timeUnixMs: 0, mode: .fix3D, latitudeDeg: 1, longitudeDeg: 2,
                         speedMps: 3, altitudeM: 4, horizontalErrorM: nil, verticalErrorM: nil, odometerM: 6)
        var samples: [Sample] = []
        fix.forEachSample { samples.append($0) }
        #expect(samples.map(\.quantity) == [.latitude, .longitude, .speed, .distance])
        #expect(samples.map(\.value) == [1, 2, 3, 6])
        #expect(samples.last?.origin == .generated)
    }
}

@Suite struct GeodesyTests {
    /// Published WGS 84 figures: the length of one degree of latitude (111 132.954 − 559.822 cos 2φ
    /// + 1.175 cos 4φ m) and of longitude.
    @Test func degreeLengths() {
        let oneDegree = Geodesy.radiansPerDegree
        #expect(abs(Geodesy.radii(latDeg: 0).meridionalM * oneDegree - 110_574.3) < 0.5)
        #expect(abs(Geodesy.radii(latDeg: 45).meridionalM * oneDegree - 111_131.78) < 0.5)
        #expect(abs(Geodesy.radii(latDeg: 90).meridionalM * oneDegree - 111_693.9) < 0.5)
        #expect(abs(Geodesy.distanceM(latDeg: 0, lonDeg: 0, latDeg: 0, lonDeg: 0.01) - 1_113.1949) < 0.01)
        #expect(abs(Geodesy.distanceM(latDeg: 60, lonDeg: 10, latDeg: 60, lonDeg: 10.01) - 558.0) < 0.05)
        // Across the antimeridian.
        #expect(abs(Geodesy.distanceM(latDeg: 0, lonDeg: 179.995, latDeg: 0, lonDeg: -179.995) - 1_113.1949) < 0.01)
    }
}

extension GpsReceiverTests {
    // MARK: The wall clock (docs/gps.md, "The wall clock")

    /// Fixes at 1 Hz from `from` (receiver time `timeMs(s)`), device clock `s * 1000 + 250`.
    static func clockRun(_ seconds: Range<Int>, timeMs: (Int) -> Int64, rules: GpsFixRules = GpsFixRules(),
                         into run: inout Run) {
        for s in seconds {
            let offsetS = Double(timeMs(s) - Self.t0) / 1000
            run.feed(Self.tpv(offsetS, lat: 52 + Double(s) * 1e-5, lon: 5), atMs: Int64(s) * 1000 + 250)
        }
    }

    func times(_ run: Run) -> [Int64] { run.outputs.compactMap { if case .time(let t, _) = $0 { t } else { nil } } }

    /// A receiver after a GPS week-number rollover (its firmware's era ended) reports its date
    /// 1024 weeks early: a 2004 date in 2024. Another, before it has decoded the date, reports
    /// 1999 or a 32-bit time that wrapped: none goes to the wall clock, each is counted and
    /// logged; the positions still count.
    @Test func timesOutsideTheYearsTheAppRunsInNeverSetTheClock() {
        let era = Int64(1024 * 7 * 86_400_000)
        for bad in [Self.t0 - era, Self.t0 + era, UTCDateTime.unixMs(year: 1999, month: 8, day: 22),
                    UTCDateTime.unixMs(year: 1980, month: 1, day: 6),
                    UTCDateTime.unixMs(year: 2023, month: 12, day: 31, hour: 23, minute: 59)] {
            var run = Run()
            Self.clockRun(0..<10, timeMs: { bad + Int64($0) * 1000 }, into: &run)
            #expect(run.fixes.count == 10, "the fixes still count")
            #expect(times(run).isEmpty, "\(UTCDateTime(unixMs: bad).iso8601) went to the clock")
            #expect(run.receiver.counters.clockRejectedByRule[Int(GpsClockRejection.outOfRange.rawValue)] == 10)
            #expect(run.problems == Array(repeating: .clockRejected(.outOfRange), count: 4), "logged at counts 1, 2, 4 and 8")
        }
        // The edges of the window.
        let rules = GpsFixRules()
        var first = Run()
        Self.clockRun(0..<3, timeMs: { rules.clockEarliestUnixMs + Int64($0) * 1000 }, into: &first)
        #expect(times(first) == [rules.clockEarliestUnixMs + 2000])
        var last = Run()
        let end = rules.clockEarliestUnixMs + rules.clockSpanMs
        Self.clockRun(0..<4, timeMs: { end - 3000 + Int64($0) * 1000 }, into: &last)
        #expect(times(last) == [end - 1000], "the window's last second is in, its end is not")
    }

    /// The time goes to the clock from the third fix whose times advance with the device's
    /// clock; a jump (a receiver's clock corrected after a cold start, a replay faster than real
    /// time) is counted and logged, and restarts the run: the clock waits for three agreeing
    /// fixes again.
    @Test func aJumpInTheReceiversTimeIsRefusedUntilItsTimesAgreeAgain() {
        var run = Run()
        let jumpMs: Int64 = 3_600_000
        Self.clockRun(0..<20, timeMs: { Self.t0 + Int64($0) * 1000 + ($0 >= 10 ? jumpMs : 0) }, into: &run)
        let expected = (2..<10).map { Self.t0 + Int64($0) * 1000 } + (12..<20).map { Self.t0 + jumpMs + Int64($0) * 1000 }
        #expect(times(run) == expected)
        #expect(run.receiver.counters.clockRejectedByRule[Int(GpsClockRejection.jump.rawValue)] == 1)
        #expect(run.receiver.counters.clockTimes == UInt64(expected.count))
        #expect(run.problems == [.clockRejected(.jump)])
        // Within the tolerance (gpsd's delay varies): no jump.
        var jitter = Run()
        Self.clockRun(0..<10, timeMs: { Self.t0 + Int64($0) * 1000 + ($0 % 2 == 0 ? 450 : 0) }, into: &jitter)
        #expect(times(jitter).count == 8)
        var beyond = Run()
        Self.clockRun(0..<10, timeMs: { Self.t0 + Int64($0) * 1000 + ($0 % 2 == 0 ? 550 : 0) }, into: &beyond)
        #expect(times(beyond).isEmpty)
        // A log replayed ten times faster than real time: every time is a jump.
        var fast = Run()
        for s in 0..<30 { fast.feed(Self.tpv(Double(s), lat: 52 + Double(s) * 1e-5, lon: 5), atMs: Int64(s) * 100) }
        #expect(fast.fixes.count == 30)
        #expect(times(fast).isEmpty)
        #expect(fast.receiver.counters.clockRejectedByRule[Int(GpsClockRejection.jump.rawValue)] == 29)
    }
}
