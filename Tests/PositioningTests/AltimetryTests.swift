import Glibc
import RideFiles
import RideModel
import TestSupport
import Testing
@testable import Positioning

@Suite struct BMP280Tests {
    /// The datasheet's worked example (BST-BMP280-DS001 §3.12): calibration registers 0x88…0x9F
    /// and raw data registers 0xF7…0xFC as the chip holds them.
    static let calibrationRegisters: [UInt8] = [
        0x70, 0x6B, 0x43, 0x67, 0x18, 0xFC, // dig_T1 27504, dig_T2 26435, dig_T3 -1000
        0x7D, 0x8E, 0x43, 0xD6, 0xD0, 0x0B, // dig_P1 36477, dig_P2 -10685, dig_P3 3024
        0x27, 0x0B, 0x8C, 0x00, 0xF9, 0xFF, // dig_P4 2855, dig_P5 140, dig_P6 -7
        0x8C, 0x3C, 0xF8, 0xC6, 0x70, 0x17, // dig_P7 15500, dig_P8 -14600, dig_P9 6000
    ]
    static let dataRegisters: [UInt8] = [0x65, 0x5A, 0xC0, 0x7E, 0xED, 0x00] // adc_P 415148, adc_T 519888

    @Test func datasheetWorkedExample() throws {
        let c = try #require(BMP280.Calibration(bytes: Self.calibrationRegisters))
        #expect(c == BMP280.Calibration(t1: 27504, t2: 26435, t3: -1000, p1: 36477, p2: -10685, p3: 3024, p4: 2855,
                                         p5: 140, p6: -7, p7: 15500, p8: -14600, p9: 6000))
        let raw = try #require(BMP280.Raw(bytes: Self.dataRegisters))
        #expect(raw == BMP280.Raw(pressure: 415_148, temperature: 519_888))
        let r = try #require(BMP280.compensate(raw, c))
        #expect(r.tFine == 128_422)
        #expect(r.temperatureCentidegrees == 2508) // 25.08 °C
        // The datasheet gives 100 653.27 Pa (floating-point formula) and 100 653 Pa (32-bit);
        // the 64-bit integer formula's Q24.8 result is 25 767 233 = 100 653.25 Pa.
        #expect(r.pressureQ24_8 == 25_767_233)
        #expect(abs(r.pressurePa - 100_653.27) < 0.05)
    }

    @Test func absentOrBlankChipsAreRefused() {
        #expect(BMP280.Calibration(bytes: Array(repeating: 0, count: 24)) == nil)
        #expect(BMP280.Calibration(bytes: Array(repeating: 0xFF, count: 24)) == nil)
        #expect(BMP280.Calibration(bytes: Array(Self.calibrationRegisters.prefix(23))) == nil)
        // 0x80000: the channel has not been measured since reset.
        #expect(BMP280.Raw(bytes: [0x80, 0x00, 0x00, 0x7E, 0xED, 0x00]) == nil)
    }

    /// The datasheet's floating-point compensation (§8.1), a different formula from the integer
    /// one the app uses: the two agree within 1 Pa over the sensor's range.
    static func floatingPoint(_ raw: BMP280.Raw, _ c: BMP280.Calibration) -> (temperatureC: Double, pressurePa: Double) {
        let adcT = Double(raw.temperature), adcP = Double(raw.pressure)
        var v1 = (adcT / 16384 - Double(c.t1) / 1024) * Double(c.t2)
        let d = adcT / 131072 - Double(c.t1) / 8192
        var v2 = d * d * Double(c.t3)
        let tFine = Double(Int(v1 + v2))
        let t = (v1 + v2) / 5120
        v1 = tFine / 2 - 64000
        v2 = v1 * v1 * Double(c.p6) / 32768
        v2 += v1 * Double(c.p5) * 2
        v2 = v2 / 4 + Double(c.p4) * 65536
        v1 = (Double(c.p3) * v1 * v1 / 524_288 + Double(c.p2) * v1) / 524_288
        v1 = (1 + v1 / 32768) * Double(c.p1)
        var p = 1_048_576 - adcP
        p = (p - v2 / 4096) * 6250 / v1
        v1 = Double(c.p9) * p * p / 2_147_483_648
        v2 = p * Double(c.p8) / 32768
        return (t, p + (v1 + v2 + Double(c.p7)) / 16)
    }

    /// Random raw readings across the sensor's range: the integer compensation agrees with the
    /// floating-point one and falls as adc_P rises.
    @Test func compensationAgreesWithTheFloatingPointFormula() throws {
        let c = try #require(BMP280.Calibration(bytes: Self.calibrationRegisters))
        var rng = SeededRandom(seed: 280)
        for _ in 0..<5_000 {
            let raw = BMP280.Raw(pressure: Int32(rng.int(300_000...700_000)), temperature: Int32(rng.int(450_000...600_000)))
            let ours = try #require(BMP280.compensate(raw, c))
            let reference = Self.floatingPoint(raw, c)
            #expect(abs(ours.pressurePa - reference.pressurePa) < 1, "\(raw): \(ours.pressurePa) vs \(reference.pressurePa)")
            #expect(abs(ours.temperatureC - reference.temperatureC) < 0.01, "\(raw)")
            let higher = try #require(BMP280.compensate(BMP280.Raw(pressure: raw.pressure + 16, temperature: raw.temperature), c))
            #expect(higher.pressureQ24_8 < ours.pressureQ24_8)
        }
        let example = Self.floatingPoint(try #require(BMP280.Raw(bytes: Self.dataRegisters)), c)
        #expect(abs(example.pressurePa - 100_653.27) < 0.05 && abs(example.temperatureC - 25.08) < 0.01, "the datasheet's own figures")
    }

    /// The register values the app writes mean what docs/gps.md says.
    @Test func configurationRegisters() {
        let ctrl = BMP280.controlMeasurementValue, config = BMP280.configValue
        #expect(ctrl >> 5 == 0b010, "temperature ×2")
        #expect((ctrl >> 2) & 0b111 == 0b101, "pressure ×16")
        #expect(ctrl & 0b11 == 0b11, "normal mode")
        #expect(config >> 5 == 0b001, "standby 62.5 ms")
        #expect((config >> 2) & 0b111 == 0b100, "IIR coefficient 16")
        #expect(config & 1 == 0, "no 3-wire SPI")
    }
}

@Suite struct AltimetryTests {
    /// The standard atmosphere's published table (ISO 2533).
    @Test func pressureAltitudeMatchesTheStandardAtmosphere() {
        for (pa, m) in [(101_325.0, 0.0), (89_874.6, 1000.0), (79_495.2, 2000.0), (54_019.9, 5000.0), (107_477.7, -500.0)] {
            #expect(abs(PressureAltitude.altitudeM(pressurePa: pa) - m) < 0.5, "\(pa) Pa")
        }
        let p0 = PressureAltitude.seaLevelPa(pressurePa: 95_000, altitudeM: 420)
        #expect(abs(PressureAltitude.altitudeM(pressurePa: 95_000, seaLevelPa: p0) - 420) < 1e-6)
    }

    @Test func hysteresisIgnoresNoiseAndCountsClimbsInFull() {
        var c = AscentCounter(thresholdM: 1)
        var rng = SeededRandom(seed: 3)
        for _ in 0..<1000 { c.add(100 + rng.double(-0.45...0.45)) }
        #expect(c.ascentM < 1 && c.descentM < 1, "noise within ±0.45 m")
        // A 50 m climb in 0.5 m steps, then a 30 m descent.
        var h = 100.0
        var counter = AscentCounter(thresholdM: 1)
        counter.add(h)
        for _ in 0..<100 { h += 0.5; counter.add(h) }
        for _ in 0..<60 { h -= 0.5; counter.add(h) }
        #expect(counter.ascentM == 50)
        #expect(counter.descentM == 30)
        // A source change does not count the step between sources.
        counter.rebase(300)
        counter.add(300.4)
        #expect(counter.ascentM == 50)
    }

    /// The recording device's own barometric altitude (Garmin Edge 500) through the counter:
    /// with the barometer's 1 m hysteresis, total ascent and descent land within 1 % of the
    /// device's session figures (541 m, 541 m); a 5 m step rule, by contrast, reads 15 % low.
    @Test func ascentMatchesTheRecordingDevice() throws {
        let altitudes = try FixtureRide.edge500Altitudes()
        try #require(altitudes.count > 10_000)
        var ours = AscentCounter(thresholdM: Altimetry.Settings().barometerThresholdM)
        var coarse = AscentCounter(thresholdM: 5)
        for a in altitudes { ours.add(a); coarse.add(a) }
        #expect(abs(ours.ascentM - 541) / 541 < 0.01, "ascent \(ours.ascentM)")
        #expect(abs(ours.descentM - 541) / 541 < 0.01, "descent \(ours.descentM)")
        #expect(coarse.ascentM < 541 * 0.88, "a 5 m threshold reads low: \(coarse.ascentM)")
    }

    /// GPS altitude (the device's profile plus a receiver's wander and noise) smoothed and
    /// counted with the GPS settings: within 10 % of the barometric total, where unsmoothed
    /// counting with the barometer's threshold reads far too high.
    @Test func gpsAscentIsSmoothed() throws {
        let truth = try FixtureRide.edge500Altitudes()
        var rng = SeededRandom(seed: 19)
        var alt = Altimetry()
        var raw = AscentCounter(thresholdM: 1)
        var wander = 0.0
        var last: [Sample] = []
        for (i, a) in truth.enumerated() {
            wander += rng.double(-0.3...0.3)
            wander *= 0.98
            let gps = a + wander + rng.double(-1.5...1.5)
            raw.add(gps)
            last = []
            alt.distance(Double(i) * 8)
            alt.gps(altitudeM: gps, verticalErrorM: 10, at: MonotonicInstant(milliseconds: Int64(i) * 1000)) { last.append($0) }
        }
        #expect(alt.source == .gps)
        #expect(abs(alt.ascentM - 541) / 541 < 0.10, "GPS ascent \(alt.ascentM)")
        #expect(raw.ascentM > 541 * 1.3, "unsmoothed GPS counted with 1 m reads high: \(raw.ascentM)")
        #expect(last.map(\.quantity).prefix(3) == [.altitude, .ascent, .descent])
    }

    /// With a barometer: the first good fixes set the offset to GPS altitude, calibration never
    /// counts as climbing, and the barometer wins over GPS while it delivers.
    @Test func barometerCalibratedFromGPS() {
        var alt = Altimetry()
        let truthM = 420.0
        let seaLevel = 100_800.0 // weather: not the standard 101 325 Pa
        let pressure = 101_325.0 * Double.pow(1 - truthM / PressureAltitude.scaleM, 1 / PressureAltitude.exponent) * seaLevel / 101_325
        var samples: [Sample] = []
        for s in 0..<60 {
            let now = MonotonicInstant(milliseconds: Int64(s) * 1000)
            alt.pressure(pressure, at: now) { samples.append($0) }
            alt.gps(altitudeM: truthM + (s % 2 == 0 ? 4 : -4), verticalErrorM: 6, at: now.advanced(byMs: 200)) { samples.append($0) }
        }
        #expect(alt.source == .barometer)
        #expect(alt.calibrationFixes == 60)
        #expect(abs(alt.altitudeM! - truthM) < 0.5, "calibrated altitude \(alt.altitudeM!)")
        #expect(alt.ascentM == 0 && alt.descentM == 0, "calibration is not climbing")
        #expect(samples.allSatisfy { $0.quantity != .altitude || $0.origin == .measured })
        // Bad fixes (epv 40 m) do not calibrate.
        var poor = Altimetry()
        poor.pressure(pressure, at: .zero) { _ in }
        poor.gps(altitudeM: 999, verticalErrorM: 40, at: .zero) { _ in }
        #expect(poor.calibrationOffsetM == nil)
    }

    /// The barometer stops (unplugged): GPS takes over without a jump in ascent; it comes back:
    /// the barometer takes over again.
    @Test func sourceChangesDoNotCountTheStep() {
        var alt = Altimetry()
        var t: Int64 = 0
        for _ in 0..<10 { alt.pressure(95_000, at: MonotonicInstant(milliseconds: t)) { _ in }; t += 1000 }
        let ascentBefore = alt.ascentM
        t += 4000
        for k in 0..<30 { alt.gps(altitudeM: 800 + Double(k) * 0.01, verticalErrorM: 5, at: MonotonicInstant(milliseconds: t)) { _ in }; t += 1000 }
        #expect(alt.source == .gps)
        #expect(alt.ascentM == ascentBefore, "GPS 260 m above the uncalibrated barometer is not a climb")
        alt.pressure(95_000, at: MonotonicInstant(milliseconds: t)) { _ in }
        #expect(alt.source == .barometer)
        #expect(alt.ascentM == ascentBefore)
    }

    @Test func gradeOverTheWindow() {
        var g = GradeWindow(windowM: 50, minimumM: 20)
        var out: Double?
        for k in 0...20 { out = g.add(distanceM: Double(k) * 5, altitudeM: 100 + Double(k) * 5 * 0.06) }
        #expect(abs(out! - 6) < 1e-9)
        // Standing still: no grade.
        var stand = GradeWindow(windowM: 50, minimumM: 20)
        for _ in 0..<30 { out = stand.add(distanceM: 1000, altitudeM: 100) }
        #expect(out == nil)
        // A wall is clipped.
        var wall = GradeWindow(windowM: 50, minimumM: 20)
        _ = wall.add(distanceM: 0, altitudeM: 0)
        #expect(wall.add(distanceM: 30, altitudeM: 30) == Altimetry.gradeLimitPercent)
    }
}

/// The recording devices' rides (../shared/fixtures/rides), read with RideFiles' FIT reader.
enum FixtureRide {
    static var directory: String {
        // #filePath is …/Tests/PositioningTests/AltimetryTests.swift; ../shared sits beside the repo.
        var parts = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)
        return parts.joined(separator: "/") + "/../shared/fixtures/rides/"
    }

    static func bytes(_ name: String) throws -> [UInt8] {
        guard let f = fopen(directory + name, "rb") else { throw FixtureError.missing(directory + name) }
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

    enum FixtureError: Error { case missing(String) }

    /// enhanced_altitude (or altitude) of every record of the Edge 500 ride, m.
    static func edge500Altitudes() throws -> [Double] {
        try records("garmin-edge-500-activity.fit").compactMap(\.altitudeM)
    }

    struct Record { var timestamp: UInt32; var latDeg: Double?; var lonDeg: Double?; var altitudeM: Double?; var speedMps: Double?; var distanceM: Double? }

    /// The record messages of a fixture ride (RideFiles' FIT reader).
    static func records(_ name: String) throws -> [Record] {
        let file = try FITFile(bytes: try bytes(name))
        return file.messages(20).map { m in
            Record(timestamp: m.timestamp ?? 0,
                   latDeg: m.values[0].map { $0 * 180 / 2_147_483_648 },
                   lonDeg: m.values[1].map { $0 * 180 / 2_147_483_648 },
                   altitudeM: m.value(78, scale: 5, offset: 500) ?? m.value(2, scale: 5, offset: 500),
                   speedMps: m.value(73, scale: 1000) ?? m.value(6, scale: 1000),
                   distanceM: m.value(5, scale: 100))
        }
    }
}
