import TestSupport
import Foundation
import Testing
import AppCore
import RideModel
@testable import RideFiles

/// Where the oracle samples go (Tests/oracle/test_ridefiles.py reads them).
let samplesDirectory: String = {
    if let env = ProcessInfo.processInfo.environment["BIKE_RIDEFILES_OUT"], !env.isEmpty { return env }
    return FileManager.default.currentDirectoryPath + "/.build/ridefiles-samples"
}()

let sampleSeedCount: Int = ProcessInfo.processInfo.environment["BIKE_RIDEFILES_COUNT"].flatMap { Int($0) } ?? 24

/// The app's own totals for a ride: replayed through a fresh AppCore (crash-recovery path), not
/// through the exporter.
func appTotals(_ records: [RideRecord]) -> [String: Any] {
    var core = AppCore(randomSeed: 1)
    for r in records { core.replay(r) }
    let b = core.builder!
    let stop = b.stopInstant!
    func stats(_ s: StatisticsSet, timerMs: Int64, elapsedMs: Int64, hr: ZoneTimes?, pw: ZoneTimes?) -> [String: Any] {
        var d: [String: Any] = ["timer_s": Double(timerMs) / 1000, "elapsed_s": Double(elapsedMs) / 1000]
        d["distance_m"] = s[.distance].hasData ? s.distanceM : NSNull()
        d["avg_speed_mps"] = s.averageSpeedMps ?? NSNull()
        d["max_speed_mps"] = s[.speed].max ?? NSNull()
        d["avg_hr"] = s[.heartRate].average ?? NSNull()
        d["max_hr"] = s[.heartRate].max ?? NSNull()
        d["avg_power"] = s[.power].average ?? NSNull()
        d["max_power"] = s[.power].max ?? NSNull()
        d["avg_cadence"] = s[.cadence].average ?? NSNull()
        d["max_cadence"] = s[.cadence].max ?? NSNull()
        d["hr_zones_s"] = hr.map { $0.values.map { Double($0) / 1000 } } ?? NSNull()
        d["power_zones_s"] = pw.map { $0.values.map { Double($0) / 1000 } } ?? NSNull()
        return d
    }
    let settings = core.header!.settings
    var session = stats(b.ride, timerMs: b.timerTimeMs(at: stop), elapsedMs: b.elapsedTimeMs(at: stop),
                        hr: settings.heartRateZones == nil ? nil : b.heartRateZoneTimes, pw: settings.powerZones == nil ? nil : b.powerZoneTimes)
    session["num_laps"] = b.laps.count
    let laps = b.laps.map { l in
        stats(l.statistics, timerMs: l.statistics.timerTimeMs, elapsedMs: l.elapsedMs(at: stop),
              hr: settings.heartRateZones == nil ? nil : l.heartRateZoneTimes, pw: settings.powerZones == nil ? nil : l.powerZoneTimes)
    }
    let anchor = core.wallAnchorForRide!
    return ["session": session, "laps": laps,
            "start_unix_s": Double(anchor.wallTime(at: b.startInstant!).unixMs) / 1000,
            "stop_unix_s": Double(anchor.wallTime(at: stop).unixMs) / 1000]
}

func writeJSON(_ object: Any, to path: String) throws {
    let data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
    try data.write(to: URL(fileURLWithPath: path))
}

struct FITBasicsTests {
    @Test func crcMatchesTheSpecVectors() {
        #expect(FITCRC.compute(Array("123456789".utf8)) == 0xBB3D)
        #expect(FITCRC.compute([0x0E, 0x10, 0x43, 0x08, 0x78, 0x06, 0x09, 0x00, 0x2E, 0x46, 0x49, 0x54]) == 0x8596)
    }

    @Test func semicirclesAndEpoch() {
        #expect(FITEncoder.semicircles(47.5) == 566_697_073)
        #expect(FITEncoder.semicircles(200) == nil)
        #expect(FITTime.unixEpochOffsetSeconds == UTCDateTime.unixMs(year: 1989, month: 12, day: 31) / 1000)
    }

    @Test func decimalTextRoundsWithoutFoundation() {
        #expect(decimalText(47.123456789, decimals: 7) == "47.1234568")
        #expect(decimalText(-8.5, decimals: 1) == "-8.5")
        #expect(decimalText(-0.00001, decimals: 2) == "0")
        #expect(decimalText(12, decimals: 3) == "12")
        #expect(decimalText(0.05, decimals: 1) == "0.1")
    }

    @Test func sensorMetadataRoundTripsAndRejectsJunk() {
        let s = SensorIdentity(slot: "hr", source: .ant, kind: .heartRate, id: "4711", batteryPercent: 30, name: "a;b")
        let back = SensorIdentity(key: "sensor.hr", value: s.metadataValue)
        #expect(back?.antDeviceNumber == 4711 && back?.batteryPercent == 30 && back?.name == "ab")
        #expect(SensorIdentity(key: "sensor.x", value: "source=usb;type=heart_rate;id=1") == nil)
        #expect(SensorIdentity(key: "sensor.x", value: "source=ble;type=power") == nil)
        #expect(SensorIdentity(key: "device.x", value: s.metadataValue) == nil)
    }

    @Test func recordsWithoutHeaderOrStartAreRefused() {
        #expect(throws: RideFileError.noHeader) { try FITEncoder.encode(records: []) }
        let h = RideHeader(rideID: RideID(high: 1, low: 2), anchor: WallClockAnchor(monotonic: .zero, wall: WallClockTime(unixMs: 1_700_000_000_000, trusted: true)), settings: RideSettings())
        #expect(throws: RideFileError.notStarted) { try FITEncoder.encode(records: [.header(h)]) }
    }
}

struct RideFileRoundTripTests {
    /// Encodes many simulated rides, checks them with the project's own reader, and writes them
    /// (.fit/.gpx/.tcx + expected .json) for the Python oracles.
    @Test func simulatedRidesRoundTripAndAreWrittenForTheOracles() throws {
        try FileManager.default.createDirectory(atPath: samplesDirectory, withIntermediateDirectories: true)
        var index: [[String: Any]] = []
        for seed in UInt64(1)...UInt64(sampleSeedCount) {
            let sim = SimulatedRide(seed: seed)
            let export = try RideExport(records: sim.records)
            let fit = FITEncoder.encode(export)
            let file = try FITFile(bytes: fit)
            #expect(file.headerCRCMatched == true, "seed \(seed)")
            let activity = FITActivity(file)
            #expect(activity.records.count == sim.runningSeconds, "seed \(seed): record count")
            #expect(export.rrSeconds.count == sim.rrCount, "seed \(seed): RR count")
            let ts = activity.records.map(\.timestamp)
            #expect(zip(ts, ts.dropFirst()).allSatisfy { $0 < $1 }, "seed \(seed): timestamps strictly increase")
            #expect(file.messages.first?.global == 0, "file_id first")
            #expect(file.messages.last?.global == 34, "activity last")
            #expect(activity.laps.count == sim.laps, "seed \(seed): laps")
            #expect(file.messages(23).count == 3, "seed \(seed): unit + 2 valid sensors (the junk one is skipped)")
            // timer events: start + (stop,start) per pause and per gap + final stop
            let timer = activity.events.filter { $0.event == 0 }
            #expect(timer.count == 2 + 2 * sim.pauses + 2 * sim.gaps, "seed \(seed): timer events")
            #expect(timer.filter { $0.eventType == 4 && $0.data == 1 }.count == sim.autoPauses, "seed \(seed): auto pauses")
            let totals = appTotals(sim.records)
            let session = totals["session"] as! [String: Any]
            #expect(abs((activity.sessions.first?.timerS ?? -1) - (session["timer_s"] as! Double)) < 0.0015, "seed \(seed)")
            let allTS = file.messages.compactMap(\.timestamp)
            #expect(zip(allTS, allTS.dropFirst()).allSatisfy { $0 <= $1 }, "seed \(seed): no timestamp goes backwards")

            let gpx = GPXEncoder.encode(export)
            let tcx = TCXEncoder.encode(export)
            #expect(gpx.components(separatedBy: "<trkpt ").count - 1 == sim.positionSeconds, "seed \(seed): GPX points")
            #expect(tcx.components(separatedBy: "<Trackpoint>").count - 1 == sim.runningSeconds, "seed \(seed): TCX points")

            let base = samplesDirectory + "/ride-\(seed)"
            try Data(fit).write(to: URL(fileURLWithPath: base + ".fit"))
            try gpx.write(toFile: base + ".gpx", atomically: true, encoding: .utf8)
            try tcx.write(toFile: base + ".tcx", atomically: true, encoding: .utf8)
            var expected = totals
            expected["seed"] = seed
            if case .header(let h) = sim.records[0] { expected["ride_id"] = h.rideID.description }
            expected["records"] = sim.runningSeconds
            expected["position_points"] = sim.positionSeconds
            expected["rr_count"] = sim.rrCount
            expected["pauses"] = sim.pauses
            expected["auto_pauses"] = sim.autoPauses
            expected["gaps"] = sim.gaps
            expected["lap_count"] = sim.laps
            expected["outdoor"] = sim.outdoor
            expected["devices"] = 3 // the unit and two valid sensors
            expected["timer_events"] = 2 + 2 * sim.pauses + 2 * sim.gaps
            try writeJSON(expected, to: base + ".json")
            index.append(["name": "ride-\(seed)", "seed": seed])
        }
        try writeJSON(["rides": index], to: samplesDirectory + "/index.json")
    }

    @Test func recoveredRideWithoutStopIsStillAValidFile() throws {
        var sim = SimulatedRide(seed: 99, seconds: 200)
        // cut the ride as a crash would: drop the stop and finish
        sim.records.removeLast(2)
        sim.records.append(.event(RideEvent(.gap, at: MonotonicInstant(milliseconds: 5_000 + 400_000), value: 30_000)))
        let fit = try FITEncoder.encode(records: sim.records)
        let file = try FITFile(bytes: fit)
        #expect(file.messages.last?.global == 34)
        #expect(FITActivity(file).sessions.count == 1)
    }

    @Test func untrustedClockFrom1970StillGivesAscendingTimes() throws {
        var sim = SimulatedRide(seed: 11, seconds: 120)
        guard case .header(var h) = sim.records[0] else { Issue.record("no header"); return }
        h.anchor = WallClockAnchor(monotonic: .zero, wall: WallClockTime(unixMs: 12_000, trusted: false))
        sim.records[0] = .header(h)
        let a = FITActivity(try FITFile(bytes: try FITEncoder.encode(records: sim.records)))
        let ts = a.records.map(\.timestamp)
        #expect(ts.count == sim.runningSeconds)
        #expect(ts.first.map { $0 < 0x1000_0000 } == true, "relative system time")
        #expect(zip(ts, ts.dropFirst()).allSatisfy { $0 < $1 })
    }

    @Test func tenHourRideEncodesQuickly() throws {
        let sim = SimulatedRide(seed: 7, seconds: 10 * 3600)
        let clock = ContinuousClock()
        var bytes: [UInt8] = []
        let elapsed = try clock.measure { bytes = try FITEncoder.encode(records: sim.records) }
        print("10-hour ride: \(sim.records.count) records → \(bytes.count) FIT bytes in \(elapsed)")
        #expect(try FITFile(bytes: bytes).messages(20).count == sim.runningSeconds)
        #expect(elapsed < .seconds(20), "10 h ride took \(elapsed)")
    }
}

struct FITReaderRobustnessTests {
    @Test func damagedFilesGiveTypedErrorsNeverCrash() throws {
        let fit = try FITEncoder.encode(records: SimulatedRide(seed: 3, seconds: 120).records)
        var rng = SeededRandom(seed: 0xF17)
        for trial in 0..<800 {
            var b = fit
            switch trial % 4 {
            case 0: b.removeLast(rng.int(1...(b.count - 1)))
            case 1: let i = rng.int(0...(b.count - 1)); b[i] ^= UInt8(rng.int(1...255))
            case 2: b = (0..<rng.int(0...64)).map { _ in UInt8(rng.int(0...255)) }
            default:
                // damage inside the data, then fix the CRC so the parser goes deep; whatever it
                // reads must go through the replay and re-encoding without a crash
                for _ in 0..<rng.int(1...8) { let i = rng.int(14...(b.count - 3)); b[i] = UInt8(rng.int(0...255)) }
                b.removeLast(2)
                let crc = FITCRC.compute(b)
                b += [UInt8(crc & 0xFF), UInt8(crc >> 8)]
                if let f = try? FITFile(bytes: b) {
                    let recs = FITActivity(f).rideRecords(rideID: RideID(high: 1, low: UInt64(trial)))
                    if let e = try? RideExport(records: recs) { _ = FITEncoder.encode(e); _ = GPXEncoder.encode(e); _ = TCXEncoder.encode(e) }
                }
                continue
            }
            do { _ = try FITFile(bytes: b) } catch {
                continue // typed RideFileError; any other outcome would not compile
            }
            // a flipped byte that still decodes must have been in the header CRC only
            #expect(trial % 4 == 1, "trial \(trial) decoded a damaged file")
        }
    }
}

struct FixtureReaderTests {
    /// Reads the real rides with the project's reader and writes what it saw for the
    /// differential check against fitdecode (Tests/oracle/test_ridefiles.py).
    @Test func fixtureRidesAreReadAndSummarized() throws {
        let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../../shared/fixtures/rides").standardized
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: dir.path).filter({ $0.hasSuffix(".fit") }).sorted(), !names.isEmpty else {
            Issue.record("fixture rides not found at \(dir.path)")
            return
        }
        try FileManager.default.createDirectory(atPath: samplesDirectory + "/fixtures", withIntermediateDirectories: true)
        for name in names {
            let bytes = [UInt8](try Data(contentsOf: dir.appendingPathComponent(name)))
            let file = try FITFile(bytes: bytes)
            let a = FITActivity(file)
            #expect(!a.records.isEmpty, "\(name) has records")
            func opt(_ v: Double?) -> Any { v ?? NSNull() }
            let out: [String: Any] = [
                "records": a.records.map { ["timestamp": $0.timestamp, "heart_rate": opt($0.heartRate), "power": opt($0.power),
                                            "cadence": opt($0.cadence), "speed": opt($0.speedMps), "distance": opt($0.distanceM)] as [String: Any] },
                "events": a.events.map { ["timestamp": $0.timestamp, "event": $0.event, "event_type": $0.eventType] as [String: Any] },
                "laps": a.laps.map { ["timer": opt($0.timerS), "distance": opt($0.distanceM), "avg_hr": opt($0.avgHeartRate)] as [String: Any] },
                "sessions": a.sessions.map { ["timer": opt($0.timerS), "elapsed": opt($0.elapsedS), "distance": opt($0.distanceM),
                                              "avg_hr": opt($0.avgHeartRate), "max_hr": opt($0.maxHeartRate), "avg_power": opt($0.avgPowerW)] as [String: Any] },
            ]
            try writeJSON(out, to: samplesDirectory + "/fixtures/" + name + ".json")
        }
    }

    /// Replays each fixture ride through the exporter (as the simulator will) and checks the
    /// app's totals against the recording device's own session; writes the re-encoded ride for
    /// the oracles.
    @Test func fixtureRidesReplayIntoValidFilesWithTheDevicesTotals() throws {
        let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../../shared/fixtures/rides").standardized
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".fit") }.sorted()) ?? []
        #expect(names.count == 3, "fixture rides at \(dir.path)")
        try FileManager.default.createDirectory(atPath: samplesDirectory, withIntermediateDirectories: true)
        var index: [[String: Any]] = []
        for (i, name) in names.enumerated() {
            let a = FITActivity(try FITFile(bytes: [UInt8](try Data(contentsOf: dir.appendingPathComponent(name)))))
            let records = a.rideRecords(rideID: RideID(random: UInt64(i + 1), 42))
            let export = try RideExport(records: records)
            let device = try #require(a.sessions.first)
            let timerS = Double(export.builder.ride.timerTimeMs) / 1000
            print("\(name): app timer \(timerS) s vs device \(device.timerS ?? -1) s; laps \(export.builder.laps.count) vs \(a.laps.count); distance \(export.builder.ride.distanceM) vs \(device.distanceM ?? -1)")
            // Whole-second timer events against the unit's sub-second timer (docs/simulator.md).
            #expect(abs(timerS - (device.timerS ?? 0)) <= 1.2, "\(name): timer time")
            #expect(export.builder.laps.count == a.laps.count, "\(name): laps")
            // The activity's distance from 0 at the timer start, the increments across every
            // resume included: the unit's own figure (it was 136 m short on the Edge 500).
            if let d = device.distanceM { #expect(abs(export.builder.ride.distanceM - d) <= 0.011, "\(name): distance") }
            if let hr = device.maxHeartRate { #expect(export.builder.ride[.heartRate].max == hr, "\(name): max HR") }
            let base = samplesDirectory + "/replayed-\(i)"
            try Data(FITEncoder.encode(export)).write(to: URL(fileURLWithPath: base + ".fit"))
            try GPXEncoder.encode(export).write(toFile: base + ".gpx", atomically: true, encoding: .utf8)
            try TCXEncoder.encode(export).write(toFile: base + ".tcx", atomically: true, encoding: .utf8)
            var expected = appTotals(records)
            var pauses = 0, autoPauses = 0, resumes = 0, running = false, stoppedRunning = false
            for r in records {
                guard case .event(let e) = r else { continue }
                switch e.kind {
                case .start: running = true
                case .pause: pauses += 1; running = false; if e.trigger == .auto { autoPauses += 1 }
                case .resume: resumes += 1; running = true
                case .stop: stoppedRunning = running
                default: break
                }
            }
            expected["timer_events"] = 1 + pauses + resumes + (stoppedRunning ? 1 : 0)
            expected["fixture"] = name
            expected["ride_id"] = export.header.rideID.description
            expected["records"] = export.rowCount
            expected["position_points"] = (0..<export.rowCount).filter { export.value($0, .latitude) != nil && export.value($0, .longitude) != nil }.count
            expected["rr_count"] = 0
            expected["pauses"] = pauses
            expected["auto_pauses"] = autoPauses
            expected["gaps"] = 0
            expected["lap_count"] = a.laps.count
            expected["outdoor"] = export.present[Quantity.latitude.index]
            expected["devices"] = 1
            try writeJSON(expected, to: base + ".json")
            index.append(["name": "replayed-\(i)"])
        }
        try writeJSON(["rides": index], to: samplesDirectory + "/replayed-index.json")
    }
}

struct FITReaderLayoutTests {
    /// A hand-built file: 12-byte header, a big-endian definition with a developer field, then
    /// compressed-timestamp records (one rolling over the 32-second window).
    static func handBuilt() -> [UInt8] {
        var d: [UInt8] = []
        // developer_data_id (207) index 0 and a field_description (206) of its field 0 (uint16)
        d += [0x42, 0, 0, 207, 0, 1, 3, 1, 0x02, 0x02, 0]
        d += [0x43, 0, 0, 206, 0, 4, 0, 1, 0x02, 1, 1, 0x02, 2, 1, 0x02, 3, 8, 0x07]
        d += [0x03, 0, 0, 0x84] + Array("torque\0\0".utf8)
        // local 0: record, big-endian, 253 u32, 3 u8, 7 u16; 1 developer field of 2 bytes
        d += [0x60, 0, 1, 0, 20, 3, 253, 4, 0x86, 3, 1, 0x02, 7, 2, 0x84, 1, 0, 2, 0]
        d += [0x00, 0x3B, 0x9A, 0xCA, 0x00, 120, 0x00, 0xFA, 0xAB, 0xCD]   // ts 1e9, hr 120, power 250, dev bytes
        // local 1: record, little-endian, 3 u8, 7 u16 (no timestamp: it comes from the header)
        d += [0x41, 0, 0, 20, 0, 2, 3, 1, 0x02, 7, 2, 0x84]
        d += [0x80 | 0x20 | 3, 121, 0xFB, 0x00]                         // +3 s
        d += [0x80 | 0x20 | 1, 122, 0xFC, 0x00]                         // offset 1 < 3: rolls over, +30 s
        var b: [UInt8] = [12, 0x10, 0x08, 0x08]
        let n = UInt32(d.count)
        b += [UInt8(n & 0xFF), UInt8((n >> 8) & 0xFF), UInt8((n >> 16) & 0xFF), UInt8(n >> 24)]
        b += Array(".FIT".utf8) + d
        let crc = FITCRC.compute(b)
        return b + [UInt8(crc & 0xFF), UInt8(crc >> 8)]
    }

    @Test func bigEndianDeveloperFieldsAndCompressedTimestamps() throws {
        let bytes = Self.handBuilt()
        let file = try FITFile(bytes: bytes)
        #expect(file.headerCRCMatched == nil)
        let a = FITActivity(file)
        #expect(a.records.map(\.timestamp) == [1_000_000_000, 1_000_000_003, 1_000_000_033])
        #expect(a.records.map(\.heartRate) == [120, 121, 122])
        #expect(a.records.map(\.power) == [250, 251, 252])
        try FileManager.default.createDirectory(atPath: samplesDirectory + "/fixtures", withIntermediateDirectories: true)
        try Data(bytes).write(to: URL(fileURLWithPath: samplesDirectory + "/fixtures/hand-built.fit"))
        try writeJSON(["timestamps": a.records.map(\.timestamp), "heart_rate": a.records.map { $0.heartRate ?? -1 },
                       "power": a.records.map { $0.power ?? -1 }], to: samplesDirectory + "/fixtures/hand-built.json")
    }
}
