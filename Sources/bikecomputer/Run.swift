import AppCore
import ArgumentParser
import BoardIO
import BoardWiring
import Configuration
import Device
import DeviceAdapters
import Glibc
import RideFiles
import RideModel

/// `bikecomputer run` (the default): loads the config, opens the journal (recovering an
/// interrupted ride), and runs the board's single-threaded epoll loop until SIGTERM/SIGINT.
struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the bike computer (the default).",
        discussion: """
            Loads \(DeviceConfig.defaultPath) (or --config; without the default file the built-in \
            defaults apply), refuses to start on an invalid file, recovers an interrupted ride from \
            the journal, then serves the sensor bridge, buttons, display and control socket. \
            SIGTERM/SIGINT make the journal durable, blank the display and exit 0.
            """)

    @Option(help: "The config file (default: \(DeviceConfig.defaultPath) if it exists, else the built-in defaults).")
    var config: String?

    @Option(name: .customLong("data-dir"), help: "The data directory (journal, rides); overrides [storage] data_dir.")
    var dataDirectory: String?

    @Flag(name: .customLong("no-display"), help: "Run without the display (I2C OLED or SPI memory LCD).")
    var noDisplay = false

    @Flag(name: .customLong("no-buttons"), help: "Run without the GPIO buttons.")
    var noButtons = false

    @Option(name: .customLong("ride-active-file"), help: "A file that exists while a ride is in progress and until its files are written (the USB drive's refresh waits for it to go).")
    var rideActiveFile = "/run/bikecomputer/ride-active"

    @Option(name: .customLong("power-off-file"), help: "Written to ask for a clean power-off (battery empty, power button held); the bikecomputer-poweroff.path unit acts on it (docs/power.md).")
    var powerOffFile = PowerOffRequestFile.defaultPath

    @Option(name: .customLong("measure-latency"), help: "Measurement mode: an emulated display bus instead of I2C; after SECONDS print sensor-frame-to-display latency figures as JSON and exit.")
    var measureLatencySeconds: Int?

    @Option(name: .customLong("emulated-bus-hz"), help: "With --measure-latency: spend the time a real I2C bus at this clock would take per transaction (0: none).")
    var emulatedBusHz = 400_000

    @Flag(help: "Log debug lines too.")
    var verbose = false

    func validate() throws {
        if let s = measureLatencySeconds, s < 1 || s > 86_400 { throw ValidationError("--measure-latency takes 1...86400 seconds") }
        if emulatedBusHz < 0 || emulatedBusHz > 3_400_000 { throw ValidationError("--emulated-bus-hz takes 0 (no delay) up to 3400000") }
    }

    func run() throws {
        let processStartMs = MonotonicClock.nowMs
        let log = CountingLog(StderrLog(minimumLevel: verbose ? .debug : .info))
        let loaded: DeviceConfig
        do throws(ConfigFile.LoadError) {
            let (c, source) = try ConfigFile.load(path: config)
            loaded = c
            log.log(.info, "configuration \(source)")
        } catch {
            printError(error.description)
            throw ExitCode(1)
        }
        let settings: DeviceSettings
        do throws(ConfigMappingError) {
            settings = try ConfigMapping.settings(loaded, dataDirectory: dataDirectory)
        } catch {
            printError("\(config ?? DeviceConfig.defaultPath): \(error.description); bikecomputer will not start until it is fixed")
            throw ExitCode(1)
        }
        let wiring: BoardWiring
        let loop: EpollEventLoop
        let signals = SignalForwarder()
        do {
            EpollEventLoop.ignoreBrokenPipe()
            loop = try EpollEventLoop()
            // Signals first: blocked in this (the only) thread before anything else exists.
            try loop.handleSignals([SIGTERM, SIGINT]) { signals.forward($0) }
            let now = MonotonicInstant(milliseconds: loop.nowMs)
            let wall = SystemWallClock.now()
            let seed = MonotonicClock.nowNs ^ UInt64(bitPattern: wall.unixMs) &* 0x9E37_79B9_7F4A_7C15
            // The journal, with recovery of an interrupted ride. A data directory that cannot be
            // used (read-only, full, missing) does not stop the device: the journal is disabled,
            // the rider sees STORAGE ERROR, the ride is kept in memory for its file (issue 17).
            let opened: (journal: FlashJournal, core: AppCore, report: RecoveryReport)
            do {
                opened = try BoardJournal.open(directory: settings.journalDirectory, configuration: settings.app, randomSeed: seed,
                                               deviceNow: now, wallNow: wall, policy: settings.commitPolicy)
            } catch {
                log.log(.error, "journal: cannot use \(settings.journalDirectory): \(error); starting with the journal disabled (rides kept in memory only)")
                opened = FlashJournal.disabled(reason: "\(settings.journalDirectory): \(error)", configuration: settings.app, randomSeed: seed,
                                               deviceNow: now, policy: settings.commitPolicy)
            }
            let devices = BoardDevices.linux(config: loaded, settings: settings, display: !noDisplay, buttons: !noButtons,
                                             latencyProbeHz: measureLatencySeconds == nil ? nil : emulatedBusHz, log: log)
            var options = BoardWiring.Options()
            options.rideActiveFile = rideActiveFile
            options.measureLatencyMs = measureLatencySeconds.map { Int64($0) * 1000 }
            options.streamID = UInt64(bitPattern: wall.unixMs) ^ MonotonicClock.nowNs
            options.configPath = config ?? DeviceConfig.defaultPath
            options.config = loaded
            // A power-off (the battery at its critical level, the power button) is asked of the
            // system through a request file a root path unit acts on (docs/power.md).
            options.processStartMs = processStartMs
            let powerRequest = PowerOffRequestFile(path: powerOffFile)
            powerRequest.removeStale()
            options.powerPort = powerRequest
            // Rides saved on an unset clock are dated once it is set (docs/journal.md, "The clock").
            // Ride files' fsyncs leave the loop (io_uring), as the journal's do (issue 17 item 6).
            let files = BoardRideFiles(backgroundSyncs: true)
            let archive = DatingRideArchive(library: RideLibrary(dataDirectory: settings.dataDirectory, ops: files), ops: files,
                                            dataDirectory: settings.dataDirectory, bootID: BootID.current(), wall: wall, at: now, log: log)
            options.rideFileCompletions = files.completionDescriptor.map { (descriptor: $0, collect: files.collectCompletions) }
            options.rideFilesStatus = { w in
                w.string("sync_mode", files.syncMode)
                w.int("slowest_begin_us", Int64(clamping: files.slowestBeginNs / 1000))
                w.int("slowest_poll_us", Int64(clamping: files.slowestPollNs / 1000))
                // Rides saved on an unset clock: dated since this start, given up (the board
                // restarted before its clock was set), and dating steps that failed (logged).
                w.int("rides_redated", Int64(clamping: archive.ridesRedated))
                w.int("rides_undatable", Int64(clamping: archive.ridesUndatable))
                w.int("dating_failures", Int64(clamping: archive.datingFailures))
                // Rides still to date in this start (one at a time through the ride-file queue).
                w.int("redatings_waiting", Int64(archive.redatingsWaiting))
            }
            // Course files the rider put in <data dir>/courses/ are imported now, before the ride
            // loop runs (docs/navigation.md).
            let courses = DirectoryCourseStore(dataDirectory: settings.dataDirectory)
            for r in courses.importPending() { log.log(r.ok ? .info : .error, "courses: \(r.line)") }
            wiring = try BoardWiring(loop: loop, opened: opened, archive: archive,
                                     settings: settings, devices: devices, options: options, log: log)
            wiring.runtime.courseStore = courses
        } catch {
            printError("bikecomputer: cannot start: \(error)")
            throw ExitCode(1)
        }
        wiring.onMeasurement = { json in
            let bytes = Array((json + "\n").utf8)
            _ = bytes.withUnsafeBytes { Glibc.write(1, $0.baseAddress, $0.count) }
        }
        signals.target = wiring
        var failed = false
        do {
            while !wiring.isStopped { try loop.runOnce(maxWaitMs: -1) }
        } catch {
            failed = true
            wiring.loopFailed(error)
        }
        signals.target = nil
        wiring.close()
        if failed { throw ExitCode(1) }
    }
}

/// The loop's signal handler is registered before the wiring exists (so the signal mask is set
/// first); it forwards to the wiring once there is one.
final class SignalForwarder {
    weak var target: BoardWiring?
    func forward(_ signo: Int32) { target?.shutdown(signal: signo) }
}
