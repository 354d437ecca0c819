import Positioning
import RideModel
import Testing
@testable import Simulation

/// The synthetic ride's route, elevation profile, GPS and barometer: what they produce goes
/// through the app's own parser, fix rules, compensation and altimetry and comes out as the ride.
@Suite struct SimulatedPositioningTests {
    @Test func routeIsAClosedLoopOfTheAdvertisedLength() {
        let r = SyntheticRoute.demo
        #expect(r.lengthM > 27_500 && r.lengthM < 28_500, "\(r.lengthM)")
        let a = r.position(atDistanceM: 0), b = r.position(atDistanceM: r.lengthM)
        #expect(Geodesy.distanceM(latDeg: a.latDeg, lonDeg: a.lonDeg, latDeg: b.latDeg, lonDeg: b.lonDeg) < 0.01)
        // Ten metres along the route is ten metres away (within the corner cutting).
        var d = 5.0
        while d < r.lengthM {
            let p = r.position(atDistanceM: d), q = r.position(atDistanceM: d + 10)
            let step = Geodesy.distanceM(latDeg: p.latDeg, lonDeg: p.lonDeg, latDeg: q.latDeg, lonDeg: q.lonDeg)
            #expect(step > 9 && step <= 10.001, "at \(d) m: \(step)")
            d += 997
        }
    }

    /// An hour of the synthetic ride as gpsd reports: the app's receiver takes every report, its
    /// distance is the ride's within 1 %, and the smoothed GPS altitude follows the profile.
    @Test func gpsReportsMakeTheRidesTrack() {
        var ride = SyntheticRide(seed: 4)
        var gps = SimulatedGps(seed: 4)
        var receiver = GpsReceiver()
        var altimetry = Altimetry()
        let startUnixMs = UTCDateTime.unixMs(year: 2026, month: 6, day: 6, hour: 7)
        var fixes = 0
        var ms: Int64 = SimulatedGps.phaseMs
        while ms < 3_600_000 {
            ride.advance(toMs: ms)
            for line in gps.lines(unixMs: startUnixMs + ms, ride: ride) {
                var text = line
                text.withUTF8 { p in
                    receiver.receive(line: UnsafeRawBufferPointer(p), at: MonotonicInstant(milliseconds: ms)) { out in
                        guard case .fix(let f) = out else { return }
                        fixes += 1
                        if let a = f.altitudeM { altimetry.gps(altitudeM: a, verticalErrorM: f.verticalErrorM, at: f.instant) { _ in } }
                    }
                }
            }
            ms += SimulatedGps.periodMs
        }
        #expect(fixes == 3600)
        #expect(receiver.counters.badReports == 0 && receiver.counters.rejected == 0)
        #expect(abs(receiver.odometerM - ride.distanceM) / ride.distanceM < 0.01, "\(receiver.odometerM) vs \(ride.distanceM)")
        #expect(abs(altimetry.altitudeM! - ride.altitudeM) < 6, "\(altimetry.altitudeM!) vs \(ride.altitudeM)")
        #expect(altimetry.ascentM > 0)
    }

    /// The barometer's raw registers, compensated as on the board and calibrated from GPS, give
    /// the ride's altitude; ascent equals the profile's climbing.
    @Test func barometerRegistersGiveTheRidesAltitude() throws {
        let baro = SimulatedBarometer()
        let c = try #require(BMP280.Calibration(bytes: SimulatedBarometer.calibrationRegisters))
        var ride = SyntheticRide(seed: 9)
        var altimetry = Altimetry()
        var climbed = 0.0, last = ride.altitudeM
        var ms: Int64 = 0
        while ms < Int64(SyntheticRide.workoutLengthS) * 1000 {
            ride.advance(toMs: ms)
            climbed += max(0, ride.altitudeM - last)
            last = ride.altitudeM
            let now = MonotonicInstant(milliseconds: ms)
            let raw = try #require(BMP280.Raw(bytes: baro.dataRegisters(altitudeM: ride.altitudeM)))
            let pa = try #require(BMP280.compensate(raw, c)).pressurePa
            altimetry.pressure(pa, at: now) { _ in }
            altimetry.gps(altitudeM: ride.altitudeM, verticalErrorM: 10, at: now) { _ in }
            ms += 1000
        }
        #expect(altimetry.source == .barometer)
        #expect(abs(altimetry.altitudeM! - ride.altitudeM) < 0.3, "\(altimetry.altitudeM!) vs \(ride.altitudeM)")
        #expect(climbed > 100)
        #expect(abs(altimetry.ascentM - climbed) < 2, "ascent \(altimetry.ascentM) vs the profile's \(climbed)")
    }

    @Test func lostFixReportsModeOne() {
        var gps = SimulatedGps(seed: 1)
        var ride = SyntheticRide(seed: 1)
        ride.advance(toMs: 10_000)
        gps.noFixUntilMs = 20_000
        let lines = gps.lines(unixMs: 1_780_000_000_000, ride: ride)
        #expect(lines[0].contains("\"mode\":1") && !lines[0].contains("\"lat\""))
    }
}
