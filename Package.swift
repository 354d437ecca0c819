// swift-tools-version: 6.1
//
// The bike computer. Every target's dependencies are exactly the modules it imports
// (`python3 scripts/check-imports.py` checks it), and docs/architecture.md draws the same graph.
// Pure parts (no Linux calls, no Foundation, no wall clock): RideModel, Training, Sensors,
// Display, Journal, RideFiles, AppCore, Screens, Configuration, Control and Device. The board
// layer (BoardIO, BoardHardware and the C shims) knows nothing about rides; BoardWiring puts the
// runtime on the run loop with the board's components. `bikecomputer` runs on the board,
// `bikesim` (sources under Simulator/) runs the same runtime with simulated adapters.
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
        // Only the companion process (bikecompanion) links the web stack. Hummingbird with no
        // trait: not its default ConfigurationSupport (swift-configuration has a target named
        // Configuration too), nor FullFoundation, so the companion links FoundationEssentials
        // only, not Foundation and its ICU.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.0.0", traits: []),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.0.0"),
        // Only so its module can be aliased (see CompanionTests): hummingbird's graph has it.
        .package(url: "https://github.com/apple/swift-configuration", from: "1.0.0", traits: []),
        // Elementary functions (pow, sin, cos) for the pure Positioning module, without Foundation.
        .package(url: "https://github.com/apple/swift-numerics", from: "1.1.0"),
    ],
    targets: [
        // MARK: Pure logic
        .target(name: "RideModel", dependencies: ["CBuildInfo"], swiftSettings: swift6),
        // The git commit a release build passes in (-Xcc -DBIKECOMPUTER_GIT_COMMIT=...): scripts/build-release.sh.
        .target(name: "CBuildInfo", path: "Sources/CBuildInfo"),
        .target(name: "Training", dependencies: ["RideModel"], swiftSettings: swift6),
        .target(name: "Sensors", dependencies: ["Positioning", "RideModel"], swiftSettings: swift6),
        .target(name: "Display", swiftSettings: swift6),
        // GPS (gpsd reports, fix rules, odometer), barometer compensation, altitude, ascent,
        // grade and the breadcrumb track (docs/gps.md).
        .target(name: "Positioning", dependencies: ["RideModel", .product(name: "RealModule", package: "swift-numerics")], swiftSettings: swift6),
        // Following a course: the course, its compact file, the follower (docs/navigation.md).
        .target(name: "Navigation", dependencies: ["Positioning", "RideModel", .product(name: "RealModule", package: "swift-numerics")], swiftSettings: swift6),
        // Course files in: GPX, TCX, FIT courses, prepared into a Navigation.Course (off the run loop).
        .target(name: "CourseImport", dependencies: ["Navigation", "Positioning", "RideFiles"], swiftSettings: swift6),
        .target(name: "Journal", dependencies: ["RideModel"], swiftSettings: swift6),
        .target(name: "RideFiles", dependencies: ["RideModel"], swiftSettings: swift6),
        // SHA-256 for the companion's token file (pure, no Foundation).
        .target(name: "Digest", swiftSettings: swift6),
        // The unit's own battery: fuel-gauge registers, charge, drain, alert levels (docs/power.md).
        .target(name: "Battery", swiftSettings: swift6),
        .target(name: "AppCore", dependencies: ["Battery", "Navigation", "Positioning", "RideModel", "Training"], swiftSettings: swift6),
        .target(name: "Screens", dependencies: ["AppCore", "Battery", "Display", "Navigation", "Positioning", "RideModel"], swiftSettings: swift6),
        .target(name: "Configuration", dependencies: ["RideModel"], swiftSettings: swift6),
        // The control socket's language (protocol, stream, status, JSON): what `ctl` and the
        // companion link instead of the device stack.
        .target(name: "Control", dependencies: ["AppCore", "Battery", "RideModel", "Training"], swiftSettings: swift6),
        .target(name: "Device", dependencies: ["AppCore", "Battery", "Configuration", "Control", "Display", "Journal", "Navigation", "Positioning", "RideFiles", "RideModel", "Sensors", "Training"], swiftSettings: swift6),

        // MARK: Board layer (Linux)
        .target(name: "CBoardShims", path: "Sources/CBoardShims"),
        .target(name: "BoardIO", dependencies: ["CBoardShims"], swiftSettings: swift6),
        // libgpiod (v1 or v2 API, whichever gpiod.h is installed) and libi2c behind small C shims.
        .target(name: "CGpiodShim", path: "Sources/CGpiodShim", linkerSettings: [.linkedLibrary("gpiod")]),
        .target(name: "CI2CShim", path: "Sources/CI2CShim", linkerSettings: [.linkedLibrary("i2c")]),
        // spidev's ioctls (an SPI panel: the Sharp memory LCD); kernel headers only.
        .target(name: "CSPIShim", path: "Sources/CSPIShim"),
        .target(name: "BoardHardware", dependencies: ["BoardIO", "Display", "CGpiodShim", "CI2CShim", "CSPIShim"], swiftSettings: swift6),

        // Board-side adapters of the Device ports on a real directory (ride files, journal
        // segments), the system's wall clock and stderr log: shared by the executables.
        .target(name: "DeviceAdapters", dependencies: ["AppCore", "BoardIO", "Configuration", "CourseImport", "Device", "Journal", "Navigation", "RideFiles", "RideModel"], swiftSettings: swift6),

        // The board's wiring: the runtime on any `EventLoop` with the bridge, buttons, display,
        // buzzer, control socket and companion link as components (`bikecomputer run` puts it on
        // epoll; BoardWiringTests run it on ManualEventLoop).
        .target(name: "BoardWiring", dependencies: ["AppCore", "Battery", "BoardHardware", "BoardIO", "Configuration", "Control", "Device", "DeviceAdapters", "Display", "Journal", "Positioning", "RideModel", "Screens", "Sensors"], swiftSettings: swift6),

        // The simulator's library: synthetic rides, scenarios, simulated adapters, headless runner.
        .target(name: "Simulation", dependencies: ["AppCore", "Battery", "Control", "Device", "Display", "Journal", "Navigation", "Positioning", "RideFiles", "RideModel", "Screens", "Sensors",
                                                   .product(name: "RealModule", package: "swift-numerics")],
                path: "Simulator/Sources/Simulation", swiftSettings: swift6),

        // MARK: Executables
        .executableTarget(
            name: "bikecomputer",
            dependencies: [
                "AppCore", "Battery", "BoardHardware", "BoardIO", "BoardWiring", "Configuration", "Control", "CourseImport", "Device", "DeviceAdapters",
                "Journal", "Navigation", "Positioning", "RideFiles", "RideModel", "Sensors", "Training",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swift6),
        // The simulator never links the hardware libraries: `swift run bikesim` needs no apt package.
        .executableTarget(
            name: "bikesim",
            dependencies: [
                "AppCore", "BoardIO", "Configuration", "CourseImport", "Device", "DeviceAdapters", "Display", "Navigation", "RideFiles", "RideModel", "Screens", "Simulation",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Simulator/Sources/bikesim",
            swiftSettings: swift6),

        // The companion web server (docs/companion.md): a separate process that follows the
        // control socket's stream and serves a paired phone over HTTP + WebSocket. It speaks the
        // control protocol (Control) and links nothing of the device stack.
        .executableTarget(
            name: "bikecompanion",
            dependencies: [
                "BoardIO", "Configuration", "Control", "RideModel",
                // Course upload (CourseRoutes.swift): the pure importer and the compact codec.
                "CourseImport", "Navigation",
                // Token hashes (SHA-256): our own, not swift-crypto, whose BoringSSL was most of the
                // companion's compile on both CPUs (docs/releasing.md).
                "Digest",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swift6),

        // Measures the flash journal (docs/journal.md): `swift run -c release journal-bench`.
        .executableTarget(name: "journal-bench", dependencies: ["AppCore", "BoardIO", "Control", "Device", "DeviceAdapters", "Journal", "RideModel"], swiftSettings: swift6),
        // Benchmarks and their malloc counter (docs/performance.md): `swift run -c release bikebench`.
        .target(name: "CMallocCounter", path: "Benchmarks/CMallocCounter"),
        .executableTarget(name: "bikebench", dependencies: ["AppCore", "CMallocCounter", "Control", "CourseImport", "Device", "Display", "Journal", "Navigation", "RideFiles", "RideModel", "Screens", "Sensors", "Simulation",
                                                   .product(name: "RealModule", package: "swift-numerics")], path: "Benchmarks/bikebench", swiftSettings: swift6),

        // MARK: Tests (each in the target of the module it tests)
        // What every test target shares (the seeded generator of the randomized tests).
        .target(name: "TestSupport", dependencies: ["RideModel"], path: "Tests/TestSupport", swiftSettings: swift6),
        .testTarget(name: "BatteryTests", dependencies: ["Battery"], swiftSettings: swift6),
        .testTarget(name: "PositioningTests", dependencies: ["TestSupport", "Positioning", "RideModel", "RideFiles"], swiftSettings: swift6),
        .testTarget(name: "NavigationTests", dependencies: ["TestSupport", "CourseImport", "Navigation", "RideFiles"], swiftSettings: swift6),
        .testTarget(name: "RideModelTests", dependencies: ["TestSupport", "RideModel"], swiftSettings: swift6),
        .testTarget(name: "AppCoreTests", dependencies: ["TestSupport", "AppCore", "Battery", "Control", "Navigation", "Positioning", "RideModel", "Sensors", "Training"], swiftSettings: swift6),
        .testTarget(name: "TrainingTests", dependencies: ["TestSupport", "Training", "RideModel"], swiftSettings: swift6),
        .testTarget(name: "SensorsTests", dependencies: ["Positioning", "TestSupport", "Sensors", "RideModel"], exclude: ["Corpus"], swiftSettings: swift6),
        // The display and the screens drawn on it (goldens: Tests/DisplayTests/Goldens).
        .testTarget(name: "DisplayTests", dependencies: ["AppCore", "Battery", "BoardHardware", "Display", "Positioning", "RideModel", "Screens"], exclude: ["Goldens"], swiftSettings: swift6),
        .testTarget(name: "JournalTests", dependencies: ["TestSupport", "AppCore", "BoardIO", "Device", "DeviceAdapters", "Journal", "RideModel"], swiftSettings: swift6),
        .testTarget(name: "RideFilesTests", dependencies: ["TestSupport", "AppCore", "RideFiles", "RideModel"], swiftSettings: swift6),
        .testTarget(name: "ConfigurationTests", dependencies: ["TestSupport", "Configuration"], swiftSettings: swift6),
        .testTarget(name: "ControlTests", dependencies: ["AppCore", "Control", "RideModel"], swiftSettings: swift6),
        .testTarget(name: "BoardTests", dependencies: ["TestSupport", "AppCore", "BoardHardware", "BoardIO", "CBoardShims", "Control", "Device", "Journal", "RideModel", "board-test-helper"], swiftSettings: swift6),
        // The VM tests (Tests/vm, docs/testing.md): hardware checks run in the guest against the
        // kernel's simulated display and GPIO chip (built against libgpiod v1 and again v2), and
        // the screen oracle that renders a screen value through the driver and the emulator.
        .executableTarget(name: "board-vm-checks", dependencies: ["BoardHardware", "BoardIO", "Display"], path: "Tests/vm/BoardVMChecks", swiftSettings: swift6),
        .executableTarget(name: "screen-oracle", dependencies: ["AppCore", "Display", "RideModel", "Screens"], path: "Tests/vm/ScreenOracle", swiftSettings: swift6),
        // A process the board tests signal and run as another user (Tests/BoardTestHelper).
        .executableTarget(name: "board-test-helper", dependencies: ["BoardIO"], path: "Tests/BoardTestHelper", swiftSettings: swift6),
        .testTarget(name: "DeviceTests", dependencies: ["TestSupport", "AppCore", "Battery", "BoardIO", "Configuration", "Control", "Device", "DeviceAdapters", "Display", "Journal", "Navigation", "RideFiles", "RideModel", "Sensors", "Training"], swiftSettings: swift6),
        // The board's wiring in process, on ManualEventLoop (ticks, deadlines, flush steps,
        // buttons, the control socket and status), and its display screen.
        .testTarget(name: "BoardWiringTests", dependencies: ["AppCore", "Battery", "BoardHardware", "BoardIO", "BoardWiring", "Configuration", "Control", "Device", "Display", "Journal", "RideModel", "Screens", "Sensors"], swiftSettings: swift6),
        // The control stream's socket side and the companion. swift-configuration (in
        // hummingbird's package graph) also names a module Configuration: aliased here so it does
        // not clash with ours (SwiftPM needs one product dependency that names the alias).
        .testTarget(
            name: "CompanionTests",
            dependencies: [
                "AppCore", "BoardIO", "CBoardShims", "Control", "Device", "Digest", "Journal", "RideModel",
                .product(name: "Configuration", package: "swift-configuration", moduleAliases: ["Configuration": "SwiftConfiguration"]),
            ],
            swiftSettings: swift6),
        // The fuzz targets (docs/testing.md, "Fuzzing"): each parser of outside input, the
        // `bikefuzz` driver (libFuzzer in a -sanitize=fuzzer build: scripts/fuzz.sh) and the
        // replay of the committed corpus in `swift test`.
        .target(name: "FuzzTargets", dependencies: ["Configuration", "CourseImport", "Navigation", "Positioning", "RideFiles", "RideModel", "Sensors"], path: "Tests/Fuzz/FuzzTargets", swiftSettings: swift6),
        .executableTarget(name: "bikefuzz", dependencies: ["FuzzTargets"], path: "Tests/Fuzz/bikefuzz", swiftSettings: swift6),
        .testTarget(name: "FuzzCorpusTests", dependencies: ["FuzzTargets"], path: "Tests/Fuzz/FuzzCorpusTests", swiftSettings: swift6),
        .testTarget(name: "SimulationTests", dependencies: ["AppCore", "Control", "Device", "Journal", "Positioning", "RideFiles", "RideModel", "Simulation", "TestSupport", "Training"], swiftSettings: swift6),
    ]
)
