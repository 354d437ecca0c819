import Testing
import AppCore
import Journal
import RideModel
@testable import Simulation

/// The interactive simulator gives the rider the buttons at their first button key
/// (`HeadlessRun.scriptedButtons`): the scenario's own presses stop, its other steps go on. Seen:
/// the demo's scripted start at 5 s paused a ride the rider had started a moment before, as the
/// first screen tells them to (`press s to start the ride`): a newcomer's ride paused at 0:00.
struct ScriptedButtonsTests {
    /// The demo's opening: the scenario presses start at 5 s and again (a pause) at 20 s, and
    /// crashes the unit at 40 s.
    static let text = """
    duration 1m
    at 5s press start
    at 20s press start
    at 40s crash
    """

    /// Runs to `untilMs`, the rider pressing start at `riderPressMs` (nil: never) and taking the
    /// buttons when `riderTakes`.
    static func run(riderPressMs: Int64?, riderTakes: Bool, untilMs: Int64) throws -> HeadlessRun {
        let sim = HeadlessRun(scenario: try Scenario.parse(text), options: .init(), storage: SimulatedFlashStorage(), archive: MemoryArchive())
        var pressed = false
        while let next = sim.nextEventTime(), next <= untilMs {
            if let at = riderPressMs, !pressed, next >= at {
                sim.advance(to: at)
                if riderTakes { sim.scriptedButtons = false }
                sim.inject(.press(.startPause))
                pressed = true
                continue
            }
            sim.advance(to: next)
        }
        sim.advance(to: untilMs)
        return sim
    }

    @Test func theScenariosPressesDriveTheRideUntilTheRiderTakesTheButtons() throws {
        // Nobody at the keys: the scenario starts the ride and pauses it.
        #expect(try Self.run(riderPressMs: nil, riderTakes: false, untilMs: 12_000).runtime.core.state == .running)
        #expect(try Self.run(riderPressMs: nil, riderTakes: false, untilMs: 25_000).runtime.core.state == .paused)
        // The rider starts at 2 s and has the buttons: the scenario's 5 s and 20 s presses are
        // not made, the ride runs on.
        let taken = try Self.run(riderPressMs: 2_000, riderTakes: true, untilMs: 25_000)
        #expect(taken.runtime.core.state == .running)
        #expect(taken.runtime.core.screen.timerMs > 15_000, "started by the rider's press, not the scenario's")
        // The same press without taking the buttons: the scenario's presses still land on it
        // (what the demo did before), so the ride is not simply running through 25 s.
        let shared = try Self.run(riderPressMs: 2_000, riderTakes: false, untilMs: 25_000)
        #expect(shared.runtime.core.state != .running || shared.runtime.core.screen.timerMs < taken.runtime.core.screen.timerMs)
    }

    @Test func theScenariosOtherStepsGoOnWhenTheRiderHasTheButtons() throws {
        let sim = try Self.run(riderPressMs: 2_000, riderTakes: true, untilMs: 50_000)
        #expect(sim.counters.crashes == 1, "the crash at 40 s is not a button: it still happens")
    }
}
