/// Scenarios built into the simulator, so `bikesim` needs no file. Simulator/scenarios/demo.scenario
/// holds the same text (a test keeps them equal).
public enum BuiltinScenarios {
    public static let demo = """
    # The demo ride: start, ride the built-in workout, a lap, a pause at the junction, end.
    seed 1
    duration 57m
    at 5s press start
    at 20m press lap
    at 46m30s press start          # pause at the junction
    at 47m30s press start          # resume
    at 55m50s press start          # pause before ending
    at 56m hold start 2s           # long press while paused ends and saves
    at 56m40s press lap            # dismiss the summary

    """

    /// A ride of `hours` with a lap every 30 minutes, ending with a long press.
    public static func long(hours: Int) -> String {
        var lines = ["# A long synthetic ride.", "seed 10", "duration \(hours)h2m", "at 5s press start"]
        var m = 30
        while m < hours * 60 {
            lines.append("at \(m)m press lap")
            m += 30
        }
        lines.append("at \(hours)h press start")
        lines.append("at \(hours)h1m hold start 2s")
        return lines.joined(separator: "\n") + "\n"
    }
}
