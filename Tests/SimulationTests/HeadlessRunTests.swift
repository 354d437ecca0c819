import Testing
import AppCore
import Device
import Journal
import RideModel
@testable import Simulation

struct HeadlessRunTests {
    static func run(_ text: String, seed: UInt64 = 1) throws -> (HeadlessRun, SimulatedFlashStorage, MemoryArchive) {
        let storage = SimulatedFlashStorage()
        let archive = MemoryArchive()
        let sim = HeadlessRun(scenario: try Scenario.parse(text), options: .init(seed: seed), storage: storage, archive: archive)
        sim.run()
        return (sim, storage, archive)
    }

    static func number(_ json: String, _ key: String) -> Double? {
        guard let r = json.range(of: "\"\(key)\": ") else { return nil }
        let rest = json[r.upperBound...].prefix { $0 != "," && $0 != "\n" }
        return Double(rest)
    }

    @Test func builtInDemoMatchesTheShippedScenarioFile() throws {
        let url = #filePath.split(separator: "/").dropLast(3).joined(separator: "/")
        let path = "/" + url + "/Simulator/scenarios/demo.scenario"
        var file = ""
        if let f = fopenText(path) { file = f }
        #expect(file == BuiltinScenarios.demo, "Simulator/scenarios/demo.scenario and BuiltinScenarios.demo differ")
    }

    @Test func sameScenarioAndSeedGiveTheSameSummary() throws {
        let a = try Self.run(BuiltinScenarios.demo).0.summaryJSON
        let b = try Self.run(BuiltinScenarios.demo).0.summaryJSON
        #expect(a != nil)
        #expect(a == b)
        let c = try Self.run(BuiltinScenarios.demo.replacingSeed(with: 2)).0.summaryJSON
        #expect(a != c, "another seed must give another ride")
    }

    @Test func demoRideEndsSavedWithItsLapsAndTimes() throws {
        let (sim, storage, archive) = try Self.run(BuiltinScenarios.demo)
        let json = try #require(sim.summaryJSON)
        #expect(sim.runtime.core.state == .ended || sim.runtime.core.state == .idle)
        #expect(archive.rides.count == 1, "the saved ride reaches the archive")
        let inspection = JournalInspection(storage: storage.flash)
        #expect(inspection.rides.allSatisfy { $0.fileDurable }, "the saved ride's file is marked durable in the journal")
        #expect(storage.flash.syncCount > 0 && storage.flash.syncCount < 3_500 + 100, "group commit: about one sync per second at most")
        // Started at 5 s + 3 s countdown; paused 46:30–47:30 and from 55:50; ended at 56:01.5.
        let timer = try #require(Self.number(json, "timer_time_s"))
        #expect(abs(timer - (3350 - 8 - 60)) < 1.0, "timer \(timer)")
        #expect(json.contains("\"recovered\": false"))
        #expect(json.components(separatedBy: "\"index\"").count - 1 == 2, "two laps")
    }

    @Test(arguments: ["crash", "power-cut"])
    func aCrashMidRideIsRecoveredLosingAtMostTheOutage(fault: String) throws {
        let text = """
        seed 5
        duration 12m
        at 2s press start
        at 3m press lap
        at 6m \(fault)
        at 11m press start
        at 11m10s hold start 2s
        """
        let (sim, _, archive) = try Self.run(text)
        let json = try #require(sim.summaryJSON)
        #expect(sim.counters.recoveries == 1)
        #expect(json.contains("\"recovered\": true"))
        #expect(archive.rides.count == 1)
        let outage = fault == "crash" ? sim.options.crashRestartMs : sim.options.powerCutRebootMs
        let lost = try #require(Self.number(json, "samples_lost_s"))
        // The gap is the outage plus at most one second of unsynced samples.
        #expect(lost >= Double(outage) / 1000 && lost <= Double(outage) / 1000 + 1.0, "lost \(lost) s")
        let timer = try #require(Self.number(json, "timer_time_s"))
        let elapsed = try #require(Self.number(json, "elapsed_time_s"))
        // Running from 5 s to 11:00; the time the device was down (the gap: the outage plus the
        // unsynced second) is elapsed time, never timer time.
        #expect(abs(timer - (660 - 5 - lost)) < 1.5, "timer \(timer), lost \(lost)")
        // Elapsed = timer + the gap + the pause before the end (11:00 to the long press, 11.5 s).
        #expect(abs(elapsed - timer - lost - 11.5) < 1.5, "elapsed \(elapsed) = timer \(timer) + the gap \(lost) + 11.5 s paused")
        #expect(json.components(separatedBy: "\"index\"").count - 1 == 2, "the lap before the crash survives")
    }

    @Test func sensorDropoutShowsLostAndComesBack() throws {
        let text = """
        seed 3
        duration 3m
        at 1s command start
        at 1m dropout hr 30s
        at 2m50s command end
        """
        let sim = HeadlessRun(scenario: try Scenario.parse(text), options: .init(), storage: SimulatedFlashStorage(), archive: MemoryArchive())
        var lostSeen = false, backSeen = false
        sim.run { ms in
            if ms > 66_000 && ms < 90_000 && sim.runtime.core.screen.sensor(.heartRate) == .lost { lostSeen = true }
            if ms > 95_000 && sim.runtime.core.screen.sensor(.heartRate) == .connected { backSeen = true }
        }
        #expect(lostSeen)
        #expect(backSeen)
    }

    @Test func tenHourRideRunsToTheEnd() throws {
        let (sim, _, archive) = try Self.run(BuiltinScenarios.long(hours: 10))
        let json = try #require(sim.summaryJSON)
        let timer = try #require(Self.number(json, "timer_time_s"))
        #expect(abs(timer - (36_000 - 8)) < 1.0)
        #expect(archive.rides.count == 1)
        #expect(sim.runtime.core.effectsDropped == 0)
    }
}

extension String {
    func replacingSeed(with seed: Int) -> String {
        split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.hasPrefix("seed ") ? "seed \(seed)" : String($0) }
            .joined(separator: "\n")
    }
}

import Glibc
func fopenText(_ path: String) -> String? {
    guard let f = fopen(path, "r") else { return nil }
    defer { fclose(f) }
    var bytes: [UInt8] = []
    var buf = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = fread(&buf, 1, buf.count, f)
        if n <= 0 { break }
        bytes += buf[0..<n]
    }
    return String(decoding: bytes, as: UTF8.self)
}

struct ShippedScenarioTests {
    /// The ten-hour scenario file is the one `BuiltinScenarios.long(hours: 10)` describes.
    @Test func tenHourScenarioFileMatchesTheGenerator() throws {
        let url = #filePath.split(separator: "/").dropLast(3).joined(separator: "/")
        let file = fopenText("/" + url + "/Simulator/scenarios/ten-hours.scenario") ?? ""
        let a = try Scenario.parse(file), b = try Scenario.parse(BuiltinScenarios.long(hours: 10))
        #expect(a.steps == b.steps && a.durationMs == b.durationMs && a.seed == b.seed)
    }
}
