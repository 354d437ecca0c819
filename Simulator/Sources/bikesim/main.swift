import ArgumentParser
import BoardIO
import CourseImport
import Device
import Glibc
import Simulation
import DeviceAdapters
import RideFiles
import AppCore
import Display
import Navigation
import RideModel

/// The desktop simulator: runs the same app code as the board with simulated adapters.
struct BikeSim: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bikesim",
        abstract: "Bike computer simulator: a demo ride in the terminal, or headless for tests.",
        version: ProjectVersion.text("bikesim"),
        subcommands: [Ride.self, ScreensCommand.self],
        defaultSubcommand: Ride.self)
}

/// `bikesim [ride]`: a ride, interactive or headless (the default subcommand).
struct Ride: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Ride a scenario: the demo in the terminal, or headless for tests (the default).",
        discussion: """
        Without options, rides the built-in demo in the terminal (keys: s start/pause, l lap, \
        p page, S long-press start, L long-press lap, ? help, q quit).
        Headless: bikesim --headless [--scenario FILE] --out DIR [--seed N] [--speed N]
        """)

    @Flag(help: "Run without a terminal, as fast as possible (or --speed N× real time).")
    var headless = false

    @Option(help: "Scenario file (see docs/simulator.md); default: the built-in demo ride.")
    var scenario: String?

    @Option(help: "Replay a recorded FIT activity through the app instead of the synthetic ride (headless).")
    var replay: String?

    @Option(help: ArgumentHelp("Follow a course (GPX, TCX or FIT; docs/navigation.md): the replay's or the synthetic ride's positions are matched on it, and the synthetic GPS rides along it.", valueName: "FILE"))
    var course: String?

    @Option(help: "Directory for summary.json, ride files and frames (headless).")
    var out: String?

    @Option(help: "Seed for ride ids and synthetic sensors (a scenario's own seed wins).")
    var seed: UInt64 = 1

    @Option(help: "Run N times faster than real time (default: interactive 1, headless as fast as possible).")
    var speed: Double?

    @Flag(help: "Print the screen as text at every change (headless).")
    var printScreens = false

    @Option(name: .customLong("data-dir"), help: "Keep the ride library (and the journal) in this directory, as the board does.")
    var dataDirectory: String?

    @Option(help: "The simulated wall clock at the start, Unix seconds (default 2026-06-06T07:00:00Z). A crash drill restarting on a data directory passes a later time, as a real clock would be.")
    var wallStart: Int64?

    @Flag(help: "Print 'progress MS' (simulated milliseconds) on stdout every simulated second (headless).")
    var progress = false

    @Flag(help: "Write a PNG of the display at every change of screen or overlay to DIR/frames (headless).")
    var frames = false

    @Option(help: ArgumentHelp("How the panel is drawn in the terminal: auto (the densest that fits, chosen again when the window is resized), halfblock (130×36 and up) or braille (66×20 and up, fits 80×24).", valueName: "auto|halfblock|braille"))
    var render: String = "auto"

    @Option(name: .customLong("frame-file"), help: ArgumentHelp("Interactive: after every redraw, write the panel image drawn as a plain PBM to PATH (for tests that compare the terminal with the emulator).", visibility: .hidden))
    var frameFile: String?

    @Option(help: ArgumentHelp("The board's config file (as /etc/bikecomputer/config.toml): the rider's panel, zones, FTP, wheel, training and averaging settings for this run or replay (the sensors stay the scenario's). Checked as `bikecomputer config check` does.", valueName: "FILE"))
    var config: String?

    @Option(help: ArgumentHelp("The panel: \(RiderSettings.panelNames) (overrides the config file's [display]).", valueName: "NAME"))
    var panel: String?

    func validate() throws {
        if let speed, !(speed > 0) { throw ValidationError("--speed must be a positive number, e.g. --speed 10") }
        if headless && out == nil { throw ValidationError("--headless needs --out DIR for summary.json and the ride files") }
        if replay != nil && !headless { throw ValidationError("--replay runs headless: add --headless --out DIR") }
        if replay != nil && scenario != nil { throw ValidationError("use either --replay or --scenario, not both") }
        if render != "auto" && TerminalRendering(rawValue: render) == nil {
            throw ValidationError("--render must be auto, halfblock or braille, or braille-half for a panel wider than 128 pixels (got '\(render)')")
        }
        _ = try rider()
    }

    /// `--config` and `--panel`, read and checked.
    func rider() throws -> RiderSettings { try RiderSettings.load(config: config, panel: panel) }

    func run() throws {
        if let replay {
            try runReplay(replay)
            return
        }
        let text: String
        if let path = scenario {
            do { text = try Files.readText(path) } catch {
                throw ValidationError("cannot read scenario \(path): \(error)")
            }
        } else {
            text = BuiltinScenarios.demo
        }
        var parsed: Scenario
        do { parsed = try Scenario.parse(text) } catch {
            throw ValidationError("\(scenario ?? "built-in demo"): \(error)")
        }
        // A course is followed with the GPS.
        if course != nil { parsed.sensors.insert(.gps) }
        if headless {
            try runHeadless(parsed)
        } else {
            try runInteractive(parsed)
        }
    }

    var options: HeadlessRun.Options {
        get throws {
            var o = HeadlessRun.Options(seed: seed)
            if let wallStart { o.startUnixMs = wallStart * 1000 }
            if let wheel = try? rider().wheelCircumferenceMm { o.wheelCircumferenceMm = wheel }  // checked in validate()
            o.course = try loadCourse()
            return o
        }
    }

    /// The `--course` file, imported as `bikecomputer courses import` would (nil without one).
    func loadCourse() throws -> Course? {
        guard let path = course else { return nil }
        let bytes: [UInt8]
        do { bytes = try Files.readBytes(path) } catch { throw ValidationError("cannot read course \(path): \(error)") }
        do {
            let (c, report) = try CourseImport.course(from: bytes, fileName: path)
            for w in report.warnings { print("bikesim: \(path): \(w)") }
            return c
        } catch {
            throw ValidationError(error.description)
        }
    }

    func runReplay(_ path: String) throws {
        let outDir = out!
        let bytes: [UInt8]
        do { bytes = try Files.readBytes(path) } catch { throw ValidationError("cannot read \(path): \(error)") }
        let activity: FITActivity
        do {
            // A damaged file gives the ride read before the damage, with a warning.
            let file = try FITFile(bytes: bytes, recover: true)
            activity = FITActivity(file)
            if let damage = file.damage {
                print("bikesim: warning: \(path) is damaged (\(damage)); replaying the \(activity.records.count) records read before it")
            }
        } catch {
            throw ValidationError("\(path) is not a FIT activity this app can read: \(error)")
        }
        if activity.recordsOutsideActivity > 0 {
            print("bikesim: warning: left out \(activity.recordsOutsideActivity) records dated outside the activity (a clock glitch of the unit)")
        }
        let started = Clock.monotonicMs()
        let settings = try rider()
        let run = try ReplayRun(activity: activity, storage: try makeStorage(), configuration: settings.app, seed: seed, course: try loadCourse())
        run.run()
        guard let summary = run.summaryJSON else { throw ValidationError("the replay did not finish a ride") }
        try Files.makeDirectories(outDir)
        try Files.writeAtomically("\(outDir)/summary.json", Array(summary.utf8))
        for ride in run.archive.rides {
            try Files.writeAtomically("\(outDir)/\(ride.id).fit", try FITEncoder.encode(records: ride.records))
        }
        print("bikesim: replayed \(activity.records.count) records of \(path) in \(Clock.monotonicMs() - started) ms with the settings of \(settings.source); wrote \(outDir)/summary.json")
    }

    /// The simulated flash, or the journal in `--data-dir` through the board's own adapter.
    func makeStorage() throws -> RideStorage {
        guard let dir = dataDirectory else { return SimulatedFlashStorage() }
        try Files.makeDirectories(dir)
        return DirectoryStorage(path: dir) { configuration, seed, now, wall in
            do {
                return try openRideJournal(dataDirectory: dir, configuration: configuration, randomSeed: seed,
                                           deviceNow: now, wallNow: wall)
            } catch {
                // The data directory went away under us: say so and stop (nothing to ride on).
                let message = Array("bikesim: cannot open the journal in \(dir): \(error)\n".utf8)
                _ = message.withUnsafeBytes { Glibc.write(2, $0.baseAddress, $0.count) }
                Glibc.exit(1)
            }
        }
    }

    func runHeadless(_ scenario: Scenario) throws {
        let outDir = out!
        try Files.makeDirectories(outDir)
        let storage = try makeStorage()
        let memoryArchive = MemoryArchive()
        let library = dataDirectory.map { RideLibrary(dataDirectory: $0, ops: BoardRideFiles()) }
        let archive: RideArchivePort = library ?? memoryArchive
        let textScreen = TextScreenRecorder(print: printScreens)
        let settings = try rider()
        let display = EmulatedScreen(captureEveryChange: frames, width: settings.panel.width, height: settings.panel.height)
        let sim = HeadlessRun(scenario: scenario, options: try options, storage: storage, archive: archive,
                              screen: ScreenFanOut([display, textScreen]), configuration: settings.app)
        sim.onScreenshot = { name in display.capture(name) }
        let started = Clock.monotonicMs()
        var lastProgressS: Int64 = -1
        sim.run { simMs in
            if let speed {
                let due = started + Int64(Double(simMs) / speed)
                let wait = due - Clock.monotonicMs()
                if wait > 0 { Clock.sleepMs(wait) }
            }
            if progress && simMs / 1000 != lastProgressS {
                lastProgressS = simMs / 1000
                let line = Array("progress \(simMs)\n".utf8)
                _ = line.withUnsafeBytes { Glibc.write(1, $0.baseAddress, $0.count) }
            }
        }
        guard let summary = sim.summaryJSON else {
            throw ValidationError("the scenario never started a ride: nothing to summarise")
        }
        try Files.writeAtomically("\(outDir)/summary.json", Array(summary.utf8))
        try Files.writeAtomically("\(outDir)/screens.txt", Array(textScreen.lines.joined(separator: "\n").utf8) + [10])
        // The finished ride's file, as the device writes it.
        for ride in memoryArchive.rides {
            do {
                try Files.writeAtomically("\(outDir)/\(ride.id).fit", try FITEncoder.encode(records: ride.records))
            } catch {
                throw ValidationError("could not encode ride \(ride.id) as FIT: \(error)")
            }
        }
        if let library, let id = sim.runtime.lastFinishedRide, let entry = try? library.find(id.description) {
            try Files.writeAtomically("\(outDir)/\(id).fit", try library.bytes(entry, .fit))
        }
        if !display.frames.isEmpty {
            try Files.makeDirectories("\(outDir)/frames")
            for f in display.frames { try Files.writeAtomically("\(outDir)/frames/\(f.name)", f.png) }
        }
        let wallMs = Clock.monotonicMs() - started
        let c = sim.counters
        print("bikesim: \(TextScreen.clock(scenario.durationMs)) simulated in \(wallMs) ms; \(c.inputs) inputs, \(c.crashes) crashes, \(c.powerCuts) power cuts, \(c.recoveries) recoveries; settings: \(settings.source), panel \(settings.panel.width)x\(settings.panel.height); wrote \(outDir)/summary.json")
    }

    func runInteractive(_ scenario: Scenario) throws {
        let terminal = Terminal()
        let settings = try rider()
        guard terminal.isInteractive else {
            // Not a terminal (a pipe, CI): ride the scenario and print every screen as text.
            let textScreen = TextScreenRecorder(print: true)
            let sim = HeadlessRun(scenario: scenario, options: try options, storage: try makeStorage(),
                                  archive: MemoryArchive(), screen: textScreen, configuration: settings.app)
            sim.run()
            return
        }
        let display = EmulatedScreen(width: settings.panel.width, height: settings.panel.height)
        let sim = HeadlessRun(scenario: scenario, options: try options, storage: try makeStorage(), archive: MemoryArchive(),
                              screen: display, configuration: settings.app)
        installSignalRestore(terminal) // before raw mode: saves the rider's settings
        installResizeHandler()
        var ui = Interactive(sim: sim, terminal: terminal, speed: speed ?? 1, rendering: TerminalRendering(rawValue: render),
                             panel: settings.panel) {
            display.terminalLines($0)
        }
        if let frameFile {
            var last: [UInt8] = []
            ui.onDraw = { rendering in
                var bytes = ImageEncoding.pbm(display.image)
                // A comment after the magic number says which rendering the terminal shows.
                bytes.insert(contentsOf: Array("# rendering \(rendering?.rawValue ?? "none")\n".utf8), at: 3)
                guard bytes != last else { return }
                last = bytes
                try? Files.writeAtomically(frameFile, bytes)
            }
        }
        ui.run()
    }
}

/// Keeps a line of text for every change of screen mode or overlay (screens.txt), and prints
/// every change of the screen when asked.
final class TextScreenRecorder: ScreenPort {
    let printing: Bool
    private(set) var lines: [String] = []
    private var last = ""
    private var lastMode: ScreenMode?
    private var lastOverlay: Alert?

    init(print: Bool) { printing = print }

    func show(_ screen: ScreenModel, at now: MonotonicInstant) {
        let modeChanged = screen.mode != lastMode || screen.overlay != lastOverlay
        guard printing || modeChanged else { return }
        let line = TextScreen.line(screen)
        guard line != last else { return }
        last = line
        let stamped = "\(TextScreen.clock(now.milliseconds))  \(line)"
        if modeChanged {
            lines.append(stamped)
            lastMode = screen.mode
            lastOverlay = screen.overlay
        }
        if printing { print(stamped) }
    }
}

BikeSim.main()
