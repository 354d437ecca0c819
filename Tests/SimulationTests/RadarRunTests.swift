import Testing
import AppCore
import Device
import RideModel
@testable import Simulation

/// End to end in the simulator (issue 29): cars overtaking behind a simulated ANT+ radar reach the
/// app through the same decoder, data source, beeps and column as on the unit.
struct RadarRunTests {
    static func scenarioFile() -> String {
        let dir = #filePath.split(separator: "/").dropLast(3).joined(separator: "/")
        return fopenText("/" + dir + "/Simulator/scenarios/radar.scenario") ?? ""
    }

    @Test func everyOvertakingGivesOneAlertAndNoneWhileTheRadarIsOff() throws {
        let scenario = try Scenario.parse(Self.scenarioFile())
        #expect(scenario.sensors.contains(.radar))
        let sim = HeadlessRun(scenario: scenario, options: .init(), storage: SimulatedFlashStorage(), archive: MemoryArchive())
        var lostThroughout = true, lostSeen = false, vehiclesSeen = false, backSeen = false
        sim.run { ms in
            let screen = sim.runtime.core.screen
            if ms >= 2 * 60_000 + 21_000 && ms < 2 * 60_000 + 26_000 && !screen.radar.isClear { vehiclesSeen = true }
            // Off from 5:00 to 6:00 (the shutdown page loses it at once); a car passes at 5:20.
            if ms > 5 * 60_000 + 500 && ms < 6 * 60_000 {
                lostSeen = true
                if screen.sensor(.radar) != .lost || !screen.radar.isClear { lostThroughout = false }
            }
            if ms > 6 * 60_000 + 5_000 && screen.sensor(.radar) == .connected { backSeen = true }
        }
        #expect(vehiclesSeen, "the cars at 2:20 are on the column")
        #expect(lostSeen && lostThroughout, "switched off, the radar is lost and no road is drawn")
        #expect(backSeen, "switched on again, it is connected")
        let traffic = sim.sensors.traffic
        #expect(traffic.carsSent == 7)
        #expect(traffic.carsPassed == 7, "every car overtook the rider")
        let stats = try #require(sim.runtime.core.screen.summary?.radar)
        #expect(stats.vehicles == 6, "the car that passed while the radar was off is not counted")
        #expect(stats.alerts == 6, "one beep per car, none while off")
        #expect(stats.maxThreat == .fastApproach)
        let json = try #require(sim.summaryJSON)
        #expect(json.contains("\"radar\": {"), "\(json)")
        #expect(HeadlessRunTests.number(json, "vehicles") == 6)
        #expect(HeadlessRunTests.number(json, "alerts") == 6)
        #expect(json.contains("\"max_threat\": \"fast_approach\""))
    }

    @Test func aPlatoonGetsOneBeepAndEveryVehicleIsCounted() throws {
        let text = """
        seed 2
        duration 4m
        sensors hr power speed cadence radar
        at 1s command start
        at 1m car 70kmh
        at 1m1s car 72kmh
        at 1m2s car 75kmh
        at 3m command end
        """
        let (sim, _, _) = try HeadlessRunTests.run(text)
        let json = try #require(sim.summaryJSON)
        #expect(HeadlessRunTests.number(json, "vehicles") == 3)
        #expect(HeadlessRunTests.number(json, "alerts") == 1, "no beep storm: one beep for the platoon")
        #expect(sim.sensors.traffic.carsPassed == 3)
    }

    @Test func noRadarNoRadarInTheSummary() throws {
        let (sim, _, _) = try HeadlessRunTests.run("duration 2m\nat 1s command start\nat 1m command end")
        let json = try #require(sim.summaryJSON)
        #expect(!json.contains("\"radar\""))
    }

    @Test func scenarioParsesCarsAndRadarOff() throws {
        let s = try Scenario.parse("sensors hr radar\nat 1m car 70kmh\nat 2m car 36\nat 3m radar-off 1m30s")
        #expect(s.steps.map(\.action) == [.car(speedMps: 70 / 3.6), .car(speedMps: 10), .radarOff(ms: 90_000)])
    }
}
