import Testing
import AppCore
import Training
@testable import Simulation

struct ScenarioTests {
    @Test func parsesEveryInstruction() throws {
        let text = """
        # a ride with everything
        seed 7
        duration 1h
        sensors hr power
        at 0s press start
        at 10m hold start 2s      # long press
        at 90s command lap
        at 2m marker water 250
        at 5m dropout hr 30s
        at 6m bridge-restart 5s
        at 7m crash
        at 8m power-cut
        at 9m disk-full 1m30s
        at 9m screenshot climb-1
        """
        let s = try Scenario.parse(text)
        #expect(s.seed == 7)
        #expect(s.durationMs == 3_600_000)
        #expect(s.sensors == [.hr, .power])
        #expect(s.steps.map(\.atMs) == [0, 90_000, 120_000, 300_000, 360_000, 420_000, 480_000, 540_000, 540_000, 600_000])
        #expect(s.steps.first?.action == .press(.startPause))
        #expect(s.steps.last?.action == .hold(.startPause, ms: 2_000))
        #expect(s.steps.contains { $0.action == .command(.marker(.water, value: 250)) })
        #expect(s.steps.contains { $0.action == .diskFull(ms: 90_000) })
        #expect(s.steps[7].action == .diskFull(ms: 90_000), "equal times keep file order")
        #expect(s.steps[8].action == .screenshot("climb-1"))
    }

    @Test(arguments: [
        ("at 5 press start", 1, "not a duration"),
        ("seed x", 1, "seed takes one whole number"),
        ("\n\nat 1s press brake", 3, "press takes a button"),
        ("at 1s command fly", 1, "unknown command"),
        ("duration 1m\nat 2m crash", 2, "after the end"),
        ("jump 1s", 1, "unknown instruction"),
        ("sensors hr lidar", 1, "unknown sensor"),
        ("at 1m car 70kmh", 1, "car needs a radar"),
        ("sensors radar\nat 1m car fast", 2, "not a car's speed"),
    ])
    func errorsNameTheLine(text: String, line: Int, message: String) {
        do {
            _ = try Scenario.parse(text)
            Issue.record("'\(text)' should not parse")
        } catch {
            #expect(error.line == line)
            #expect(error.description.contains(message), "\(error)")
        }
    }

    @Test func durations() {
        #expect(Scenario.parseDuration("1h2m3s") == 3_723_000)
        #expect(Scenario.parseDuration("1500ms") == 1_500)
        #expect(Scenario.parseDuration("90s") == 90_000)
        #expect(Scenario.parseDuration("") == nil)
        #expect(Scenario.parseDuration("12") == nil)
        #expect(Scenario.parseDuration("m") == nil)
        #expect(Scenario.parseDuration("3x") == nil)
    }

    @Test func shippedScenariosParse() throws {
        // Every scenario in Simulator/scenarios must parse.
        let dir = String(#filePath).split(separator: "/").dropLast(3).joined(separator: "/")
        let scenarios = try listScenarios("/" + dir + "/Simulator/scenarios")
        for path in scenarios {
            let text = try readFile(path)
            #expect(throws: Never.self, "\(path)") { _ = try Scenario.parse(text) }
        }
    }
}

import Foundation
func listScenarios(_ dir: String) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".scenario") }.sorted().map { dir + "/" + $0 }
}
func readFile(_ path: String) throws -> String { try String(contentsOfFile: path, encoding: .utf8) }

struct ScenarioControlCommandTests {
    /// A scenario's `command` takes any control-socket request that acts on the ride.
    @Test func commandsAreControlRequests() throws {
        let s = try Scenario.parse("""
        duration 10m
        at 1s command start
        at 2m command target hr 3
        at 3m command autolap 5km
        at 4m command marker food 200
        """)
        #expect(s.steps.map(\.action) == [
            .command(.start), .command(.setTargetZoneNumber(.heartRate, 3)),
            .command(.setAutoLap(AutoLapSettings(everyDistanceM: 5_000))), .command(.marker(.food, value: 200)),
        ])
        #expect(throws: Scenario.ParseError.self) { try Scenario.parse("at 1s command status") }
    }

    /// A heart-rate target set from a scenario alerts when the rider drifts out of it.
    @Test func targetZoneFromAScenarioAlerts() throws {
        let text = """
        seed 4
        duration 20m
        at 1s command target hr 1
        at 2s command start
        at 19m command end
        """
        let sim = HeadlessRun(scenario: try Scenario.parse(text), options: .init(), storage: SimulatedFlashStorage(), archive: MemoryArchive())
        var drift = false
        sim.run { _ in if case .zoneDrift(.heartRate, _)? = sim.runtime.core.screen.overlay { drift = true } }
        #expect(drift, "the synthetic ride's heart rate leaves Z1 within minutes")
    }
}
