// BoardWiring: the device runtime on a run loop with the board's components — the sensor
// bridge, the buttons, the display, the buzzer, the control socket and the companion link —
// each with one lifecycle (start on the loop, status, close), composed by `BoardWiring`. It is
// written against the `EventLoop` protocol only, so `bikecomputer run` puts it on the epoll loop
// and the tests run the same wiring on `ManualEventLoop`, in process. It owns scheduling (the
// 1 Hz tick, the core's deadline timer, flush steps, debounce timers) and hardware lifecycles;
// it decides nothing about rides (that is AppCore's, through `DeviceRuntime`), and parses no
// input itself (the runtime does).
//
// Must not import: Simulation, Foundation, Training, RideFiles.
import AppCore
import BoardIO
import Configuration
import Control
import Device
import DeviceAdapters
import Glibc
import Journal
import RideModel
import Sensors

/// A piece of the board on the run loop, with one lifecycle: made (its hardware opened, missing
/// hardware noted), started on the wiring's loop, asked for its status, closed at shutdown.
public protocol BoardComponent: AnyObject {
    /// Registers its descriptors and timers with the wiring's loop. Missing or failing hardware
    /// is logged, counted (`hardwareErrors`) and shown by `state`, never thrown; only what the
    /// device cannot run without (the bridge socket, the control socket) throws.
    func start(_ board: BoardWiring) throws
    /// One line for `ctl status`: "ok (...)", "disabled (...)", "failed: ...".
    var state: String { get }
    /// Hardware errors since it was made (their sum is `hardware.errors` in `ctl status`).
    var hardwareErrors: UInt64 { get }
    /// Its own figures in `ctl status` (an object under its name; nothing when it has none).
    func writeStatus(into w: inout JSONWriter)
    /// Deregisters from the loop and closes what it opened (shutdown).
    func close()
}

extension BoardComponent {
    public func writeStatus(into w: inout JSONWriter) {}
}

/// The board: the runtime, the loop and the components, and the run loop's own timers (the 1 Hz
/// tick, the core's deadline, the wall clock). Made by `boot`, the one start-up sequence of
/// `bikecomputer run` (and of the in-process tests): journal recovery, hardware, the runtime's
/// boot, then every component started on the loop.
public final class BoardWiring {
    public struct Options {
        /// A file that exists while a ride is in progress (nil: none).
        public var rideActiveFile: String?
        /// Wall-clock readings handed to the core this often (NTP may set the clock after boot).
        public var wallClockPeriodMs: Int64 = 60_000
        /// How often the wall clock's trust (the kernel's sync state) is looked at: a change
        /// reaches the core this soon (a ride begun on a stale clock is dated once it is right).
        public var wallClockPollMs: Int64 = 1_000
        /// The wall clock (the system's on the board; a fixed one in tests).
        public var wallClock: () -> WallClockTime = SystemWallClock.now
        /// Measurement mode: after this long, print the latency figures and stop.
        public var measureLatencyMs: Int64?
        /// A stream id new at every start, so a reconnecting companion knows the device restarted.
        public var streamID: UInt64 = 0
        /// The config file pairing and forgetting rewrite (the one loaded, else the default path),
        /// and what it held at start (its [[sensor]] tables).
        public var configPath: String = DeviceConfig.defaultPath
        public var config: DeviceConfig = .defaults
        /// The ride files' own status fields (`BoardRideFiles`: how they are synced, what a
        /// background write costs a turn), written into `status`'s `ride_files`.
        public var rideFilesStatus: ((inout JSONWriter) -> Void)?
        /// Where a power-off is asked for (the request file on the board; nil: nowhere).
        public var powerPort: PowerPort?
        /// CLOCK_MONOTONIC ms when the process started (boot to ride-ready, `status` → `boot`).
        public var processStartMs: Int64?
        /// The ride files' completion eventfd and what takes its completions
        /// (`BoardRideFiles.completionDescriptor`, `collectCompletions`): in the epoll set, a
        /// ride-file step waiting for the card runs when the card answers, never polled.
        public var rideFileCompletions: (descriptor: FileDescriptor, collect: () -> Void)?

        public init() {}
    }

    /// The longest time between two ticks.
    public static let tickPeriodMs: Int64 = 1_000

    public let loop: EventLoop
    public let runtime: DeviceRuntime
    public let journal: FlashJournal
    public let options: Options
    /// Every log line of the board goes through this (it counts the errors for `status`).
    public let log: CountingLog
    public let bridge: BridgeLink
    public let buttons: ButtonsComponent
    public let display: DisplayComponent
    public let buzzer: BuzzerComponent
    public let control: ControlComponent
    public let companion: CompanionLink
    public let gps: GpsComponent
    public let barometer: BarometerComponent
    public let sensors: SensorsComponent
    /// The battery's fuel gauge (docs/power.md).
    public let battery: BatteryComponent
    /// The journal's background syncs (the io_uring completion eventfd), issue 17 item 6.
    public let journalSync: JournalSyncComponent
    /// Every component, in start order.
    public var components: [BoardComponent] { [display, buzzer, bridge, buttons, control, companion, gps, barometer, sensors, journalSync, battery] }
    let rideFlag: RideActiveFlag?
    public let startMs: Int64
    public private(set) var recoveredRide: RideID?
    var coreDeadlineTimer: TimerID?
    var armedCoreDeadline: MonotonicInstant?
    var rideFileTimer: TimerID?
    var rideFileRegistration: IORegistration?
    var armedRideFileDeadline: MonotonicInstant?
    var tickTimer: TimerID?
    var lastSyncs: UInt64 = 0
    var wallClockFedAtMs: Int64 = 0
    var wallClockTrusted = false
    var lastSyncAtMs: Int64?
    /// Ticks run (the fallback second and the core's deadlines).
    public private(set) var ticks: UInt64 = 0
    /// Set when the wiring stopped (a signal, the end of a measurement, a failed loop).
    public private(set) var stoppedBy: Int32?
    public var isStopped: Bool { stoppedBy != nil }
    var latency: LatencyRecorder?

    /// The one start-up sequence: the runtime boots on the journal `opened` found (an
    /// interrupted ride recovered into its core) with the display and buzzer as its screen and
    /// alert ports and the buttons' levels, then every component starts on `loop`.
    public init(loop: EventLoop, opened: (journal: FlashJournal, core: AppCore, report: RecoveryReport),
                archive: RideArchivePort, settings: DeviceSettings, devices: BoardDevices, options: Options,
                log: CountingLog) throws {
        self.loop = loop
        self.options = options
        self.log = log
        journal = opened.journal
        startMs = loop.nowMs
        let now = MonotonicInstant(milliseconds: startMs)
        recoveredRide = opened.report.recoveredRide
        rideFlag = options.rideActiveFile.map(RideActiveFlag.init)
        rideFlag?.removeStale()

        display = DisplayComponent(devices.display, state: devices.displayState, log: self.log)
        buzzer = BuzzerComponent(devices.buzzer, state: devices.buzzerState, errors: devices.buzzerErrors, log: log)
        let lines = ButtonsComponent(devices.buttons, lines: settings.buttonLines, state: devices.buttonsState,
                                     errors: devices.buttonsErrors, log: log)
        buttons = lines
        runtime = DeviceRuntime.boot((opened.journal, opened.core, opened.report), archive: archive,
                                     screen: display.screen, alertOutput: buzzer.isPresent ? buzzer : nil, log: self.log,
                                     sensors: settings.dataSource, buttonDebounceMs: settings.buttonDebounceMs,
                                     initiallyPressed: lines.initiallyPressed, stepsRideFiles: true,
                                     wall: options.wallClock(), at: now)
        let stream = ControlStream(streamID: options.streamID)
        _ = runtime.addObserver(stream)
        companion = CompanionLink(stream)
        bridge = BridgeLink(transport: settings.bridgeSerialBaud.map { .serial(path: settings.bridgePath, baud: $0) }
                                ?? .unixSocket(path: settings.bridgePath),
                            loop: loop, runtime: runtime, log: self.log)
        control = ControlComponent(path: settings.controlSocket, log: self.log)
        gps = GpsComponent(devices.gps, log: self.log)
        barometer = BarometerComponent(devices.barometer, state: devices.barometerState, errors: devices.barometerErrors, log: self.log)
        sensors = SensorsComponent(configPath: options.configPath, initial: options.config, log: self.log)
        journalSync = JournalSyncComponent(journal: opened.journal)
        battery = BatteryComponent(settings: settings.app.battery, where: devices.batteryWhere, open: devices.batteryOpen, log: self.log)
        runtime.powerPort = options.powerPort
        if options.measureLatencyMs != nil { latency = LatencyRecorder() }
        try startComponents()
    }

    public var now: MonotonicInstant { MonotonicInstant(milliseconds: loop.nowMs) }

    func startComponents() throws {
        for c in components { try c.start(self) }
        if let files = options.rideFileCompletions {
            rideFileRegistration = try loop.register(files.descriptor, "ridefile.sync", interest: .read) { [unowned self] _ in
                files.collect()
                self.runtime.rideFileStorageProgress(at: self.now)
                self.afterInputs()
            }
            runtime.rideFileCompletionsSignalled = true
        }
        // The 1 Hz tick (which the core's own deadlines pull forward, see `tick`) and the wall clock.
        scheduleTick()
        // The wall clock goes to the core every wallClockPeriodMs, and within wallClockPollMs of
        // the kernel's clock becoming synchronised or losing it (issue 17: a Pi has no RTC).
        wallClockFedAtMs = loop.nowMs
        wallClockTrusted = options.wallClock().trusted
        loop.scheduleRepeating("wallclock", everyMs: min(options.wallClockPollMs, options.wallClockPeriodMs)) { [unowned self] in
            let wall = self.options.wallClock()
            let due = self.loop.nowMs - self.wallClockFedAtMs >= self.options.wallClockPeriodMs
            guard due || wall.trusted != self.wallClockTrusted else { return }
            self.wallClockFedAtMs = self.loop.nowMs
            self.wallClockTrusted = wall.trusted
            self.runtime.wallClock(wall, at: self.now)
            self.afterInputs()
        }
        if let ms = options.measureLatencyMs { startMeasurement(ms) }
        afterInputs()
    }

    // MARK: Scheduling

    /// After any input: re-arms the core's deadline timer when the deadline moved, and keeps the
    /// ride-active file in step. Components call it after feeding the runtime.
    public func afterInputs() {
        sensors.process()
        let d = runtime.nextDeadline
        if d != armedCoreDeadline {
            if let t = coreDeadlineTimer { loop.cancelTimer(t) }
            coreDeadlineTimer = nil
            armedCoreDeadline = d
            if let d {
                coreDeadlineTimer = loop.scheduleTimer("core.deadline", atMs: d.milliseconds, periodMs: nil, coreDeadline)
            }
        }
        // Ride files are written one step per loop turn (issue 17 item 6): the buttons, the
        // display and the sensors are served between the steps.
        let f = runtime.rideFileDeadline
        if f != armedRideFileDeadline {
            if let t = rideFileTimer { loop.cancelTimer(t) }
            rideFileTimer = nil
            armedRideFileDeadline = f
            if let f { rideFileTimer = loop.scheduleTimer("ridefile.step", atMs: f.milliseconds, periodMs: nil, rideFileStep) }
        }
        if let flag = rideFlag {
            // Until the ended ride's files are on the card too: the USB drive is rebuilt once,
            // with the whole ride, when the flag goes (issue 27; a rebuild started at the end of
            // the ride missed the files written while it ran: systemd's path unit does not watch
            // while the unit it started runs).
            let active = runtime.state.isRideInProgress || runtime.rideFilesPending > 0
            if active != flag.isSet, !flag.set(active) { log.log(.error, "ride-active file: \(flag.lastError ?? "?")") }
        }
    }

    /// One step of the ride file being written; the next is armed by `afterInputs`.
    lazy var rideFileStep: () -> Void = { [unowned self] in
        self.rideFileTimer = nil
        self.armedRideFileDeadline = nil
        self.runtime.workOnRideFiles(at: self.now)
        self.afterInputs()
    }

    /// The core's deadline timer's handler, made once (re-arming it allocates no closure).
    lazy var coreDeadline: () -> Void = { [unowned self] in
        self.coreDeadlineTimer = nil
        self.armedCoreDeadline = nil
        self.tick()
    }

    /// The board's tick: sensor timeouts, the core's tick, the subscribers' metrics line. It runs
    /// at the core's deadlines (while riding, the 1 Hz record instants) and otherwise a second
    /// after the last one, so a riding device wakes once a second for it, not twice.
    public func tick() {
        buttons.readQueuedEdges() // a release not read yet is not a long press
        let t = now
        ticks &+= 1
        runtime.tick(at: t)
        companion.tick(self, at: t)
        sensors.tick()
        bridge.logBadInput(at: t)
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

    // MARK: Control

    /// One control-socket line: the runtime answers it (its status with the board's figures).
    public func controlLine(_ line: String) -> ControlAnswer {
        let answer = runtime.control(line, stream: companion.stream, at: now) { statusJSON() }
        afterInputs()
        return answer
    }

    /// `ctl status`: the runtime's state, the loop, the journal and every component.
    public func statusJSON() -> String {
        let t = now
        let core = runtime.core
        let screen = core.screen
        let stats = loop.stats
        let jc = journal.counters
        let report = StatusReport(
            state: core.state, timerMs: screen.timerMs, distanceM: screen[.distance],
            sensors: SensorRole.allCases.map { SensorStatus($0, screen.sensor($0), batteryPercent: screen.sensorBatteryPercent[Int($0.rawValue)]) },
            loopTurns: stats.turns, loopTurnMaxUs: stats.turnMaxNs / 1000, loopSlowTurns: stats.slowTurns.map { .init(ms: $0.ms, turns: $0.turns) },
            handlers: stats.handlers.map {
                StatusReport.HandlerLatency(name: $0.name, calls: $0.calls, windowMaxUs: $0.windowMaxNs / 1000, windowP99Us: $0.windowP99Ns / 1000,
                                            totalUs: $0.totalNs / 1000)
            },
            journal: StatusReport.JournalHealth(condition: runtime.storageCondition, unsyncedRecords: journal.writer.pendingCount,
                                                lastSyncAgoMs: lastSyncAtMs.map { t.milliseconds - $0 }, writeErrors: jc.failedCommits),
            uptimeMs: t.milliseconds - startMs)
        // Fields beyond StatusReport's: live values, recovery, the components, the journal.
        var w = JSONWriter(pretty: false)
        w.beginObject()
        w.string("ride_id", core.header?.rideID.description)
        // The state the screen shows: `state` (the core's) changes at the press, this one once
        // the change is durable (ConfirmationGate), as `lap` below.
        w.string("state_shown", runtime.stateShown.description)
        // The course chosen for the ride (Courses screen, `ctl course load`, the companion), or null.
        w.string("course", core.course?.name)
        // What the screen shows ("summary(page: 1)", "idle", ...): a press that changed nothing
        // on the panel is told apart from one the core never took.
        w.string("screen", "\(screen.mode)")
        // The lap the screen shows: it changes only once the lap is durable (ConfirmationGate).
        w.int("lap", Int64(runtime.lapNumberShown))
        // The ride's 1 Hz records a late tick skipped (counted, not made up: docs/statistics.md).
        w.int("records_skipped", Int64(clamping: core.recordsSkipped))
        w.bool("recovered", recoveredRide != nil || screen.recovered)
        w.string("recovered_ride", recoveredRide?.description)
        w.beginObject("live")
        for m in [Metric.heartRate, .power, .speed, .cadence] { w.number(m.description, screen[m], decimals: 2) }
        w.endObject()
        writeRadar(into: &w)
        for c in components { c.writeStatus(into: &w) }
        // Every paired sensor: its state and last battery level (`bikecomputer sensors`).
        w.beginArray("paired")
        for r in runtime.sensorReports {
            w.beginObject()
            w.string("sensor", r.sensor.identity.description)
            w.string("state", r.state.description)
            w.int("battery_percent", r.batteryPercent.map(Int64.init))
            w.endObject()
        }
        w.endArray()
        w.beginObject("hardware")
        w.string("display", display.state)
        w.string("buttons", buttons.state)
        w.int("errors", Int64(clamping: components.reduce(0) { $0 &+ $1.hardwareErrors }))
        w.endObject()
        w.beginObject("journal_counters")
        w.int("records_durable", Int64(clamping: jc.recordsDurable))
        w.int("syncs", Int64(clamping: jc.syncs))
        w.int("bytes_written", Int64(clamping: jc.bytesWritten))
        w.int("records_dropped", Int64(clamping: jc.recordsDropped))
        w.endObject()
        // Ride files: waiting (a full or failing card keeps them, retried), written, failures.
        w.beginObject("ride_files")
        w.int("pending", Int64(runtime.rideFilesPending))
        w.int("written", Int64(clamping: runtime.rideFilesWritten))
        w.int("failures", Int64(clamping: runtime.archiveFailures))
        w.string("last_error", runtime.lastRideFileError)
        options.rideFilesStatus?(&w)
        w.endObject()
        writeBootStamps(into: &w)
        w.string("journal_disabled", journal.disabledReason)
        // Control replies held until their state change was durable, and those sent without.
        w.int("control_replies_delayed", Int64(clamping: runtime.repliesDelayedForDurability))
        w.int("control_replies_not_durable", Int64(clamping: runtime.repliesNotDurable))
        w.string("slowest_handler", stats.slowestHandler?.name)
        w.int("log_errors", Int64(clamping: log.errors))
        w.endObject()
        var base = report.json()
        base.removeLast() // "}"
        return base + "," + String(w.text.dropFirst())
    }

    /// `radar`: the rear radar as the screen has it (the radar role's state, the column's
    /// vehicles: none while it is not connected, which the column draws as WAIT, OLD or LOST,
    /// never as a clear road), the beeps the core sounded since start, and the ride's counts.
    func writeRadar(into w: inout JSONWriter) {
        let core = runtime.core
        let picture = core.screen.radar
        w.beginObject("radar")
        w.string("state", core.screen.sensor(.radar).description)
        w.beginArray("vehicles")
        for i in 0..<picture.count {
            let t = picture[i]
            w.beginObject()
            w.number("range_m", t.rangeM, decimals: 1)
            w.number("closing_speed_mps", t.closingSpeedMps, decimals: 2)
            w.string("threat", t.threat.description)
            w.endObject()
        }
        w.endArray()
        let alerting = core.radarAlerting
        w.int("vehicle_beeps", Int64(clamping: alerting.vehicleBeeps))
        w.int("clear_beeps", Int64(clamping: alerting.clearBeeps))
        w.int("beeps_held_back", Int64(clamping: alerting.beepsHeldBack))
        if let ride = core.builder?.radar {
            w.beginObject("ride")
            w.int("vehicles", Int64(ride.vehicles))
            w.int("alerts", Int64(ride.alerts))
            w.string("max_threat", ride.maxThreat.description)
            w.number("max_closing_speed_mps", ride.maxClosingSpeedMps, decimals: 2)
            w.endObject()
        } else {
            w.raw("ride", "null")
        }
        w.endObject()
    }

    // MARK: Shutdown and measurement

    /// SIGTERM/SIGINT: the journal durable, the display dark, the loop stopped.
    public func shutdown(signal signo: Int32) {
        guard stoppedBy == nil else { return }
        stoppedBy = signo
        log.log(.info, "signal \(signo == SIGTERM ? "SIGTERM" : "SIGINT"): shutting down")
        runtime.shutdown(at: now)
        display.blank()
        loop.stop()
    }

    /// The run loop failed: the journal is made durable, the wiring stops.
    public func loopFailed(_ error: any Error) {
        log.log(.error, "run loop failed: \(error)")
        runtime.shutdown(at: now)
        stoppedBy = stoppedBy ?? -1
    }

    /// Closes every component (after the loop stopped) and clears the ride-active file.
    public func close() {
        for c in components.reversed() { c.close() }
        if let r = rideFileRegistration { loop.deregister(r) }
        rideFileRegistration = nil
        if let flag = rideFlag, flag.isSet { flag.set(false) }
        log.log(.info, "stopped; journal durable (\(journal.counters.recordsDurable) records)")
    }

    func startMeasurement(_ ms: Int64) {
        let handed: () -> Void = { [unowned self] in self.latency?.pageHandedToBus(nowNs: MonotonicClock.nowNs) }
        let probe: any DisplayUnit
        if let oled = display.unit as? DisplayScreen<LatencyProbeBus> {
            oled.bus.onData = handed
            probe = oled
        } else if let lcd = display.unit as? LatencyProbeLCD {
            lcd.bus.port.onData = handed
            probe = lcd
        } else {
            log.log(.error, "measurement mode needs the latency probe display")
            return
        }
        bridge.onPacket = { [unowned self, unowned probe] packet in
            self.latency?.packetArrived(packet, nowNs: MonotonicClock.nowNs, pagesPending: probe.hasPendingPages)
        }
        bridge.onPacketDone = { [unowned self, unowned probe] in self.latency?.packetHandled(pagesPending: probe.hasPendingPages) }
        loop.scheduleTimer("measure.end", afterMs: ms) { [unowned self] in self.finishMeasurement() }
    }

    /// The measurement's figures as one JSON line (stdout), then a normal shutdown.
    public var onMeasurement: ((String) -> Void)?

    func finishMeasurement() {
        var w = JSONWriter(pretty: false)
        w.beginObject()
        latency?.write(into: &w)
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
        w.int("frames", Int64(clamping: runtime.sensorStatus.framesReceived))
        w.endObject()
        onMeasurement?(w.text)
        shutdown(signal: SIGTERM)
    }
}

/// A log that forwards every line and counts the errors (`ctl status` → `log_errors`).
public final class CountingLog: LogPort {
    let base: LogPort
    public private(set) var errors: UInt64 = 0
    public private(set) var warnings: UInt64 = 0

    public init(_ base: LogPort) { self.base = base }

    public func log(_ level: LogLevel, _ message: String) {
        if level == .error { errors &+= 1 }
        if level == .warning { warnings &+= 1 }
        base.log(level, message)
    }
}
