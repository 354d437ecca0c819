import AppCore
import Device
import RideModel

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
    }

    public let scenario: Scenario
    public let options: Options
    public let journal: RideJournalPort & CrashableJournal
    public let archive: RideArchivePort
    public let screen: ScreenPort?
    public let log: MemoryLog
    public private(set) var runtime: DeviceRuntime
    public private(set) var nowMs: Int64 = 0
    public private(set) var counters = Counters()
    public private(set) var sensors: SimulatedSensors
    var pendingInputs: [(atMs: Int64, order: Int, input: AppInput)] = []
    var inputOrder = 0
    var nextStep = 0
    var downUntilMs: Int64 = 0
    /// Device is down (crashed or rebooting) until this instant.
    var deviceDownUntilMs: Int64?
    var lastTickMs: Int64 = -1

    public init(scenario: Scenario, options: Options, journal: RideJournalPort & CrashableJournal,
                archive: RideArchivePort, screen: ScreenPort? = nil, configuration: AppConfiguration = AppConfiguration()) {
        self.scenario = scenario
        self.options = options
        self.journal = journal
        self.archive = archive
        self.screen = screen
        self.log = MemoryLog(capacity: 512)
        let seed = scenario.seed ?? options.seed
        sensors = SimulatedSensors(seed: seed, present: scenario.sensors)
        runtime = DeviceRuntime(core: AppCore(configuration: configuration, randomSeed: seed),
                                journal: journal, archive: archive, screen: screen, log: log)
        self.configuration = configuration
        boot(at: 0)
    }

    let configuration: AppConfiguration

    /// The device (re)starts: wall clock, and a ride to recover if the journal holds one.
    func boot(at ms: Int64) {
        let now = MonotonicInstant(milliseconds: ms)
        runtime.handle(.wallClock(WallClockTime(unixMs: options.startUnixMs + ms, trusted: true), at: now))
        if let records = journal.interruptedRide() {
            let lastDurable = Self.lastInstant(records)
            let gap = lastDurable.map { max(0, ms - $0.milliseconds) } ?? 0
            runtime.recover(records, deviceNow: now, gapMs: gap)
            counters.recoveries += 1
        }
        sensors.deviceStarted(at: ms) { feed($0) }
    }

    static func lastInstant(_ records: [RideRecord]) -> MonotonicInstant? {
        var t: MonotonicInstant?
        for r in records {
            let i: MonotonicInstant?
            switch r {
            case .event(let e): i = e.instant
            case .sample(let s), .series(let s): i = s.instant
            case .header(let h): i = h.anchor.monotonic
            case .finished(_, let at): i = at
            case .wallClock, .metadata: i = nil
            }
            if let i, t == nil || i > t! { t = i }
        }
        return t
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
                boot(at: nowMs)
            } else {
                while nextStep < scenario.steps.count, scenario.steps[nextStep].atMs <= nowMs { nextStep += 1 }
                sensors.skip(to: nowMs)
                return
            }
        }
        while nextStep < scenario.steps.count, scenario.steps[nextStep].atMs <= nowMs {
            perform(scenario.steps[nextStep].action, at: nowMs)
            nextStep += 1
            if deviceDownUntilMs != nil { return }
        }
        while let p = pendingInputs.first, p.atMs <= nowMs {
            pendingInputs.removeFirst()
            feed(p.input)
        }
        sensors.emit(upTo: nowMs) { input in
            counters.sensorFrames &+= 1
            feed(input)
        }
        if let d = runtime.nextDeadline, d.milliseconds <= nowMs { feed(.tick(now)) }
        if nowMs / 1000 != lastTickMs / 1000 || lastTickMs < 0 {
            lastTickMs = nowMs
            sensors.tick(at: nowMs) { feed($0) }
            feed(.tick(now))
        }
    }

    func feed(_ input: AppInput) {
        counters.inputs &+= 1
        runtime.handle(input)
    }

    func schedule(_ input: AppInput, atMs: Int64) {
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
            feed(.button(ButtonEvent(b, .down, at: now)))
            schedule(.button(ButtonEvent(b, .up, at: now.advanced(byMs: 120))), atMs: ms + 120)
        case .hold(let b, let holdMs):
            feed(.button(ButtonEvent(b, .down, at: now)))
            schedule(.button(ButtonEvent(b, .up, at: now.advanced(byMs: holdMs))), atMs: ms + holdMs)
        case .command(let c):
            let reply = runtime.command(c, at: now)
            log.log(reply?.ok == false ? .warning : .info, "command \(c): \(reply?.message ?? "-")")
        case .dropout(let s, let len):
            sensors.dropout(s, fromMs: ms, lengthMs: len)
        case .bridgeRestart(let len):
            sensors.bridgeDown(fromMs: ms, lengthMs: len) { feed($0) }
        case .crash:
            counters.crashes += 1
            kill(powerCut: false, at: ms)
        case .powerCut:
            counters.powerCuts += 1
            kill(powerCut: true, at: ms)
        case .diskFull(let len):
            journal.diskFull(until: now.advanced(byMs: len))
        case .screenshot(let name):
            onScreenshot?(name)
        }
    }

    /// Called when the scenario asks for a screenshot (the front end captures its display).
    public var onScreenshot: ((String) -> Void)?

    /// The process dies (or the power goes): the core and everything unsynced are gone; the
    /// device comes back after a restart or a boot and recovers from the journal.
    func kill(powerCut: Bool, at ms: Int64) {
        journal.crash(powerCut: powerCut)
        pendingInputs.removeAll()
        let seed = (scenario.seed ?? options.seed) &+ UInt64(counters.crashes + counters.powerCuts)
        runtime = DeviceRuntime(core: AppCore(configuration: configuration, randomSeed: seed),
                                journal: journal, archive: archive, screen: screen, log: log)
        deviceDownUntilMs = ms + (powerCut ? options.powerCutRebootMs : options.crashRestartMs)
        log.log(.warning, powerCut ? "power cut at \(ms) ms" : "crash at \(ms) ms")
    }

    /// summary.json of the ride: the last finished one, else the one in progress.
    public var summaryJSON: String? {
        runtime.lastFinishedSummaryJSON ?? SummaryJSON.make(runtime.core, at: MonotonicInstant(milliseconds: nowMs))
    }
}

/// A journal the simulator can crash, cut power to, and fill.
public protocol CrashableJournal: AnyObject {
    /// The process died (and, for a power cut, the OS's unsynced writes too).
    func crash(powerCut: Bool)
    func diskFull(until: MonotonicInstant)
    /// The durable records of a ride that was in progress, if any.
    func interruptedRide() -> [RideRecord]?
}

extension MemoryJournal: CrashableJournal {
    public func crash(powerCut: Bool) { crash() }
    public func diskFull(until: MonotonicInstant) { fullUntil = until }
}
