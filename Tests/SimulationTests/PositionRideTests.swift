import AppCore
import Glibc
import Device
import RideFiles
import RideModel
import Testing
import Training
@testable import Simulation

/// Whole rides in the simulator with the GPS and the barometer on the device's input path
/// (gpsd lines, BMP280 registers): the ride file's track, distance, altitude and climbing, GPS
/// speed driving auto-pause when there is no wheel sensor, the wheel winning when there is one,
/// and a lost fix.
@Suite struct PositionRideTests {
    static func run(_ text: String, autoPause: Bool = false) throws -> (HeadlessRun, RideExport) {
        var config = AppConfiguration()
        if autoPause { config.training.autoPause = AutoPauseSettings(thresholdMps: 3 / 3.6) }
        let archive = MemoryArchive()
        let sim = HeadlessRun(scenario: try Scenario.parse(text), options: .init(seed: 4), storage: SimulatedFlashStorage(),
                              archive: archive, configuration: config)
        sim.run()
        let ride = try #require(archive.rides.first)
        return (sim, try RideExport(records: ride.records))
    }

    /// What the synthetic rider covered between two simulated instants (the same seed).
    static func ridden(seed: UInt64 = 4, fromMs: Int64, toMs: Int64) -> Double {
        var r = SyntheticRide(seed: seed)
        r.advance(toMs: fromMs)
        let d0 = r.distanceM
        r.advance(toMs: toMs)
        return r.distanceM - d0
    }

    static func positions(_ e: RideExport) -> [(Int, Double, Double)] {
        (0..<e.rowCount).compactMap { r in
            guard let lat = e.value(r, .latitude), let lon = e.value(r, .longitude) else { return nil }
            return (Int(e.rowSecond[r]), lat, lon)
        }
    }

    /// No wheel sensor: speed and distance come from GPS, altitude and ascent from the
    /// barometer; the ride stops at the junction and auto-pause pauses it from GPS speed.
    @Test func gpsOnlyRideWithABarometer() throws {
        let (sim, e) = try Self.run("""
            seed 4
            duration 40m
            sensors hr power cadence gps baro
            at 2s press start
            at 38m command end
            """, autoPause: true)
        let track = Self.positions(e)
        #expect(track.count > 2000, "a position nearly every second: \(track.count)")
        let distance = e.builder.ride.distanceM
        let ridden = Self.ridden(fromMs: 5_000, toMs: 38 * 60_000)
        #expect(distance > 0.95 * ridden && distance < 1.01 * ridden, "GPS distance \(distance) vs ridden \(ridden)")
        #expect(e.builder.ride[.speed].hasData)
        // Auto-pause from GPS speed at the 40 s stop of the workout.
        let autoPauses = e.builder.events.filter { $0.kind == .pause && $0.trigger == .auto }
        #expect(!autoPauses.isEmpty, "GPS speed drives auto-pause")
        // The barometer's altitude and its climbing: the workout's 6 % climb.
        let ascent = e.builder.ride.totals[Quantity.ascent.index]
        #expect(ascent > 80, "ascent \(ascent)")
        let alts = (0..<e.rowCount).compactMap { e.value($0, .altitude) }
        #expect(alts.max()! - alts.min()! > 80)
        #expect(sim.runtime.positioning.barometerReadings > 2000)
        #expect(sim.runtime.positioning.gps.counters.badReports == 0)
        // Files: the FIT has the session's ascent and the GPX one point per positioned second.
        let fit = FITActivity(try FITFile(bytes: FITEncoder.encode(e)))
        #expect(fit.records.filter { $0.latitude != nil }.count == track.count)
        #expect(GPXEncoder.encode(e).components(separatedBy: "<trkpt ").count - 1 == track.count)
    }

    /// With a wheel sensor, its distance is the ride's: GPS adds nothing while it delivers.
    @Test func theWheelSensorsDistanceWins() throws {
        let (_, withGps) = try Self.run("""
            seed 4
            duration 20m
            sensors hr power speed cadence gps
            at 2s press start
            at 19m command end
            """)
        let (_, wheelOnly) = try Self.run("""
            seed 4
            duration 20m
            sensors hr power speed cadence
            at 2s press start
            at 19m command end
            """)
        #expect(abs(withGps.builder.ride.distanceM - wheelOnly.builder.ride.distanceM) < 0.5,
                "\(withGps.builder.ride.distanceM) vs \(wheelOnly.builder.ride.distanceM)")
        #expect(Self.positions(withGps).count > 1000)
    }

    /// A wheel-sensor dropout mid-ride: GPS fills the gap, and the total is the wheel's own
    /// figure for the whole ride (within GPS's error over those 60 s), never the gap counted twice.
    @Test func gpsFillsAWheelDropoutWithoutCountingItTwice() throws {
        func text(_ sensors: String, dropout: Bool) -> String {
            """
            seed 4
            duration 20m
            sensors \(sensors)
            at 2s press start
            \(dropout ? "at 6m dropout speed 60s" : "# no dropout")
            at 19m command end
            """
        }
        let total = try Self.run(text("hr power speed cadence gps", dropout: true)).1.builder.ride.distanceM
        let wheelDropout = try Self.run(text("hr power speed cadence", dropout: true)).1.builder.ride.distanceM
        let wheelWhole = try Self.run(text("hr power speed cadence", dropout: false)).1.builder.ride.distanceM
        let gap = wheelWhole - wheelDropout
        let gapRidden = Self.ridden(fromMs: 6 * 60_000, toMs: 7 * 60_000)
        #expect(gap > 0.8 * gapRidden, "the wheel alone misses the dropout: \(gap) of \(gapRidden) m")
        #expect(abs(total - wheelWhole) < 0.03 * gap + 5, "with GPS: \(total) m, the wheel's whole ride \(wheelWhole) m")
    }

    /// `gps-lost` in a scenario: the alert, no positions while it lasts, the track broken once.
    @Test func aLostFixInAScenario() throws {
        let (sim, e) = try Self.run("""
            seed 4
            duration 10m
            sensors hr power cadence gps
            at 2s press start
            at 4m gps-lost 30s
            at 9m command end
            """)
        let lines = sim.log.lines.elements
        #expect(lines.contains { $0.contains("alert: GPS LOST") }, "\(lines.suffix(20))")
        #expect(lines.contains { $0.contains("alert: GPS BACK") }, "\(lines.suffix(20))")
        let seconds = Set(Self.positions(e).map(\.0))
        let lostFrom = (4 * 60 - 5) + 1, lostTo = lostFrom + 28
        #expect(seconds.isDisjoint(with: lostFrom...lostTo), "no position while the fix is lost")
        #expect(seconds.contains(lostTo + 5))
        let track = sim.runtime.core.screen.track
        #expect((0..<track.count).filter { track.point($0).startsPiece }.count <= 1)
    }
}

/// A recorded ride replayed: its positions are the ride's, its (barometric) altitude goes
/// through the app's barometer path, and the app's total ascent and descent are the device's.
@Suite struct PositionReplayTests {
    static var fixtures: String {
        var parts = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)
        return parts.joined(separator: "/") + "/../shared/fixtures/rides/"
    }

    @Test func edge500AscentAndTrackAreTheDevices() throws {
        var bytes: [UInt8] = []
        guard let f = fopenRead(Self.fixtures + "garmin-edge-500-activity.fit") else {
            Issue.record("the fixture ride is missing at \(Self.fixtures)"); return
        }
        bytes = f
        let activity = FITActivity(try FITFile(bytes: bytes))
        let run = try ReplayRun(activity: activity, storage: SimulatedFlashStorage())
        run.run()
        let ride = try #require(run.archive.rides.first)
        let e = try RideExport(records: ride.records)
        let ascent = e.builder.ride.totals[Quantity.ascent.index]
        let descent = e.builder.ride.totals[Quantity.descent.index]
        // The device's session: total_ascent 541 m, total_descent 541 m (FITActivity does not
        // read them; fitdecode does, Tests/oracle).
        #expect(abs(ascent - 541) / 541 < 0.01, "ascent \(ascent) vs the device's 541 m")
        #expect(abs(descent - 541) / 541 < 0.01, "descent \(descent) vs the device's 541 m")
        let ours = (0..<e.rowCount).compactMap { r -> (Int64, Double, Double)? in
            guard let lat = e.value(r, .latitude), let lon = e.value(r, .longitude) else { return nil }
            return (e.unixMs(e.rowInstant(r)) / 1000, lat, lon)
        }
        var device: [Int64: (Double, Double)] = [:]
        for r in activity.records { if let lat = r.latitude, let lon = r.longitude { device[Int64(r.timestamp) + ReplayRun.fitEpochUnixS] = (lat, lon) } }
        #expect(ours.count > 10_000)
        let matched = ours.filter { o in device[o.0].map { abs($0.0 - o.1) < 1e-6 && abs($0.1 - o.2) < 1e-6 } ?? false }.count
        #expect(matched > ours.count * 99 / 100, "\(matched) of \(ours.count) seconds at the device's position")
    }
}

func fopenRead(_ path: String) -> [UInt8]? {
    guard let f = fopen(path, "rb") else { return nil }
    defer { fclose(f) }
    var out: [UInt8] = []
    var buf = [UInt8](repeating: 0, count: 65_536)
    while true {
        let n = fread(&buf, 1, buf.count, f)
        if n <= 0 { break }
        out += buf[0..<n]
    }
    return out
}
