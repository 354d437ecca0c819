import ArgumentParser
import Device
import RideModel

/// The device executable: `bikecomputer run` (the default) on the board, plus maintenance
/// subcommands.
struct BikeComputer: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bikecomputer",
        abstract: "An open-source bike computer for Linux single-board computers.",
        version: ProjectVersion.text("bikecomputer"),
        subcommands: [Run.self, Ctl.self, ConfigCommand.self, Decode.self, JournalCommand.self, ZonesCommand.self, SensorsCommand.self, Rides.self, UsbImage.self, CompanionCommand.self,
                      GpsCommand.self, BarometerCommand.self, BatteryCommand.self, Courses.self],
        defaultSubcommand: Run.self)
}

BikeComputer.main()
