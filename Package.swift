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
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
    ],
    targets: [
        // MARK: Pure logic
        .target(name: "RideModel", swiftSettings: swift6),
        .target(name: "Training", dependencies: ["RideModel"], swiftSettings: swift6),
        .target(name: "Sensors", dependencies: ["RideModel"], swiftSettings: swift6),
        .target(name: "Display", swiftSettings: swift6),
        .target(name: "Journal", dependencies: ["RideModel"], swiftSettings: swift6),
        .target(name: "RideFiles", dependencies: ["RideModel"], swiftSettings: swift6),
        .target(name: "AppCore", dependencies: ["RideModel", "Training", "Sensors", "Journal"], swiftSettings: swift6),
        .target(name: "Screens", dependencies: ["AppCore", "Display"], swiftSettings: swift6),
        .target(name: "Device", dependencies: ["AppCore", "Screens", "Display", "Journal", "RideFiles"], swiftSettings: swift6),

        // MARK: Board layer (Linux)
        .target(name: "CBoardShims", path: "Sources/CBoardShims"),
        .target(name: "BoardIO", dependencies: ["CBoardShims"], swiftSettings: swift6),

        // MARK: Executables
        .executableTarget(
            name: "bikecomputer",
            dependencies: [
                "Device", "BoardIO",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swift6),
        .executableTarget(
            name: "bikesim",
            dependencies: [
                "Device", "BoardIO",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Simulator/Sources/bikesim",
            swiftSettings: swift6),

        // MARK: Tests
        .testTarget(name: "RideModelTests", dependencies: ["RideModel"], swiftSettings: swift6),
        .testTarget(name: "AppCoreTests", dependencies: ["AppCore", "RideModel"], swiftSettings: swift6),
    ]
)
