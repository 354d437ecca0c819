import AppCore
import ArgumentParser
import BoardHardware
import BoardIO
import Configuration
import Device
import DeviceAdapters
import Display
import Glibc
import Journal
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

    @Flag(name: .customLong("no-display"), help: "Run without the I2C display.")
    var noDisplay = false

    @Flag(name: .customLong("no-buttons"), help: "Run without the GPIO buttons.")
    var noButtons = false

    @Option(name: .customLong("ride-active-file"), help: "A file that exists while a ride is in progress (the USB gadget refresh checks it).")
    var rideActiveFile = "/run/bikecomputer/ride-active"

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
        let log = StderrLog(minimumLevel: verbose ? .debug : .info)
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
        var options = BoardRunner.Options()
        options.display = !noDisplay
        options.buttons = !noButtons
        options.rideActiveFile = rideActiveFile
        options.measureLatencyMs = measureLatencySeconds.map { Int64($0) * 1000 }
        options.emulatedBusHz = emulatedBusHz
        let runner: BoardRunner
        do {
            runner = try BoardRunner(config: loaded, settings: settings, options: options, log: log)
        } catch {
            printError("bikecomputer: cannot start: \(error)")
            throw ExitCode(1)
        }
        let code = runner.run()
        if code != 0 { throw ExitCode(code) }
    }
}

/// The board's wiring: one `EpollEventLoop` carrying the bridge, the 1 Hz tick and the app
/// core's deadlines, the GPIO buttons and their debounce deadlines, the display's flush steps,
/// the control socket and the signals, all feeding one `DeviceRuntime`.
final class BoardRunner {
    struct Options {
        var display = true
        var buttons = true
        var rideActiveFile = "/run/bikecomputer/ride-active"
        var measureLatencyMs: Int64?
        var emulatedBusHz = 400_000
    }

    /// Wall-clock readings handed to the core this often (NTP may set the clock after boot).
    static let wallClockPeriodMs: Int64 = 60_000

    let config: DeviceConfig
    let settings: DeviceSettings
    let options: Options
    let log: StderrLog
    let loop: EpollEventLoop
    let journal: FlashJournal
    let archive: RideLibrary
    let runtime: DeviceRuntime
    /// Numbered state, metrics and zone lines for the control socket's subscribers (companions).
    let stream: ControlStream
    let bridge: BridgeLink
    let rideFlag: RideActiveFlag
    let startMs: Int64
    var control: ControlSocketServer?
    var i2cScreen: DisplayScreen<I2CBus>?
    var probeScreen: DisplayScreen<LatencyProbeBus>?
    var buttons: GPIOButtons?
    var buzzer: BuzzerAlert?
    var debouncer: ButtonDebouncer
    var debounceTimer: TimerID?
    var coreDeadlineTimer: TimerID?
    var armedCoreDeadline: MonotonicInstant?
    var flushTimer: TimerID?
    var tickTimer: TimerID?
    var lastMetricsAtMs: Int64?
    /// The longest time between two ticks.
    static let tickPeriodMs: Int64 = 1_000
    /// Subscribers' metrics lines at least this far apart (ticks may come closer at the core's
    /// other deadlines: a long press, an overlay's end).
    static let metricsPeriodMs: Int64 = 900
    var displayState = "disabled (--no-display)"
    var buttonsState = "disabled (--no-buttons)"
    var hardwareErrors: UInt64 = 0
    var recoveredRide: RideID?
    var lastSyncs: UInt64 = 0
    var lastSyncAtMs: Int64?
    var exitCode: Int32 = 0
    var stoppedBy: Int32?
    var latency = LatencyRecorder()

    init(config: DeviceConfig, settings: DeviceSettings, options: Options, log: StderrLog) throws {
        self.config = config
        self.settings = settings
        self.options = options
        self.log = log
        EpollEventLoop.ignoreBrokenPipe()
        loop = try EpollEventLoop()
        // Signals first: blocked in this (the only) thread before anything else exists.
        try loop.handleSignals([SIGTERM, SIGINT]) { signo in trampolineTarget?.shutdown(signal: signo) }
        startMs = loop.nowMs
        let now = MonotonicInstant(milliseconds: startMs)
        let wall = SystemWallClock.now()
        let seed = MonotonicClock.nowNs ^ UInt64(bitPattern: wall.unixMs) &* 0x9E37_79B9_7F4A_7C15

        // The journal, with recovery of an interrupted ride.
        let opened = try BoardJournal.open(directory: settings.journalDirectory, configuration: settings.app, randomSeed: seed,
                                           deviceNow: now, wallNow: wall, policy: settings.commitPolicy)
        journal = opened.journal
        for line in opened.report.lines { log.log(opened.report.recoveredRide == nil ? .info : .warning, "journal: \(line)") }
        recoveredRide = opened.report.recoveredRide
        archive = RideLibrary(dataDirectory: settings.dataDirectory, ops: BoardRideFiles())
        rideFlag = RideActiveFlag(path: options.rideActiveFile)
        rideFlag.removeStale()
        debouncer = ButtonDebouncer(debounceMs: Int64(config.buttons.debounceMs))

        // The display (missing hardware is logged and counted; the ride goes on without it).
        var screen: ScreenPort?
        if let _ = options.measureLatencyMs {
            let bus = LatencyProbeBus(emulatedClockHz: options.emulatedBusHz, nowNs: { MonotonicClock.nowNs })
            let s = DisplayScreen(bus: bus, panel: settings.panel)
            do { try s.start() } catch { log.log(.error, "emulated display: \(error)") }
            probeScreen = s
            screen = s
            displayState = "emulated (measurement mode, \(options.emulatedBusHz) Hz)"
        } else if options.display {
            // Opened at the first write and retried every few seconds while it does not answer
            // (a loose connector at power-on): the ride goes on, `ctl status` says why.
            let bus = I2CBus(deferredPath: "/dev/i2c-\(config.display.bus)", address: UInt8(config.display.address))
            let s = DisplayScreen(bus: bus, panel: settings.panel)
            do { try s.start() } catch {
                hardwareErrors += 1
                log.log(.error, "display: \(error); running without the display until it answers (retrying every \(DisplayScreen<I2CBus>.retryAfterErrorMs / 1000) s)")
            }
            i2cScreen = s
            screen = s
            displayState = "ok (/dev/i2c-\(config.display.bus) 0x\(String(config.display.address, radix: 16)))"
        }

        // The buzzer/LED line for alerts (optional hardware, like the display).
        var alertOutput: AlertOutputPort?
        if options.buttons, let pin = config.buttons.buzzerPin {
            do {
                let line = try GPIOOutputLine(chip: config.buttons.chip, offset: UInt32(pin))
                let b = BuzzerAlert(line: line)
                buzzer = b
                alertOutput = b
            } catch {
                hardwareErrors += 1
                log.log(.error, "buzzer: \(error); alerts are shown but not sounded")
            }
        }

        runtime = DeviceRuntime(core: opened.core, journal: journal, archive: archive, screen: screen,
                                alertOutput: alertOutput, log: log)
        // A stream id new at every start, so a reconnecting companion knows the device restarted.
        stream = ControlStream(streamID: UInt64(bitPattern: wall.unixMs) ^ MonotonicClock.nowNs)
        _ = runtime.addObserver(stream)
        // The recovered core's pending effects (gap event, "ride recovered"), then the wall clock,
        // then the files of rides that ended before their file was durable.
        runtime.start(at: now)
        runtime.handle(.wallClock(wall, at: now))
        for id in opened.report.finishedRidesAwaitingFile { runtime.writeRideFile(id, at: now) }

        let transport: BridgeLink.Transport = config.bridge.transport == .unix
            ? .unixSocket(path: settings.bridgePath) : .serial(path: settings.bridgePath, baud: config.bridge.baud)
        bridge = BridgeLink(transport: transport, configuration: settings.dataSource, loop: loop, runtime: runtime, log: log)
        try wire()
    }

    var now: MonotonicInstant { MonotonicInstant(milliseconds: loop.nowMs) }

    // MARK: Wiring

    func wire() throws {
        // Display flushes and latency probes.
        i2cScreen?.onPagesPending = { [unowned self] in self.scheduleFlush() }
        i2cScreen?.onError = { [unowned self] e in self.hardwareErrors += 1; self.log.log(.error, "display: \(e); retrying every 5 s") }
        i2cScreen?.onRecovered = { [unowned self] in self.log.log(.info, "display: answering again; init table and frame resent") }
        if let p = probeScreen {
            p.onPagesPending = { [unowned self] in self.scheduleFlush() }
            p.bus.onData = { [unowned self] in self.latency.pageHandedToBus(nowNs: MonotonicClock.nowNs) }
            bridge.onPacket = { [unowned self] packet in
                self.latency.packetArrived(packet, nowNs: MonotonicClock.nowNs, pagesPending: p.hasPendingPages)
            }
            bridge.onPacketDone = { [unowned self] in self.latency.packetHandled(pagesPending: p.hasPendingPages) }
        }

        // The sensor bridge.
        bridge.onInputs = { [unowned self] in self.afterInputs() }
        try bridge.start()

        // The 1 Hz tick (which the core's own deadlines pull forward, see `tick`) and the wall clock.
        scheduleTick()
        loop.scheduleRepeating("wallclock", everyMs: Self.wallClockPeriodMs) { [unowned self] in
            self.runtime.handle(.wallClock(SystemWallClock.now(), at: self.now))
            self.afterInputs()
        }

        // Buttons.
        if options.buttons { attachButtons() }
        buzzer?.loop = loop
        buzzer?.log = log

        // The control socket.
        let path = settings.controlSocket
        try AtomicFiles.makeDirectories(AtomicFiles.directoryName(of: path))
        let server = try ControlSocketServer(path: path, loop: loop) { [unowned self] line in self.controlLine(line) }
        stream.sink = { [unowned server] line in server.broadcast(line) }
        server.onDrop = { [unowned self] reason in self.log.log(.warning, "control client dropped: \(reason.rawValue)") }
        control = server
        log.log(.info, "control socket \(path)")

        if let ms = options.measureLatencyMs {
            loop.scheduleTimer("measure.end", afterMs: ms) { [unowned self] in self.finishMeasurement() }
        }
        afterInputs()
    }

    func attachButtons() {
        let c = config.buttons
        let bias: GPIOBias
        switch c.bias {
        case .asIs: bias = .asIs
        case .pullUp: bias = .pullUp
        case .pullDown: bias = .pullDown
        case .disabled: bias = .disabled
        }
        let lines = settings.buttonLines
        do {
            let b = try GPIOButtons(chip: c.chip, offsets: lines.map(\.offset), activeLow: c.activeLow, bias: bias)
            var initial: [Button: Bool] = [:]
            if let levels = try? b.currentLevels() {
                for (i, l) in levels.enumerated() where i < lines.count { initial[lines[i].button] = l }
            }
            debouncer = ButtonDebouncer(debounceMs: Int64(c.debounceMs), initiallyPressed: initial)
            try b.attach(to: loop) { [unowned self] index, active, timestampNs in
                self.edge(index, active, timestampNs)
            }
            buttons = b
            buttonsState = "ok (\(c.chip) lines \(lines.map { String($0.offset) }.joined(separator: ",")))"
            log.log(.info, "buttons: \(buttonsState)")
        } catch {
            hardwareErrors += 1
            buttonsState = "failed: \(error)"
            log.log(.error, "buttons: \(error); running without the buttons (use `bikecomputer ctl` to control the ride)")
        }
    }

    // MARK: Handlers

    func edge(_ index: Int, _ active: Bool, _ timestampNs: UInt64) {
        let lines = settings.buttonLines
        guard index < lines.count else { return }
        var ms = Int64(timestampNs / 1_000_000)
        let nowMs = loop.nowMs
        if ms > nowMs || nowMs - ms > 10_000 { ms = nowMs } // a timestamp on another clock
        debouncer.edge(lines[index].button, pressed: active, at: MonotonicInstant(milliseconds: ms))
        armDebounce()
    }

    func armDebounce() {
        if let t = debounceTimer { loop.cancelTimer(t) }
        debounceTimer = nil
        guard let d = debouncer.nextDeadline else { return }
        debounceTimer = loop.scheduleTimer("buttons.debounce", atMs: d.milliseconds, periodMs: nil) { [unowned self] in
            self.debounceTimer = nil
            for e in self.debouncer.advance(to: self.now) { self.runtime.handle(.button(e)) }
            self.armDebounce()
            self.afterInputs()
        }
    }

    /// The board's tick: sensor timeouts, the core's tick, the subscribers' metrics line. It runs
    /// at the core's deadlines (while riding, the 1 Hz record instants) and otherwise a second
    /// after the last one, so a riding device wakes once a second for it, not twice.
    func tick() {
        let t = now
        bridge.tick(at: t)
        runtime.handle(.tick(t))
        // The metrics line at most about once a second, and only built when somebody follows.
        let metricsDue = lastMetricsAtMs.map { t.milliseconds - $0 >= Self.metricsPeriodMs } ?? true
        let followed = metricsDue && (control?.subscriberCount ?? 0) > 0
        if followed { lastMetricsAtMs = t.milliseconds }
        runtime.sample(stream, metrics: followed, at: t)
        let syncs = journal.counters.syncs
        if syncs != lastSyncs {
            lastSyncs = syncs
            lastSyncAtMs = t.milliseconds
        }
        scheduleTick()
        afterInputs()
    }

    /// (Re)arms the fallback tick a second from now.
    func scheduleTick() {
        if let t = tickTimer { loop.cancelTimer(t) }
        tickTimer = loop.scheduleTimer("tick", atMs: loop.nowMs + Self.tickPeriodMs, periodMs: nil, fallbackTick)
    }

    /// Made once, so rearming the tick every second does not allocate a closure context.
    lazy var fallbackTick: () -> Void = { [unowned self] in
        self.tickTimer = nil
        self.tick()
    }

    /// After any input: the core's next deadline and the ride-active file.
    func afterInputs() {
        let d = runtime.nextDeadline
        if d != armedCoreDeadline {
            if let t = coreDeadlineTimer { loop.cancelTimer(t) }
            coreDeadlineTimer = nil
            armedCoreDeadline = d
            if let d {
                coreDeadlineTimer = loop.scheduleTimer("core.deadline", atMs: d.milliseconds, periodMs: nil) { [unowned self] in
                    self.coreDeadlineTimer = nil
                    self.armedCoreDeadline = nil
                    self.tick()
                }
            }
        }
        let active = runtime.state.isRideInProgress
        if active != rideFlag.isSet, !rideFlag.set(active) {
            log.log(.error, "ride-active file: \(rideFlag.lastError ?? "?")")
        }
    }

    /// One page per loop turn: the first step runs in the turn that queued the pages, the rest
    /// in the following turns (a timer 1 ms ahead never fires in the current turn).
    func scheduleFlush() {
        guard flushTimer == nil else { return }
        flushTimer = loop.scheduleTimer("display.flush", atMs: loop.nowMs, periodMs: nil) { [unowned self] in self.flush() }
    }

    func flush() {
        flushTimer = nil
        let pending: Bool
        if let s = probeScreen {
            s.flushStep(at: now)
            pending = s.hasPendingPages
        } else if let s = i2cScreen {
            s.flushStep(at: now)
            pending = s.hasPendingPages
        } else {
            pending = false
        }
        if pending {
            flushTimer = loop.scheduleTimer("display.flush", atMs: loop.nowMs + 1, periodMs: nil) { [unowned self] in self.flush() }
        }
    }

    // MARK: Control socket

    func controlLine(_ line: String) -> ControlSocketServer.Reply {
        // Subscriptions and the companion's pairing code (docs/companion.md).
        if let special = ControlProtocol.parseStreamRequest(line) {
            switch special {
            case .failure(let e):
                return .init(ControlProtocol.format(e), isError: true)
            case .success(.subscribe(let from, let id)):
                let sub = stream.subscribe(from: from, streamID: id, core: runtime.core, at: now)
                return .subscribing(sub.reply, then: sub.lines)
            case .success(.pairingCode(let code)):
                // The unit draws six-digit codes (the companion issues those).
                var shown: UInt32?
                if let code {
                    guard code.count <= 6, let n = UInt32(code) else {
                        return .init("error \(runtime.core.state): the unit shows pairing codes of up to six digits", isError: true)
                    }
                    shown = n
                }
                stream.setPairingCode(code)
                runtime.command(.showPairingCode(shown), at: now)
                afterInputs()
                return .init(code == nil ? "ok pairing code cleared" : "ok pairing code shown")
            }
        }
        switch ControlProtocol.parse(line) {
        case .failure(let e):
            return .init(ControlProtocol.format(e), isError: true)
        case .success(.help):
            return .init(ControlProtocol.formatHelp())
        case .success(.status):
            return .init("ok " + statusJSON())
        case .success(.command(let c)):
            let t = now
            let reply = runtime.command(c, at: t)
            afterInputs()
            log.log(reply?.ok == false ? .warning : .info, "control: \(ControlProtocol.word(c)) → \(reply.map { $0.message } ?? "accepted")")
            if let reply { return .init(ControlProtocol.format(reply)) }
            return .init(ControlProtocol.formatAccepted(c, state: runtime.core.state))
        }
    }

    func statusJSON() -> String {
        let t = now
        let core = runtime.core
        let screen = core.screen
        var sensors: [SensorStatus] = []
        for role in SensorRole.allCases {
            sensors.append(SensorStatus(role, screen.sensors[Int(role.rawValue)], batteryPercent: screen.sensorBatteryPercent[Int(role.rawValue)]))
        }
        let stats = loop.stats
        let handlers = stats.handlers.map {
            StatusReport.HandlerLatency(name: $0.name, calls: $0.calls, windowMaxUs: $0.windowMaxNs / 1000, windowP99Us: $0.windowP99Ns / 1000)
        }
        let jc = journal.counters
        let health = StatusReport.JournalHealth(condition: journal.condition, unsyncedRecords: journal.writer.pendingCount,
                                                lastSyncAgoMs: lastSyncAtMs.map { t.milliseconds - $0 },
                                                writeErrors: jc.failedCommits)
        let report = StatusReport(state: core.state, timerMs: screen.timerMs,
                                  distanceM: screen.metrics[Int(Metric.distance.rawValue)], sensors: sensors,
                                  loopTurns: stats.turns, loopTurnMaxUs: stats.turnMaxNs / 1000, handlers: handlers,
                                  journal: health, uptimeMs: t.milliseconds - startMs)
        // Fields beyond StatusReport's: live values, recovery, bridge, hardware, display.
        var w = JSONWriter(pretty: false)
        w.beginObject()
        w.string("ride_id", core.header?.rideID.description)
        w.bool("recovered", recoveredRide != nil || screen.recovered)
        w.string("recovered_ride", recoveredRide?.description)
        w.beginObject("live")
        for m in [Metric.heartRate, .power, .speed, .cadence] {
            w.number(m.description, screen.metrics[Int(m.rawValue)], decimals: 2)
        }
        w.endObject()
        let src = bridge.sensors.status
        w.beginObject("bridge")
        w.bool("connected", bridge.isConnected)
        w.int("connections", Int64(clamping: bridge.connectionsAccepted))
        w.int("disconnections", Int64(clamping: bridge.disconnections))
        w.int("frames", Int64(clamping: src.framesReceived))
        w.int("samples", Int64(clamping: src.samplesEmitted))
        w.string("counters", src.logLine)
        w.endObject()
        // Every paired sensor: its state and last battery level (`bikecomputer sensors`).
        w.beginArray("paired")
        for r in bridge.sensors.source.sensorReports {
            w.beginObject()
            w.string("sensor", r.sensor.identity.description)
            w.string("state", r.state.description)
            w.int("battery_percent", r.batteryPercent.map(Int64.init))
            w.endObject()
        }
        w.endArray()
        w.beginObject("hardware")
        w.string("display", i2cScreen.map { $0.isAnswering ? displayState : $0.status } ?? displayState)
        w.string("buttons", buttonsState)
        w.int("errors", Int64(clamping: hardwareErrors))
        w.endObject()
        w.beginObject("display")
        let ds = probeScreen.map { ($0.pagesSent, $0.busErrors) } ?? i2cScreen.map { ($0.pagesSent, $0.busErrors) } ?? (0, 0)
        w.int("pages_sent", Int64(clamping: ds.0))
        w.int("bus_errors", Int64(clamping: ds.1))
        w.endObject()
        w.beginObject("journal_counters")
        w.int("records_durable", Int64(clamping: jc.recordsDurable))
        w.int("syncs", Int64(clamping: jc.syncs))
        w.int("bytes_written", Int64(clamping: jc.bytesWritten))
        w.int("records_dropped", Int64(clamping: jc.recordsDropped))
        w.endObject()
        w.string("slowest_handler", stats.slowestHandler?.name)
        w.int("log_errors", Int64(clamping: log.errors))
        w.endObject()
        var base = report.json()
        base.removeLast() // "}"
        return base + "," + String(w.text.dropFirst())
    }

    // MARK: Shutdown and measurement

    func shutdown(signal signo: Int32) {
        let t = now
        stoppedBy = signo
        log.log(.info, "signal \(signo == SIGTERM ? "SIGTERM" : "SIGINT"): shutting down")
        runtime.shutdown(at: t)
        i2cScreen?.blank()
        probeScreen?.blank()
        loop.stop()
    }

    func finishMeasurement() {
        var w = JSONWriter(pretty: false)
        w.beginObject()
        latency.write(into: &w)
        let stats = loop.stats
        w.beginArray("handlers")
        for h in stats.handlers {
            w.beginObject()
            w.string("name", h.name)
            w.int("calls", Int64(clamping: h.calls))
            w.int("window_max_us", Int64(clamping: h.windowMaxNs / 1000))
            w.int("window_p99_us", Int64(clamping: h.windowP99Ns / 1000))
            w.int("max_ever_us", Int64(clamping: h.maxEverNs / 1000))
            w.endObject()
        }
        w.endArray()
        let slowest = stats.handlers.max { $0.maxEverNs < $1.maxEverNs }
        w.string("slowest_handler", slowest?.name)
        w.int("slowest_handler_max_us", slowest.map { Int64(clamping: $0.maxEverNs / 1000) })
        w.int("turn_max_us", Int64(clamping: stats.turnMaxNs / 1000))
        w.int("turns", Int64(clamping: stats.turns))
        w.int("frames", Int64(clamping: bridge.sensors.status.framesReceived))
        w.endObject()
        let bytes = Array((w.text + "\n").utf8)
        _ = bytes.withUnsafeBytes { Glibc.write(1, $0.baseAddress, $0.count) }
        shutdown(signal: SIGTERM)
    }

    /// Runs the loop until a signal; returns the exit status.
    func run() -> Int32 {
        trampolineTarget = self
        do {
            while stoppedBy == nil {
                try loop.runOnce(maxWaitMs: -1)
            }
        } catch {
            log.log(.error, "run loop failed: \(error)")
            exitCode = 1
            runtime.shutdown(at: now)
        }
        trampolineTarget = nil
        bridge.close()
        control?.close()
        if rideFlag.isSet { rideFlag.set(false) }
        log.log(.info, "stopped; journal durable (\(journal.counters.recordsDurable) records)")
        return exitCode
    }
}

/// Sounds alerts on the buzzer/LED line: on at the alert, off `pulseMs` later (a loop timer;
/// nothing blocks).
final class BuzzerAlert: AlertOutputPort {
    static let pulseMs: Int64 = 300
    let line: GPIOOutputLine
    weak var loop: EpollEventLoop?
    weak var log: StderrLog?
    var offTimer: TimerID?
    var errors: UInt64 = 0

    init(line: GPIOOutputLine) { self.line = line }

    func pulse(for alert: Alert, at now: MonotonicInstant) {
        guard let loop else { return }
        set(true)
        if let t = offTimer { loop.cancelTimer(t) }
        offTimer = loop.scheduleTimer("buzzer.off", afterMs: Self.pulseMs) { [unowned self] in
            self.offTimer = nil
            self.set(false)
        }
    }

    func set(_ on: Bool) {
        do { try line.set(active: on) } catch {
            errors &+= 1
            log?.log(.error, "buzzer: \(error)")
        }
    }
}

/// The loop's signal handler is registered before the runner exists (so the signal mask is set
/// first); it forwards to the runner.
nonisolated(unsafe) var trampolineTarget: BoardRunner?

/// "Sensor frame arrives → first changed display page handed to the bus", per frame that
/// changed the screen while no page was waiting. Two clocks: from the bridge's send time (the
/// bridge stamps CLOCK_MONOTONIC µs into the frame: includes the socket and the epoll wake-up)
/// and from the start of the loop's packet handler.
struct LatencyRecorder {
    static let samplesMax = 1 << 20
    var fromSendUs: [UInt32] = []
    var fromHandlerUs: [UInt32] = []
    var candidate: (sentNs: UInt64, arrivedNs: UInt64, wasPending: Bool)?
    var open: (sentNs: UInt64, arrivedNs: UInt64)?
    var framesWithoutChange: UInt64 = 0
    var framesWhilePending: UInt64 = 0

    init() {
        fromSendUs.reserveCapacity(1 << 16)
        fromHandlerUs.reserveCapacity(1 << 16)
    }

    mutating func packetArrived(_ packet: UnsafeRawBufferPointer, nowNs: UInt64, pagesPending: Bool) {
        guard packet.count >= 10, packet[1] == 3 else { candidate = nil; return } // data frames only
        var us: UInt64 = 0
        for i in (2..<10).reversed() { us = us << 8 | UInt64(packet[i]) }
        candidate = (us &* 1000, nowNs, pagesPending)
    }

    mutating func packetHandled(pagesPending: Bool) {
        guard let c = candidate else { return }
        candidate = nil
        if c.wasPending { framesWhilePending += 1; return }
        guard pagesPending else { framesWithoutChange += 1; return }
        if open == nil { open = (c.sentNs, c.arrivedNs) }
    }

    mutating func pageHandedToBus(nowNs: UInt64) {
        guard let o = open else { return }
        open = nil
        guard fromSendUs.count < Self.samplesMax else { return }
        let fromSend = nowNs >= o.sentNs && o.sentNs > 0 ? (nowNs - o.sentNs) / 1000 : UInt64(UInt32.max)
        fromSendUs.append(UInt32(clamping: fromSend))
        fromHandlerUs.append(UInt32(clamping: (nowNs &- o.arrivedNs) / 1000))
    }

    static func percentile(_ sorted: [UInt32], _ p: Double) -> Int64? {
        guard !sorted.isEmpty else { return nil }
        let rank = max(1, Int((p / 100 * Double(sorted.count)).rounded(.up)))
        return Int64(sorted[min(rank, sorted.count) - 1])
    }

    func write(into w: inout JSONWriter) {
        for (key, values) in [("from_send_us", fromSendUs), ("from_handler_us", fromHandlerUs)] {
            let s = values.sorted()
            w.beginObject(key)
            w.int("count", Int64(s.count))
            w.int("p50", Self.percentile(s, 50))
            w.int("p99", Self.percentile(s, 99))
            w.int("max", s.last.map(Int64.init))
            w.endObject()
        }
        w.int("frames_without_change", Int64(clamping: framesWithoutChange))
        w.int("frames_while_pages_pending", Int64(clamping: framesWhilePending))
    }
}
