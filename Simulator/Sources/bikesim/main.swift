import ArgumentParser
import Device

/// The desktop simulator: runs the same app code as the board with simulated adapters.
struct BikeSim: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bikesim",
        abstract: "Bike computer simulator: a demo ride in the terminal, or headless for tests.",
        subcommands: [ScreensCommand.self])

    @Option(help: "Seed for ride ids and synthetic sensors.")
    var seed: UInt64 = 1

    func run() throws {
        for step in ScriptedRide.run(seed: seed) {
            print("\(TextScreen.clock(step.instant.milliseconds))  \(step.screen)")
        }
    }
}

BikeSim.main()
