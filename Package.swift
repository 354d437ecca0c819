// swift-tools-version: 6.1
//
// The bike computer. Pure parts (no Linux calls, no Foundation, no wall clock) are
// RideModel, Training, Sensors, Display, Journal, RideFiles, AppCore, Screens and Device.
// The board layer (BoardIO, BoardHardware and the C shims) knows nothing about rides.
// `bikecomputer` runs on the board; `bikesim` (sources under Simulator/) runs the same
// Device code with simulated adapters.
import PackageDescription

let swift6: [SwiftSetting] = [.swiftLanguageMode(.v6)]

let package = Package(
    name: "BikeComputer",
    products: [
        .executable(name: "bikecomputer", targets: ["bikecomputer"]),
        .executable(name: "bikesim", targets: ["bikesim"]),
        .executable(name: "bikecompanion", targets: ["bikecompanion"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        // Only the companion process (bikecompanion) links the web stack. Hummingbird without its
        // ConfigurationSupport trait: swift-configuration has a target named Configuration too.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.0.0", traits: ["FullFoundation"]),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.0.0"),
        .package(url: "https://github.com/apple/swift-crypto", "3.0.0"..<"5.0.0"),
        // Only so its module can be aliased (see CompanionTests): hummingbird's graph has it.
        .package(url: "https://github.com/apple/swift-configuration", from: "1.0.0", traits: []),
    ],
    targets: [
        // MARK: Pure logic
        .target(name: "RideModel", dependencies: ["CBuildInfo"], swiftSettings: swift6),
        // The git commit a release build passes in (-Xcc -DBIKECOMPUTER_GIT_COMMIT=...): scripts/build-release.sh.
        .target(name: "CBuildInfo", path: "Sources/CBuildInfo"),
        .target(name: "Training", dependencies: ["RideModel"], swiftSettings: swift6),
        .target(name: "Sensors", dependencies: ["RideModel"], swiftSettings: swift6),
        .target(name: "Display", swiftSettings: swift6),
        .target(name: "Journal", dependencies: ["RideModel"], swiftSettings: swift6),
        .target(name: "RideFiles", dependencies: ["RideModel"], swiftSettings: swift6),
        .target(name: "AppCore", dependencies: ["RideModel", "Training", "Sensors", "Journal"], swiftSettings: swift6),
        .target(name: "Screens", dependencies: ["AppCore", "Display", "RideModel"], swiftSettings: swift6),
        .target(name: "Configuration", dependencies: ["RideModel", "Training"], swiftSettings: swift6),
        .target(name: "Device", dependencies: ["AppCore", "Screens", "Display", "Journal", "RideFiles", "Sensors", "Training", "Configuration"], swiftSettings: swift6),

        // MARK: Board layer (Linux)
        .target(name: "CBoardShims", path: "Sources/CBoardShims"),
        .target(name: "BoardIO", dependencies: ["CBoardShims"], swiftSettings: swift6),
        // libgpiod (v1 or v2 API, whichever gpiod.h is installed) and libi2c behind small C shims.
        .target(name: "CGpiodShim", path: "Sources/CGpiodShim", linkerSettings: [.linkedLibrary("gpiod")]),
        .target(name: "CI2CShim", path: "Sources/CI2CShim", linkerSettings: [.linkedLibrary("i2c")]),
        .target(name: "BoardHardware", dependencies: ["BoardIO", "Display", "CGpiodShim", "CI2CShim"], swiftSettings: swift6),

        // Board-side adapters of the Device ports (ride files, journal storage on a directory),
        // shared by both executables.
        .target(name: "DeviceAdapters", dependencies: ["Device", "BoardIO", "Journal", "AppCore", "RideModel"], swiftSettings: swift6),

        // The simulator's library: synthetic rides, scenarios, simulated adapters, headless runner.
        .target(name: "Simulation", dependencies: ["Device", "BoardIO", "Sensors", "RideFiles", "Screens", "Display", "AppCore", "RideModel"], path: "Simulator/Sources/Simulation", swiftSettings: swift6),

        // MARK: Executables
        .executableTarget(
            name: "bikecomputer",
            dependencies: [
                "Device", "DeviceAdapters", "BoardIO", "BoardHardware", "AppCore", "RideModel", "Training", "Configuration",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swift6),
        // The simulator never links the hardware libraries: `swift run bikesim` needs no apt package.
        .executableTarget(
            name: "bikesim",
            dependencies: [
                "Simulation", "Device", "DeviceAdapters", "BoardIO", "RideFiles", "Journal",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Simulator/Sources/bikesim",
            swiftSettings: swift6),

        // The companion web server (docs/companion.md): a separate process that follows the
        // control socket's stream and serves a paired phone over HTTP + WebSocket.
        .executableTarget(
            name: "bikecompanion",
            dependencies: [
                "Device", "Configuration", "BoardIO",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swift6),

        // Measures the flash journal (docs/journal.md): `swift run -c release journal-bench`.
        .executableTarget(name: "journal-bench", dependencies: ["Device", "DeviceAdapters", "Journal", "AppCore", "RideModel", "BoardIO"], swiftSettings: swift6),
        // Benchmarks and their malloc counter (docs/performance.md): `swift run -c release bikebench`.
        .target(name: "CMallocCounter", path: "Benchmarks/CMallocCounter"),
        .executableTarget(name: "bikebench", dependencies: ["CMallocCounter", "Simulation", "Device", "Sensors", "Screens", "Display", "Journal", "RideFiles", "AppCore", "RideModel"], path: "Benchmarks/bikebench", swiftSettings: swift6),

        // MARK: Tests
        // What every test target shares (the seeded generator of the randomized tests).
        .target(name: "TestSupport", dependencies: ["RideModel"], path: "Tests/TestSupport", swiftSettings: swift6),
        .testTarget(name: "RideModelTests", dependencies: ["TestSupport", "RideModel"], swiftSettings: swift6),
        .testTarget(name: "AppCoreTests", dependencies: ["TestSupport", "AppCore", "RideModel", "Device", "Training"], swiftSettings: swift6),
        .testTarget(name: "TrainingTests", dependencies: ["TestSupport", "Training", "RideModel"], swiftSettings: swift6),
        .testTarget(name: "SensorsTests", dependencies: ["TestSupport", "Sensors", "RideModel", "BoardIO", "AppCore", "Device"], exclude: ["Corpus"], swiftSettings: swift6),
        .testTarget(name: "DisplayTests", dependencies: ["Display", "Screens", "AppCore", "BoardHardware"], exclude: ["Goldens"], swiftSettings: swift6),
        .testTarget(name: "JournalTests", dependencies: ["TestSupport", "Journal", "RideModel", "AppCore", "BoardIO", "Device", "DeviceAdapters"], swiftSettings: swift6),
        .testTarget(name: "RideFilesTests", dependencies: ["TestSupport", "RideFiles", "RideModel", "AppCore", "Device"], swiftSettings: swift6),
        .testTarget(name: "BoardTests", dependencies: ["TestSupport", "BoardIO", "BoardHardware", "Configuration", "Device", "AppCore", "RideModel", "board-test-helper"], swiftSettings: swift6),
        // The VM tests (Tests/vm, docs/testing.md): hardware checks run in the guest against the
        // kernel's simulated display and GPIO chip (built against libgpiod v1 and again v2), and
        // the screen oracle that renders a screen value through the driver and the emulator.
        .executableTarget(name: "board-vm-checks", dependencies: ["BoardHardware", "BoardIO", "Display"], path: "Tests/vm/BoardVMChecks", swiftSettings: swift6),
        .executableTarget(name: "screen-oracle", dependencies: ["Screens", "Display", "AppCore"], path: "Tests/vm/ScreenOracle", swiftSettings: swift6),
        // A process the board tests signal and run as another user (Tests/BoardTestHelper).
        .executableTarget(name: "board-test-helper", dependencies: ["BoardIO"], path: "Tests/BoardTestHelper", swiftSettings: swift6),
        .testTarget(name: "DeviceTests", dependencies: ["Device", "DeviceAdapters", "BoardIO"], swiftSettings: swift6),
        // The control stream (pure) and its socket side. swift-configuration (in hummingbird's
        // package graph) also names a module Configuration: aliased here so it does not clash
        // with ours (SwiftPM needs one product dependency that names the alias).
        .testTarget(
            name: "CompanionTests",
            dependencies: [
                "Device", "BoardIO", "CBoardShims", "AppCore", "RideModel",
                .product(name: "Configuration", package: "swift-configuration", moduleAliases: ["Configuration": "SwiftConfiguration"]),
            ],
            swiftSettings: swift6),
        .testTarget(name: "SimulationTests", dependencies: ["Simulation", "Device", "AppCore", "RideModel", "Journal", "Training"], swiftSettings: swift6),
    ]
)
