import AppCore
import Display
import Foundation
import Screens
import Testing

/// Every screen and overlay of `ScreenCatalogue`, rendered through renderer -> driver ->
/// emulator, must match its golden PBM pixel for pixel. Regenerate (then review the diff) with
///     UPDATE_GOLDENS=1 swift test --filter DisplayTests
@Suite struct GoldenTests {
    static let goldenDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Goldens")
    static var updating: Bool { ProcessInfo.processInfo.environment["UPDATE_GOLDENS"] == "1" }

    /// The catalogue, built once: each of its screens is a test of its own, and building it for
    /// each (276 of them) made the suite quadratic, ~115 CPU-seconds of the debug build's run.
    static let catalogue = ScreenCatalogue.entries()

    static func image(_ entry: ScreenCatalogue.Entry) -> Framebuffer {
        var panel = entry.emulatedPanel()
        return panel.show(entry.model)
    }

    @Test(arguments: catalogue.map(\.name))
    func screenMatchesGolden(_ name: String) throws {
        let entry = try #require(Self.catalogue.first { $0.name == name })
        let actual = Self.image(entry)
        let url = Self.goldenDirectory.appendingPathComponent("\(name).pbm")
        if Self.updating {
            try FileManager.default.createDirectory(at: Self.goldenDirectory, withIntermediateDirectories: true)
            try Data(ImageEncoding.pbm(actual)).write(to: url)
            return
        }
        guard let data = FileManager.default.contents(atPath: url.path) else {
            Issue.record("golden \(url.path) is missing: run UPDATE_GOLDENS=1 swift test --filter DisplayTests and review it")
            return
        }
        let golden = try ImageEncoding.parsePBM([UInt8](data))
        #expect(golden.height == actual.height)
        var differing = 0
        var first: (Int, Int)?
        for y in 0..<actual.height {
            for x in 0..<actual.width where golden[x, y] != actual[x, y] {
                differing += 1
                if first == nil { first = (x, y) }
            }
        }
        if differing > 0 {
            let out = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("\(name).actual.pbm")
            try? Data(ImageEncoding.pbm(actual)).write(to: out)
            Issue.record("\(name): \(differing) pixels differ from the golden, first at \(first!); actual image written to \(out.path)")
        }
    }

    /// The SH1106 path (page addressing, column offset 2) shows exactly the same pictures.
    @Test func sh1106ShowsTheSameScreens() {
        for entry in Self.catalogue where entry.width == 128 && entry.height <= 64 {
            var sh1106 = EmulatedPanel(panel: PanelConfiguration(controller: .sh1106, height: entry.height))
            #expect(sh1106.show(entry.model).bytes == Self.image(entry).bytes, "\(entry.name)")
        }
    }

    /// Showing the screens one after another on one panel (only changed pages sent each time)
    /// gives the same pictures as showing each on a fresh panel.
    @Test func incrementalUpdatesGiveTheSamePictures() {
        for size in ScreenCatalogue.sizes {
            var panel = EmulatedPanel(width: size.width, height: size.height)
            for entry in Self.catalogue where entry.width == size.width && entry.height == size.height {
                #expect(panel.show(entry.model).bytes == Self.image(entry).bytes, "\(entry.name)")
            }
        }
    }

    @Test func everyGoldenBelongsToAScreen() throws {
        let names = Set(Self.catalogue.map { "\($0.name).pbm" })
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.goldenDirectory.path).filter { $0.hasSuffix(".pbm") }
        #expect(Set(files) == names, "stale or missing goldens")
    }

    @Test func catalogueCoversEveryModeAndAlert() {
        let entries = Self.catalogue
        var modes = Set<String>()
        for e in entries {
            switch e.model.mode {
            case .idle: modes.insert("idle")
            case .countdown: modes.insert("countdown")
            case .running: modes.insert("running")
            case .paused: modes.insert("paused")
            case .summary: modes.insert("summary")
            case .confirmDiscard: modes.insert("confirm")
            case .sensors: modes.insert("sensors")
            case .courses: modes.insert("courses")
            }
        }
        #expect(modes == ["idle", "countdown", "running", "paused", "summary", "confirm", "sensors", "courses"])
        let alerts = Set(entries.compactMap { $0.model.overlay.map { "\($0)" } })
        for a: Alert in [.sensorLost(.heartRate), .zoneDrift(.power, above: true), .lowStorage, .rideRecovered,
                         .offCourse, .wrongWay, .backOnCourse, .cue(.right, stage: .approach, distanceM: 100, name: "Rue du Lac"), .courseFinished] {
            #expect(alerts.contains("\(a)"), "no golden for the \(a) overlay")
        }
        #expect(Set(entries.map(\.name)).count == entries.count, "names must be unique")
    }

    /// Golden images are pictures of something: each differs from a blank panel and from every
    /// other golden (a renderer that drew nothing, or the same thing everywhere, fails).
    @Test func screensAreDistinct() {
        // The 128x32 lap page shows the lap time and the timer only: no metric to be missing.
        // The 128x32 panel has no room for the unit's battery while riding or paused (idle shows it).
        let alike = ["small-running-3-no-data": "small-running-3",
                     "small-battery-running-1": "small-running-1", "small-battery-paused": "small-paused"]
        let images = Self.catalogue.map { ($0.name, Self.image($0)) }
        var seen: [Framebuffer: String] = [:]
        for (name, image) in images {
            #expect(image.bytes.contains { $0 != 0 }, "\(name) is blank")
            if let other = seen[image], alike[name] != other { Issue.record("\(name) looks exactly like \(other)") }
            seen[image] = name
        }
    }
}
