import AppCore
import Control
import Device
import Navigation
import RideModel
import Sensors

/// Runs a scenario on the simulated clock as fast as possible (or paced by the caller): the
/// synthetic ride drives the sensors, the scenario's steps press buttons, send commands and
/// inject faults, and the same `DeviceRuntime` as the board carries out what the app core asks.
/// Deterministic: the same scenario and seed give the same outputs.
public final class HeadlessRun {
    public struct Options: Sendable {
        public var seed: UInt64
        /// Capture the screen at every change of screen mode (for docs and tests).
        public var framesOnEveryChange: Bool
        /// How long a crashed process takes to come back (systemd restart), ms.
        public var crashRestartMs: Int64
        /// How long the board takes to boot after a power cut, ms.
        public var powerCutRebootMs: Int64
        /// Simulated wall clock at the simulation's start (trusted).
        public var startUnixMs: Int64
        /// A course to follow (`bikesim --course`): loaded at the start, and the simulated GPS
        /// rides along it (a scenario's `detour` and `ride-backwards` leave it).
        public var course: Course?
        /// The bike's wheel (the simulated sensor's and the device's setting).
        public var wheelCircumferenceMm = SimulatedSensors.wheelCircumferenceMm

        public init(seed: UInt64 = 1, framesOnEveryChange: Bool = false, crashRestartMs: Int64 = 2_000,
                    powerCutRebootMs: Int64 = 15_000,
                    startUnixMs: Int64 = UTCDateTime.unixMs(year: 2026, month: 6, day: 6, hour: 7)) {
            self.seed = seed
            self.framesOnEveryChange = framesOnEveryChange
            self.crashRestartMs = crashRestartMs
            self.powerCutRebootMs = powerCutRebootMs
            self.startUnixMs = startUnixMs
        }
    }

    /// What happened, for summaries and tests.
    public struct Counters: Sendable, Hashable {
        public var inputs: UInt64 = 0
        public var sensorFrames: UInt64 = 0
        public var crashes = 0
        public var powerCuts = 0
        public var recoveries = 0
        /// Clean power-offs the device asked for (the battery, the power button), docs/power.md.
        public var powerOffs = 0
    }

    public let scenario: Scenario
    public let options: Options
    public let storage: RideStorage
    public let archive: RideArchivePort
    public let screen: ScreenPort?
    public let log: MemoryLog
    public private(set) var runtime: DeviceRuntime
    public private(set) var nowMs: Int64 = 0
    public private(set) var counters = Counters()
    public private(set) var sensors: SimulatedSensors
    var pendingInputs: [(atMs: Int64, order: Int, input: PendingInput)] = []
    /// Inputs handled by runtimes that are gone (crashes, power cuts).
    var inputsBeforeBoot: UInt64 = 0
    /// The last finished ride's summary.json (captured when it finished: a later ride or a
    /// reboot replaces the core).
    let summaries = SummaryRecorder()
    var inputOrder = 0
    var nextStep = 0
    /// Whether the scenario's own button presses and holds are performed. The interactive
    /// simulator clears it at the rider's first button key: from then on the rider has the
    /// buttons, and the demo's scripted start (at 5 s) can no longer pause a ride the rider has
    /// just started. The scenario's other steps (dropouts, crashes, …) go on.
    public var scriptedButtons = true
    var downUntilMs: Int64 = 0
    /// Device is down (crashed or rebooting) until this instant.
    var deviceDownUntilMs: Int64?
    var lastTickMs: Int64 = -1
    var diskFullUntilMs: Int64?
    /// The unit's battery (`battery` in the scenario) and whether the unit is off after a
    /// power-off it asked for (until `power-on`).
    let battery: SimulatedBattery?
    var poweredOff = false

    public init(scenario: Scenario, options: Options, storage: RideStorage,
                archive: RideArchivePort, screen: ScreenPort? = nil, configuration: AppConfiguration = AppConfiguration()) {
        self.scenario = scenario
        self.options = options
        self.storage = storage
        self.archive = archive
        self.screen = screen
        self.log = MemoryLog(capacity: 512)
        // With a GPS or a barometer the climbing and map pages are there, as on the board.
        self.configuration = scenario.withBattery(scenario.withPositionPages(configuration))
        battery = scenario.battery.map(SimulatedBattery.init)
        let seed = scenario.seed ?? options.seed
        sensors = SimulatedSensors(seed: seed, present: scenario.sensors, wheelCircumferenceMm: options.wheelCircumferenceMm)
        sensors.positioning.startUnixMs = options.startUnixMs
        runtime = Self.boot(storage: storage, archive: archive, screen: screen, log: log, configuration: self.configuration,
                            sensors: sensors.configuration, seed: seed, options: options, at: 0, counters: &counters)
        _ = runtime.addObserver(summaries)
        if let c = options.course {
            sensors.positioning.follow(route: SyntheticRoute(course: c))
            runtime.courseStore = courseStore
            courseStore.add(c)
            _ = runtime.command(.loadCourse(c), at: .zero)
        }
        runtime.powerPort = battery
    }

    let configuration: AppConfiguration
    /// The courses the simulated card holds (the `--course` file).
    public let courseStore = MemoryCourseStore()

    /// The device (re)starts: the journal is opened with the board's code, which rebuilds an
    /// interrupted ride; rides that ended without a durable file get it now; the wall clock is read.
    static func boot(storage: RideStorage, archive: RideArchivePort, screen: ScreenPort?, log: MemoryLog,
                     configuration: AppConfiguration, sensors: DataSourceConfiguration, seed: UInt64, options: Options,
                     at ms: Int64, counters: inout Counters) -> DeviceRuntime {
        let now = MonotonicInstant(milliseconds: ms)
        let wall = WallClockTime(unixMs: options.startUnixMs + ms, trusted: true)
        let opened = storage.open(configuration: configuration, seed: seed, deviceNow: now, wallNow: wall)
        if opened.report.recoveredRide != nil { counters.recoveries += 1 }
        return DeviceRuntime.boot(opened, archive: archive, screen: screen, log: log, sensors: sensors, wall: wall, at: now)
    }

    /// Runs to the end of the scenario. `pace` is called with the simulated time before each
    /// batch of inputs (to run at N× real time, or to draw a terminal).
    public func run(pace: ((Int64) -> Void)? = nil) {
        while let next = nextEventMs(), next <= scenario.durationMs {
            pace?(next)
            advance(to: next)
        }
        pace?(scenario.durationMs)
        advance(to: scenario.durationMs)
    }

    /// The next instant (simulated ms) at which something happens.
    public func nextEventTime() -> Int64? { nextEventMs() }

    /// The next instant something happens.
    func nextEventMs() -> Int64? {
        var t = Int64.max
        if nextStep < scenario.steps.count { t = min(t, scenario.steps[nextStep].atMs) }
        if let p = pendingInputs.first { t = min(t, p.atMs) }
        if let down = deviceDownUntilMs { return min(t, down) }
        if let b = battery { t = min(t, b.nextReadingMs) }
        t = min(t, sensors.nextFrameMs)
        if let d = runtime.nextDeadline { t = min(t, max(nowMs, d.milliseconds)) }
        t = min(t, (nowMs / 1000 + 1) * 1000) // the run loop's 1 Hz tick
        return t == Int64.max ? nil : max(t, nowMs)
    }

    /// Handles everything due at `ms`.
    public func advance(to ms: Int64) {
        nowMs = max(nowMs, ms)
        let now = MonotonicInstant(milliseconds: nowMs)
        if let down = deviceDownUntilMs {
            if nowMs >= down {
                deviceDownUntilMs = nil
                let seed = (scenario.seed ?? options.seed) &+ UInt64(counters.crashes + counters.powerCuts)
                inputsBeforeBoot &+= runtime.inputsHandled
                sensors.deviceStarted()
                runtime = Self.boot(storage: storage, archive: archive, screen: screen, log: log, configuration: configuration,
                                    sensors: sensors.configuration, seed: seed, options: options, at: nowMs, counters: &counters)
                runtime.courseStore = courseStore
                _ = runtime.addObserver(summaries)
                runtime.powerPort = battery
                poweredOff = false
            } else {
                while nextStep < scenario.steps.count, scenario.steps[nextStep].atMs <= nowMs {
                    switch scenario.steps[nextStep].action {
                    // Switched off, the pack only charges (or keeps its charge).
                    case .charger(let on): battery?.advance(to: nowMs, running: false); battery?.charging = on
                    case .batteryLevel(let p): battery?.percent = p
                    case .powerOn where poweredOff: deviceDownUntilMs = nowMs + options.powerCutRebootMs
                    default: break
                    }
                    nextStep += 1
                }
                battery?.advance(to: nowMs, running: false)
                sensors.skip(to: nowMs)
                return
            }
        }
        while nextStep < scenario.steps.count, scenario.steps[nextStep].atMs <= nowMs {
            let action = scenario.steps[nextStep].action
            nextStep += 1
            if !scriptedButtons, action.isButton { continue }
            perform(action, at: nowMs)
            if deviceDownUntilMs != nil { return }
        }
        if let full = diskFullUntilMs, nowMs >= full {
            diskFullUntilMs = nil
            _ = storage.setFull(false)
            log.log(.info, "disk space is back")
        }
        while let p = pendingInputs.first, p.atMs <= nowMs {
            pendingInputs.removeFirst()
            switch p.input {
            case let .button(b, pressed, at): runtime.buttonEdge(b, pressed: pressed, at: at)
            }
        }
        sensors.emit(upTo: nowMs, into: runtime)
        counters.sensorFrames = sensors.framesSent
        if let b = battery {
            b.advance(to: nowMs, running: true)
            if nowMs >= b.nextReadingMs {
                b.nextReadingMs = nowMs + SimulatedBattery.periodMs
                runtime.battery(b.reading(), at: now)
            }
        }
        if let d = runtime.nextDeadline, d.milliseconds <= nowMs { runtime.coreTick(at: now) }
        if nowMs / 1000 != lastTickMs / 1000 || lastTickMs < 0 {
            lastTickMs = nowMs
            runtime.tick(at: now)
        }
        counters.inputs = inputsBeforeBoot &+ runtime.inputsHandled
        if let b = battery, b.powerOffAsked != nil { powerOff(b, at: nowMs) }
    }

    /// The device asked for a clean power-off (its journal is durable: it flushed before
    /// asking): the board is off until the scenario's `power-on`.
    func powerOff(_ b: SimulatedBattery, at ms: Int64) {
        log.log(.warning, "powered off (\(b.powerOffAsked!)) at \(ms) ms")
        b.powerOffAsked = nil
        counters.powerOffs += 1
        storage.crash(powerCut: false)
        pendingInputs.removeAll()
        poweredOff = true
        deviceDownUntilMs = Int64.max
    }

    /// An input due later (a button's release).
    enum PendingInput {
        case button(Button, pressed: Bool, at: MonotonicInstant)
    }

    func schedule(_ input: PendingInput, atMs: Int64) {
        inputOrder += 1
        pendingInputs.append((atMs, inputOrder, input))
        pendingInputs.sort { ($0.atMs, $0.order) < ($1.atMs, $1.order) }
    }

    /// Does `action` now (keys in the interactive simulator).
    public func inject(_ action: Scenario.Action) {
        guard deviceDownUntilMs == nil else { return }
        perform(action, at: nowMs)
    }

    /// The device is down (crashed, rebooting).
    public var isDeviceDown: Bool { deviceDownUntilMs != nil }

    func perform(_ action: Scenario.Action, at ms: Int64) {
        let now = MonotonicInstant(milliseconds: ms)
        switch action {
        case .press(let b):
            runtime.buttonEdge(b, pressed: true, at: now)
            schedule(.button(b, pressed: false, at: now.advanced(byMs: 120)), atMs: ms + 120)
        case .hold(let b, let holdMs):
            runtime.buttonEdge(b, pressed: true, at: now)
            schedule(.button(b, pressed: false, at: now.advanced(byMs: holdMs)), atMs: ms + holdMs)
        case .command(let c):
            let reply = runtime.command(c, at: now)
            log.log(reply?.ok == false ? .warning : .info, "command \(c): \(reply?.message ?? "-")")
        case .dropout(let s, let len):
            sensors.dropout(s, fromMs: ms, lengthMs: len)
        case .bridgeRestart(let len):
            sensors.bridgeDown(fromMs: ms, lengthMs: len, runtime)
        case .gpsLost(let len):
            sensors.positioning.loseFix(fromMs: ms, lengthMs: len)
        case .crash:
            counters.crashes += 1
            kill(powerCut: false, at: ms)
        case .powerCut:
            counters.powerCuts += 1
            kill(powerCut: true, at: ms)
        case .diskFull(let len):
            if storage.setFull(true) {
                diskFullUntilMs = max(diskFullUntilMs ?? 0, ms + len)
            } else {
                log.log(.warning, "disk-full is simulated on the simulated flash only; ignored for a data directory")
            }
        case .screenshot(let name):
            onScreenshot?(name)
        case .car(let speed):
            sensors.car(speedMps: speed, atMs: ms)
        case .radarOff(let len):
            sensors.radarOff(atMs: ms, lengthMs: len, runtime)
        case .detour(let offset, let len):
            sensors.positioning.detour(fromMs: ms, lengthMs: len, offsetM: offset)
        case .rideBackwards:
            sensors.positioning.rideBackwards()
        case .courseLoad(let name):
            let answer = runtime.control("course load \(name)", at: now) { "{}" }
            log.log(answer.isError ? .warning : .info, "course load \(name): \(answer.line)")
        case .charger(let on):
            battery?.advance(to: ms, running: !poweredOff)
            battery?.charging = on
        case .batteryLevel(let p):
            battery?.percent = p
        case .powerOn:
            break // handled while the device is down (`advance`)
        }
    }

    /// Called when the scenario asks for a screenshot (the front end captures its display).
    public var onScreenshot: ((String) -> Void)?

    /// The process dies (or the power goes): the core and everything unsynced are gone; the
    /// device comes back after a restart or a boot and recovers from the journal.
    func kill(powerCut: Bool, at ms: Int64) {
        storage.crash(powerCut: powerCut)
        pendingInputs.removeAll()
        deviceDownUntilMs = ms + (powerCut ? options.powerCutRebootMs : options.crashRestartMs)
        log.log(.warning, powerCut ? "power cut at \(ms) ms" : "crash at \(ms) ms")
    }

    /// summary.json of the ride: the last finished one, else the one in progress.
    public var summaryJSON: String? {
        summaries.lastFinishedJSON ?? summaries.current(runtime.core, at: MonotonicInstant(milliseconds: nowMs))
    }
}

