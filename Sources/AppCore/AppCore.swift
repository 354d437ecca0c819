// AppCore: the device as a deterministic state machine — one entry point (`handle(AppInput)`),
// the screen value (`ScreenModel`) and effects out; the lifecycle, countdown, buttons, 1 Hz
// records, alerts, training features and crash-recovery replay. Same inputs, same outputs; time
// comes in with every input.
//
// Must not import: Foundation, Glibc, Sensors, Journal, RideFiles, Display, Screens, Configuration, Control, Device, BoardIO, BoardHardware, BoardWiring, DeviceAdapters, Simulation.
import Battery
import Navigation
import Positioning
import RideModel
import Training

/// Settings of the app core (from the config file; defaults suit the simulator).
public struct AppConfiguration: Sendable, Hashable {
    public var ride: RideSettings
    public var countdownSeconds: Int
    /// Held at least this long, a press is a long press.
    public var longPressMs: Int64
    /// A live value older than this is shown as "--".
    public var liveStaleMs: Int64
    /// A 1 Hz record carries a value only if its frame arrived within this long before the
    /// record and was not recorded already: a sensor that falls silent stops adding values at
    /// once (docs/statistics.md, "values that never happened").
    public var recordWindowMs: Int64
    /// Whether cadence and power averages leave zeros out (Garmin's defaults: cadence without
    /// zeros, power with zeros). Journaled with the ride, so recovery and its file agree.
    public var cadenceAveraging: ZeroAveraging
    public var powerAveraging: ZeroAveraging
    public var alertDisplayMs: Int64
    public var runningPageCount: Int
    public var summaryPageCount: Int
    /// Sensors expected for a ride, by `SensorRole.rawValue`.
    public var expectedSensors: [Bool]
    /// Quantities collected, by `Quantity.rawValue` (a disabled one is neither recorded nor shown).
    public var enabledQuantities: [Bool]
    /// Journal raw power values (≈4 Hz) as a quantity series besides the 1 Hz records.
    public var recordPowerSeries: Bool
    public var activity: String
    /// Effects kept between drains.
    public var outboxCapacity: Int
    /// Target zones, auto-pause, auto-lap (all off by default). Control commands can change
    /// them for one ride; the ride's zones come from `ride` (the preferred zones).
    public var training: TrainingSettings
    /// The unit's battery gauge and its levels (docs/power.md); disabled by default.
    public var battery: BatterySettings
    /// Held this long, the power button powers the unit off (a longer hold than `longPressMs`:
    /// it must not happen by accident).
    public var powerOffHoldMs: Int64

    public init(ride: RideSettings = RideSettings(),
                countdownSeconds: Int = 3,
                longPressMs: Int64 = 1_500,
                liveStaleMs: Int64 = 3_000,
                recordWindowMs: Int64 = 1_000,
                cadenceAveraging: ZeroAveraging = .excludeZeros,
                powerAveraging: ZeroAveraging = .includeZeros,
                alertDisplayMs: Int64 = 4_000,
                runningPageCount: Int = 3,
                summaryPageCount: Int = 6, // Screens' SummaryPage.standard (a DisplayTests test keeps them equal)
                expectedSensors: [SensorRole] = SensorRole.allCases.filter { $0 != .radar },  // a radar when one is paired
                disabledQuantities: [Quantity] = [],
                recordPowerSeries: Bool = true,
                activity: String = "cycling",
                outboxCapacity: Int = 256,
                training: TrainingSettings = TrainingSettings(),
                battery: BatterySettings = BatterySettings(),
                powerOffHoldMs: Int64 = 3_000) {
        self.ride = ride
        self.countdownSeconds = countdownSeconds
        self.longPressMs = longPressMs
        self.liveStaleMs = liveStaleMs
        self.recordWindowMs = recordWindowMs
        self.cadenceAveraging = cadenceAveraging
        self.powerAveraging = powerAveraging
        self.alertDisplayMs = alertDisplayMs
        self.runningPageCount = runningPageCount
        self.summaryPageCount = summaryPageCount
        var expected = Array(repeating: false, count: SensorRole.allCases.count)
        for r in expectedSensors { expected[Int(r.rawValue)] = true }
        self.expectedSensors = expected
        var enabled = Array(repeating: true, count: Quantity.countMax)
        for q in disabledQuantities { enabled[q.index] = false }
        self.enabledQuantities = enabled
        self.recordPowerSeries = recordPowerSeries
        self.activity = activity
        self.outboxCapacity = outboxCapacity
        self.training = training
        self.battery = battery
        self.powerOffHoldMs = powerOffHoldMs
    }
}

/// The device as a deterministic state machine (pure: no I/O, no clock; time comes in with
/// every input). Inputs are buttons, samples, sensor states, ticks and control commands; outputs
/// are the screen value (`screen`) and effects (`drainEffect()`): journal records, alerts, zone
/// updates, command replies. Same inputs ⇒ same outputs.
public struct AppCore: Sendable {
    public let configuration: AppConfiguration
    public internal(set) var lifecycle = SessionLifecycle()
    public internal(set) var builder: RideBuilder?
    public internal(set) var header: RideHeader?
    public internal(set) var screen = ScreenModel()
    public internal(set) var summary: RideSummary?
    /// The ride was rebuilt from the journal after a crash.
    public internal(set) var recovered = false
    /// Ride time lost to crashes (gaps), ms.
    public internal(set) var gapsMs: Int64 = 0
    /// Effects dropped because the outbox was full (a bug if ever non-zero: drain after each input).
    public var effectsDropped: UInt64 { outbox.overwrittenCount }
    /// Samples ignored because their quantity is disabled.
    public internal(set) var disabledSamples: UInt64 = 0
    /// The ride's 1 Hz records not taken because a tick came late (the loop held up past a whole
    /// second); from the ride's start (`ctl status` `records_skipped`).
    public internal(set) var recordsSkipped: UInt64 = 0
    /// Journaled events the builder refused while replaying (never expected: the live core
    /// refuses them first); their lifecycle change was not applied either.
    public internal(set) var replayRefusals: UInt64 = 0

    public var state: SessionState { lifecycle.state }
    /// The wall-clock anchor of the ride in progress (re-anchored when the clock was corrected).
    public var wallAnchorForRide: WallClockAnchor? { header == nil ? nil : wallAnchor }

    var outbox: RingBuffer<AppEffect>
    /// Live values from the data source, by `Quantity.index`.
    var liveValues: [LiveValue]
    var sensorStates: [SensorState]
    /// Presses in progress, by `Button.rawValue`.
    var holds: [ButtonHold]
    /// The instant of the last 1 Hz sample journaled for the ride in progress.
    var lastJournaledSampleAt: MonotonicInstant?
    // Countdown, 1 Hz records, overlays.
    var countdownStart: MonotonicInstant?
    /// The Sensors screen is open (idle only; its state is `screen.sensorsMenu`).
    var sensorsOpen = false
    /// When the rear radar beeps (RadarCore.swift).
    public internal(set) var radarAlerting = RadarAlerting()
    var nextRecordInstant: MonotonicInstant?
    var overlayUntil: MonotonicInstant?
    var runningPage = 0
    var summaryPage = 0
    /// Per quantity with zones (heart rate, power): the zone last announced, custom zones for
    /// the next ride, the target monitor. By `ZoneSlot.rawValue`.
    var zoneSlots = Array(repeating: ZoneSlotState(), count: ZoneSlot.allCases.count)
    /// Training settings of the ride in progress, or of the next ride (commands change them;
    /// they return to the configured ones when a ride ends).
    public internal(set) var training: TrainingSettings
    public internal(set) var autoPause = AutoPauseMonitor(settings: nil)
    /// Values of the 1 Hz record being processed that the training monitors read.
    var recordValues = RecordValues()
    /// While replaying: the instant of the record whose samples are being replayed.
    var replayRecordInstant: MonotonicInstant?
    /// How far the last distance auto-lap ran past its mark (the next lap ends on the next mark).
    var autoLapCarryM = 0.0
    /// Journaled training settings that could not be read back (ignored, counted).
    public internal(set) var unreadableSettings: UInt64 = 0
    var wallAnchor: WallClockAnchor?
    /// The wall clock's latest reading in this start of the app (ride instants), trusted or not.
    var observedWall: WallClockAnchor?
    /// Set by a recovery: `wallAnchor` is the recovered ride's, on that ride's own time line,
    /// which cannot know how long the device was down (gap 0 without a trusted clock). It dates
    /// that ride; a new ride takes the clock's own reading instead (untrusted until the clock is:
    /// the ride is then dated by the offset, docs/journal.md "The clock") unless a trusted
    /// reading has come since.
    var anchorFromRecovery = false
    var randomState: UInt64
    /// The course and its follower (NavigationFeature.swift).
    var navigation = NavigationCore()
    /// Ride instants = device instants + this (non-zero after recovery from a crash).
    public internal(set) var instantOffsetMs: Int64 = 0
    /// The device's boot (the board's kernel boot id), set by the device before recovery: a ride
    /// journals its timeline in it (`RideRecord.timeline`). nil: not known, nothing journaled (a
    /// restart then needs a trusted wall clock for the gap; the simulator sets none, its
    /// simulated wall clock is trusted).
    public var boot: BootIdentity?
    /// The last timeline of the ride being replayed (nil: none journaled, e.g. an older app's).
    public internal(set) var replayedTimeline: RideTimeline?
    /// The newest instant (ride time) of any input handled: a button's action is never dated
    /// before it (`actionInstant`).
    var newestInputInstant = MonotonicInstant(milliseconds: .min)
    /// The unit's battery (nil: no gauge configured), docs/power.md.
    public internal(set) var battery: BatteryMonitor?
    /// Phone times accepted and refused (`ControlCommand.phoneTime`).
    public internal(set) var phoneTimesAccepted: UInt64 = 0
    public internal(set) var phoneTimesRefused: UInt64 = 0

    public init(configuration: AppConfiguration = AppConfiguration(), randomSeed: UInt64) {
        self.configuration = configuration
        outbox = RingBuffer(capacity: configuration.outboxCapacity)
        liveValues = Array(repeating: LiveValue(), count: Quantity.countMax)
        sensorStates = configuration.expectedSensors.map { $0 ? .searching : .notConfigured }
        holds = Array(repeating: ButtonHold(), count: Button.allCases.count)
        randomState = randomSeed
        training = configuration.training
        screen.runningPageCount = configuration.runningPageCount
        screen.sensors = sensorStates
        if configuration.battery.enabled {
            battery = BatteryMonitor(settings: configuration.battery)
            screen.battery = BatteryStatus()
        }
    }

    // MARK: Effects

    /// The next effect to carry out, oldest first.
    public mutating func drainEffect() -> AppEffect? { outbox.removeFirst() }

    public var pendingEffectCount: Int { outbox.count }

    mutating func emit(_ effect: AppEffect) { outbox.append(effect) }

    /// A journal record. Every one belongs to the ride in progress (its header came first), and
    /// the 1 Hz samples never go back in time: a record that breaks either would be an orphan or
    /// make the ride's files run backwards, so it stops the program in release builds too (the
    /// journal then recovers the ride as it was before it).
    mutating func journal(_ record: RideRecord) {
        switch record {
        case .header:
            lastJournaledSampleAt = nil
        case .sample(let s):
            precondition(header != nil, "a sample journaled with no ride")
            precondition(lastJournaledSampleAt.map { s.instant >= $0 } ?? true,
                         "a 1 Hz sample at \(s.instant) after one at \(lastJournaledSampleAt!)")
            lastJournaledSampleAt = s.instant
        default:
            precondition(header != nil, "a ride record journaled with no ride: \(record)")
        }
        emit(.journal(record))
    }

    /// The reply to a command: made here only, from its outcome, in the state it left.
    mutating func reply(_ outcome: ActionOutcome) {
        switch outcome {
        case .done(let message): emit(.reply(CommandReply(ok: true, message: message, state: lifecycle.state)))
        case .refused(let message): emit(.reply(CommandReply(ok: false, message: message, state: lifecycle.state)))
        }
    }

    // MARK: Input

    /// Feeds one input. Afterwards read `screen` and drain the effects.
    public mutating func handle(_ input: AppInput) {
        let now = input.instant.advanced(byMs: instantOffsetMs)
        // A record due before this input is taken first, with what was known at its instant: a
        // tick that comes late (a loop turn held up) must not let a later frame into an earlier
        // record, nor a later button skip it.
        if case .tick = input {} else if let due = nextRecordInstant, now > due { takeDueRecord(at: now) }
        switch input {
        case .button(let e): handleButton(e.button, e.edge, at: now)
        case .sensor(let e): handleSensorEvent(e, at: now)
        case .tick: handleTick(now)
        case .command(let c, _): handleCommand(c, at: now)
        case .wallClock(let w, _): handleWallClock(w, at: now)
        case .storage(let c, _): handleStorage(c, at: now)
        case .rideFile(let id, let durable, _): handleRideFile(id, durable: durable, at: now)
        case .sensors(let u, _): handleSensorsUpdate(u, at: now)
        case .courses(let u, _): handleCoursesUpdate(u, at: now)
        case .battery(let r, _): handleBattery(r, at: now)
        }
        refreshScreen(at: now)
        newestInputInstant = max(newestInputInstant, now)
        assert(brokenInvariant == nil, "after \(input): \(brokenInvariant ?? "")")
    }

    /// When a button's press acts: at the instant it settled, unless the core has already handled
    /// something later. A settle instant is the kernel's edge plus the debounce time, so it can be
    /// older than a tick or frame the loop read first when a turn came late (a slow card, a loaded
    /// CPU); acting at it would put the ride's lap or pause before a record already taken, which
    /// the ride refuses (out of order), and the press would be lost. The hold's length is still
    /// measured between the edges themselves.
    func actionInstant(_ settled: MonotonicInstant) -> MonotonicInstant {
        var t = max(settled, newestInputInstant)
        if let last = lifecycle.lastTransition { t = max(t, last) }
        if let b = builder { t = max(t, b.orderFloor) }
        return t
    }

    /// The next instant (device time) at which the core needs a tick: countdown steps, the next
    /// 1 Hz record, a long-press deadline, an overlay's end. The runtime ticks at least once a
    /// second anyway.
    public var nextDeadline: MonotonicInstant? {
        var d: MonotonicInstant?
        func consider(_ t: MonotonicInstant?) {
            guard let t else { return }
            if d == nil || t < d! { d = t }
        }
        if let c = countdownStart, lifecycle.state == .prepared {
            let elapsed = screenCountdownStep(at: nil)
            consider(c.advanced(byMs: Int64(elapsed + 1) * 1000))
        }
        consider(nextRecordInstant)
        for (i, h) in holds.enumerated() where !h.longPressFired && !h.actedOnDown {
            if let down = h.downAt { consider(down.advanced(byMs: longPressMs(Button.allCases[i]))) }
        }
        consider(overlayUntil)
        return d.map { $0.advanced(byMs: -instantOffsetMs) }
    }

    private func screenCountdownStep(at now: MonotonicInstant?) -> Int {
        guard let c = countdownStart else { return 0 }
        guard let now else {
            // steps already shown: derived from the screen mode
            if case .countdown(let n) = screen.mode { return configuration.countdownSeconds - n }
            return 0
        }
        return Int(now.milliseconds(since: c) / 1000)
    }

    // MARK: Buttons

    /// Buttons whose long press means something in the current state act on release (or at the
    /// long-press deadline); the others act at once on press.
    func hasLongPressMeaning(_ b: Button) -> Bool {
        switch (b, lifecycle.state) {
        case (.startPause, .paused): true
        case (.lap, .ended): screen.mode != .confirmDiscard
        case (.power, _): true
        default: false
        }
    }

    mutating func handleButton(_ b: Button, _ edge: ButtonEvent.Edge, at now: MonotonicInstant) {
        let i = Int(b.rawValue)
        let acting = actionInstant(now)
        switch edge {
        case .down:
            guard holds[i].downAt == nil else { return } // repeated down without up: ignore
            if screen.pairingCode != nil {
                // Any button clears a companion's pairing code. Filling the idle screen, the press
                // does only that; as a badge over a ride, the press does its usual work too.
                screen.pairingCode = nil
                emit(.pairingCodeDismissed)
                if case .idle = screen.mode {
                    holds[i] = ButtonHold(downAt: now, longPressFired: false, actedOnDown: true)
                    return
                }
            }
            holds[i] = ButtonHold(downAt: now, longPressFired: false, actedOnDown: !hasLongPressMeaning(b))
            if holds[i].actedOnDown { shortPress(b, at: acting) }
        case .up:
            guard let down = holds[i].downAt else { return }
            holds[i].downAt = nil
            if holds[i].longPressFired || holds[i].actedOnDown { return }
            if now.milliseconds(since: down) >= longPressMs(b) { longPress(b, at: acting) } else { shortPress(b, at: acting) }
        }
    }

    mutating func checkLongPresses(at now: MonotonicInstant) {
        for b in Button.allCases {
            let i = Int(b.rawValue)
            guard let down = holds[i].downAt, !holds[i].longPressFired, !holds[i].actedOnDown,
                  now.milliseconds(since: down) >= longPressMs(b) else { continue }
            holds[i].longPressFired = true
            longPress(b, at: actionInstant(down.advanced(byMs: longPressMs(b))))
        }
    }

    mutating func shortPress(_ b: Button, at now: MonotonicInstant) {
        if sensorsOpen && lifecycle.state == .idle {
            sensorsPress(b, at: now)
            return
        }
        if navigation.menuOpen && lifecycle.state == .idle {
            coursesPress(b, at: now)
            return
        }
        switch (b, lifecycle.state) {
        case (.page, .idle): openSensors(at: now)
        case (.lap, .idle): openCourses(at: now)
        case (.startPause, .idle): prepare(at: now)
        case (.startPause, .prepared): cancelCountdown(at: now)
        case (.startPause, .running): pause(at: now, trigger: .manual)
        case (.startPause, .paused): resume(at: now, trigger: .manual)
        case (.startPause, .ended):
            if screen.mode == .confirmDiscard { deleteSavedRide(at: now) } else { prepare(at: now) }
        case (.lap, .running): lap(at: now, trigger: .manual)
        case (.lap, .paused), (.page, .paused), (.page, .running):
            runningPage = (runningPage + 1) % max(1, reachablePageCount)
        case (.lap, .ended):
            if screen.mode == .confirmDiscard { screen.mode = .summary(page: summaryPage) } else { dismiss(at: now) }
        case (.page, .ended):
            summaryPage = (summaryPage + 1) % max(1, configuration.summaryPageCount)
        default: break
        }
    }

    mutating func longPress(_ b: Button, at now: MonotonicInstant) {
        switch (b, lifecycle.state) {
        case (.startPause, .paused): end(saving: true, at: now)
        case (.lap, .ended): screen.mode = .confirmDiscard
        case (.power, _): powerOff(.powerButton, at: now)
        default: shortPress(b, at: now)
        }
    }

    // MARK: Commands

    /// A control command: performed, and its reply made from its outcome (the one place a
    /// command's reply is decided; buttons run the same actions and ignore the outcome).
    mutating func handleCommand(_ c: ControlCommand, at now: MonotonicInstant) {
        reply(perform(c, at: now))
    }

    mutating func perform(_ c: ControlCommand, at now: MonotonicInstant) -> ActionOutcome {
        switch c {
        case .start: return prepare(at: now)
        case .pause: return pause(at: now, trigger: .remote)
        case .resume: return resume(at: now, trigger: .remote)
        case .lap: return lap(at: now, trigger: .remote)
        case .end:
            return lifecycle.state == .prepared ? cancelCountdown(at: now) : end(saving: true, at: now)
        case .discard:
            switch lifecycle.state {
            case .prepared: return cancelCountdown(at: now)
            case .ended: return deleteSavedRide(at: now)
            default: return end(saving: false, at: now)
            }
        case .dismiss: return dismiss(at: now)
        case .marker(let kind, let value): return marker(kind, value: value, at: now)
        case .showPairingCode(let code):
            guard code.map({ $0 <= PairingCode.valueMax }) ?? true else { return .refused("a pairing code has six digits") }
            screen.pairingCode = code
            guard code != nil else { return .done("pairing code cleared") }
            if case .idle = screen.mode { return .done("pairing code shown") }
            return .done("pairing code shown as a badge (the unit is not idle)")
        case .nextPage:
            runningPage = (runningPage + 1) % max(1, reachablePageCount)
            return .done("page \(runningPage + 1)")
        case .setRideZones, .clearRideZones, .setTargetZone, .setTargetZoneNumber, .clearTargetZone, .setAutoPause, .setAutoLap:
            return trainingCommand(c, at: now)
        case .loadCourse(let course): return loadCourse(course, at: now)
        case .clearCourse: return clearCourse(at: now)
        case .courseStatus: return courseStatus()
        case .phoneTime(let unixMs):
            return phoneTime(unixMs, at: now)
        }
    }

    /// Applies a lifecycle action; returns nil when applied, else the refusal (a command's
    /// reply is made from it; a refusal the rider must see is an overlay too). With `event`, the
    /// ride's builder is asked first: the transition is applied only if the builder will take
    /// the event too (both or neither), and the caller then applies it with `applyChecked`.
    mutating func transition(_ action: SessionAction, at now: MonotonicInstant, event: RideEvent.Kind? = nil) -> ActionOutcome? {
        if let error = lifecycle.check(action, at: now) {
            if case .rideAlreadyInProgress = error { showOverlay(.rideInProgress, at: now) }
            return .refused(error.description)
        }
        if let kind = event, let b = builder, let refusal = b.check(kind, at: now) {
            if refusal == .capacityReached { showOverlay(.rideTableFull, at: now) }
            return .refused(refusal == .capacityReached
                            ? "\(action) refused: the ride's event table is full (\(b.events.count) events); end the ride to save it"
                            : "\(action) refused: \(refusal)")
        }
        let before = lifecycle.state
        do { try lifecycle.apply(action, at: now) } catch {
            preconditionFailure("a checked transition was refused: \(error)")
        }
        // The lifecycle went where the action goes (workout-model §1): a ride's records and
        // files follow from it, so a wrong state is never carried on, in release builds too.
        precondition(lifecycle.state == action.target(from: before), "\(action) from \(before) gave \(lifecycle.state)")
        return nil
    }

    /// Applies a builder event that `transition` checked. A refusal here would leave the screen
    /// and the ride's figures telling different stories: it stops the program in release builds
    /// too (the journal then recovers the ride as it was before the event).
    mutating func applyChecked(_ body: (inout RideBuilder) throws(BuilderRejection) -> Void) {
        guard builder != nil else { return }
        do { try body(&builder!) } catch {
            preconditionFailure("the builder refused a checked event: \(error)")
        }
    }

    /// Counter readings (distance, energy) at a pause, resume or stop instant, so that the
    /// distance ridden up to a pause and from a resume is counted to the instant (a record at the
    /// same instant reads the counter again: a repeated reading adds nothing).
    mutating func takeBoundaryReadings(at instant: MonotonicInstant) {
        guard builder?.startInstant != nil else { return }
        for q in [Quantity.distance, .energy] {
            guard let v = recordValue(q, at: instant) else { continue }
            let s = Sample(q, q.recordedValue(v), at: instant, origin: .generated)
            do {
                try builder!.add(s)
                journal(.sample(s))
            } catch {
                continue
            }
        }
    }

    @discardableResult
    mutating func prepare(at now: MonotonicInstant) -> ActionOutcome {
        if let reason = screen.poweringOff { return .refused("the unit is powering off (\(reason)): no new ride") }
        if lifecycle.state == .ended { _ = transition(.dismiss, at: now) }
        if let refusal = transition(.prepare, at: now) { return refusal }
        closeSensors(at: now)
        if navigation.menuOpen { closeCourses() }
        countdownStart = now
        summary = nil
        screen.summary = nil
        screen.recovered = false
        recovered = false
        return .done("countdown started: the ride starts in \(configuration.countdownSeconds) s")
    }

    @discardableResult
    mutating func cancelCountdown(at now: MonotonicInstant) -> ActionOutcome {
        if let refusal = transition(.cancel, at: now) { return refusal }
        countdownStart = nil
        return .done("countdown cancelled")
    }

    mutating func beginRide(at start: MonotonicInstant) {
        guard transition(.start, at: start) == nil else { return }
        countdownStart = nil
        let id = RideID(random: nextRandom(), nextRandom())
        if anchorFromRecovery, let observed = observedWall {
            wallAnchor = observed
            anchorFromRecovery = false
        }
        let anchor = (wallAnchor ?? WallClockAnchor(monotonic: .zero, wall: WallClockTime(unixMs: 0, trusted: false)))
        let startAnchor = WallClockAnchor(monotonic: start, wall: anchor.wallTime(at: start))
        let settings = rideSettingsForNextRide
        let h = RideHeader(rideID: id, anchor: startAnchor, settings: settings, activity: configuration.activity)
        header = h
        builder = RideBuilder(settings: settings)
        screen.track = Breadcrumb()
        gapsMs = 0
        runningPage = 0
        resetAnnouncedZones()
        // The first record is at the start instant itself: the distance ridden in the first
        // second is counted from it.
        nextRecordInstant = start
        recordsSkipped = 0
        for i in liveValues.indices { liveValues[i].recordedAt = LiveValue.neverRecorded }
        journal(.header(h))
        journalTimeline()
        journalTrainingAtStart()
        for (key, z) in [(RideBuilder.cadenceAveragingKey, configuration.cadenceAveraging),
                         (RideBuilder.powerAveragingKey, configuration.powerAveraging)] {
            let value = RideBuilder.averagingValue(z)
            journal(.metadata(key: key, value: value))
            replayMetadata(key: key, value: value)
        }
        applyChecked { b throws(BuilderRejection) in try b.start(at: start) }
        autoLapCarryM = 0
        trainingDidStart(at: start)
        navigationDidStartRide(at: start)
        journalBattery(DeviceBattery.atStartKey)
        journal(.event(RideEvent(.start, at: start)))
        emit(.syncJournal)
        alertLowSensorBattery(at: start)
    }

    @discardableResult
    mutating func pause(at now: MonotonicInstant, trigger: Trigger) -> ActionOutcome {
        if let refusal = transition(.pause, at: now, event: .pause) { return refusal }
        applyChecked { b throws(BuilderRejection) in try b.pause(at: now, trigger: trigger) }
        trainingDidPause(at: now, trigger: trigger)
        journal(.event(RideEvent(.pause, at: now, trigger: trigger)))
        emit(.syncJournal)
        takeBoundaryReadings(at: now)
        return .done("paused")
    }

    @discardableResult
    mutating func resume(at now: MonotonicInstant, trigger: Trigger) -> ActionOutcome {
        if let refusal = transition(.resume, at: now, event: .resume) { return refusal }
        applyChecked { b throws(BuilderRejection) in try b.resume(at: now, trigger: trigger) }
        trainingDidResume(at: now, trigger: trigger)
        journal(.event(RideEvent(.resume, at: now, trigger: trigger)))
        emit(.syncJournal)
        takeBoundaryReadings(at: now)
        return .done("resumed")
    }

    @discardableResult
    mutating func lap(at now: MonotonicInstant, trigger: Trigger) -> ActionOutcome {
        if let refusal = transition(.lap, at: now, event: .lap) { return refusal }
        applyChecked { b throws(BuilderRejection) in try b.lap(at: now, trigger: trigger) }
        noteLapForAutoLap(trigger)
        journal(.event(RideEvent(.lap, at: now, trigger: trigger)))
        emit(.syncJournal)
        return .done("lap \(builder?.laps.count ?? 0)")
    }

    mutating func marker(_ kind: RideEvent.MarkerKind, value: Int64, at now: MonotonicInstant) -> ActionOutcome {
        guard lifecycle.state == .running || lifecycle.state == .paused else {
            return .refused("no ride in progress: a marker needs a running or paused ride")
        }
        let e = RideEvent(.marker, at: now, markerKind: kind, value: value)
        if let b = builder, !b.canRecord(.marker) {
            return .refused("marker not recorded: the ride holds \(b.events.count) events, the most for markers; pause, lap and end still work")
        }
        do {
            try builder?.mark(e)
        } catch {
            return .refused("marker not recorded: \(error)")
        }
        journal(.event(e))
        emit(.syncJournal)
        return .done("marker recorded")
    }

    /// Stops the ride and saves or discards it.
    @discardableResult
    mutating func end(saving: Bool, at now: MonotonicInstant) -> ActionOutcome {
        if let refusal = transition(.stop, at: now, event: .stop) { return refusal }
        let wasRunning = builder?.isRunning ?? false
        journalBattery(DeviceBattery.atEndKey)
        applyChecked { b throws(BuilderRejection) in try b.stop(at: now) }
        autoPause.didStop()
        journal(.event(RideEvent(.stop, at: now)))
        if wasRunning {
            emit(.syncJournal)
            takeBoundaryReadings(at: now)
        }
        _ = transition(saving ? .save : .discard, at: now)
        journal(.finished(saved: saving, at: now))
        emit(.syncJournal)
        finishRide(saved: saving, at: now)
        return .done(saving ? "ride ended and saved" : "ride ended and discarded")
    }

    mutating func finishRide(saved: Bool, at now: MonotonicInstant) {
        navigationDidFinishRide(at: now)
        nextRecordInstant = nil
        summaryPage = 0
        summary = builder.map { Self.makeSummary($0, header: header!, saved: saved, recovered: recovered, at: now) }
        screen.summary = summary
        trainingDidFinish()
        if let h = header { emit(.rideFinished(h.rideID, saved: saved)) }
        // "RIDE SAVED" only once the file is durable (`AppInput.rideFile`); until then the
        // rider sees that it is being saved.
        showOverlay(saved ? .savingRide : .rideDiscarded, at: now)
    }

    /// The runtime's word on a saved ride's file: durable, or not written this time (it keeps
    /// the ride and tries again; the storage alert says why).
    mutating func handleRideFile(_ id: RideID, durable: Bool, at now: MonotonicInstant) {
        showOverlay(durable ? .rideSaved : .rideNotSaved, at: now)
    }

    /// Deletes the saved ride from the summary screen (its file goes too). Refused when there is
    /// no saved ride on the summary: a discarded ride has no file, a deleted one is gone already.
    @discardableResult
    mutating func deleteSavedRide(at now: MonotonicInstant) -> ActionOutcome {
        guard lifecycle.state == .ended, let h = header else { return .refused("there is no finished ride to delete") }
        guard summary?.saved == true else { return .refused("ride \(h.rideID) was not saved (discarded or deleted already): there is nothing to delete") }
        summary?.saved = false
        screen.summary = summary
        screen.mode = .summary(page: summaryPage)
        emit(.rideDeleted(h.rideID))
        showOverlay(.rideDiscarded, at: now)
        return .done("ride deleted")
    }

    @discardableResult
    mutating func dismiss(at now: MonotonicInstant) -> ActionOutcome {
        if let refusal = transition(.dismiss, at: now) { return refusal }
        return .done("summary dismissed")
    }

    static func makeSummary(_ b: RideBuilder, header: RideHeader, saved: Bool?, recovered: Bool, at now: MonotonicInstant) -> RideSummary {
        let r = b.statistics(at: now)
        var s = RideSummary(
            rideID: header.rideID, saved: saved,
            timerTimeMs: b.timerTimeMs(at: now), elapsedTimeMs: b.elapsedTimeMs(at: now),
            movingTimeMs: r.movingTime,
            distanceM: r[.distance].hasData ? r.distanceM : nil,
            averageSpeedMps: r.averageSpeedMps, maxSpeedMps: r[.speed].max,
            averageHeartRate: r[.heartRate].average, maxHeartRate: r[.heartRate].max,
            averagePowerW: r[.power].average, maxPowerW: r[.power].max,
            normalizedPowerW: b.normalizedPowerW,
            averageCadence: r[.cadence].average, maxCadence: r[.cadence].max,
            lapCount: b.laps.count,
            heartRateZoneTimes: b.heartRateZoneTimes, powerZoneTimes: b.powerZoneTimes,
            recovered: recovered,
            heartRateZones: b.settings.heartRateZones, powerZones: b.settings.powerZones,
            lapHeartRateZoneTimes: b.laps.map(\.heartRateZoneTimes), lapPowerZoneTimes: b.laps.map(\.powerZoneTimes),
            charts: SummaryCharts(b.intervals))
        s.radar = b.radar
        return s
    }

    // MARK: Samples, sensors, clock, storage

    mutating func handleSample(_ s: Sample) {
        let q = s.quantity.index
        guard configuration.enabledQuantities[q] else { disabledSamples &+= 1; return }
        guard s.value.isFinite else { return }
        liveValues[q].value = s.value
        liveValues[q].instant = s.instant
        liveValues[q].seen = true
        let collecting = lifecycle.state == .running || lifecycle.state == .paused
        if collecting && (s.quantity == .rrInterval || (s.quantity == .power && configuration.recordPowerSeries)) {
            journal(.series(s))
        }
    }

    /// What the data source reports (`now` is the event's instant on the ride's time line).
    mutating func handleSensorEvent(_ e: SensorEvent, at now: MonotonicInstant) {
        switch e {
        case .sample(var s):
            s.instant = now
            handleSample(s)
        case .status(let status, _):
            handleSensor(status, at: now)
        case .gps(let status, _):
            screen.gps = status
        case .clock(let wall, _):
            handleWallClock(wall, at: now)
        case .found(let f, _):
            sensorFound(f, at: now)
        case .search(let running, _, _):
            if !running { screen.sensorsMenu.searchEnded() }
        case .radar(let picture, _):
            handleRadar(picture, at: now)
        case .bridgeConfig(let readable, let line, _):
            // The bridge keeps the sensors it had: say so once (ctl status and the log say why).
            if !readable { showOverlay(.sensorConfigUnreadable(line: line), at: now) }
        }
    }

    mutating func handleSensor(_ status: SensorStatus, at now: MonotonicInstant) {
        let i = Int(status.role.rawValue)
        let old = sensorStates[i]
        sensorStates[i] = status.state
        screen.sensors[i] = status.state
        if let b = status.batteryPercent { screen.sensorBatteryPercent[i] = b }
        let riding = lifecycle.state == .running || lifecycle.state == .paused
        if riding && (old == .connected || old == .stale) && status.state == .lost { showOverlay(.sensorLost(status.role), at: now) }
        if riding && old == .lost && status.state == .connected { showOverlay(.sensorBack(status.role), at: now) }
        if status.state == .lost || status.state == .stale {
            // Its values are no longer live: show "--" at once, never the last value.
            for q in status.role.liveQuantities { liveValues[q.index].seen = false }
        }
        if status.role == .radar { radarStateChanged(status.state) }
    }

    /// The one place that decides what a wall-clock reading changes, whether it comes from the
    /// kernel (trusted while NTP keeps it synchronised) or from GPS time (trusted once the GPS
    /// clock rules let it through): `WallClockAnchor.updated`'s rules; a changed anchor during a
    /// ride is journaled (the ride is dated by it); the clock's first becoming trusted is
    /// announced (`clockTrusted`) so rides already saved on the untrusted clock are dated.
    mutating func handleWallClock(_ w: WallClockTime, at now: MonotonicInstant) {
        observedWall = WallClockAnchor(monotonic: now, wall: w)
        if w.trusted { anchorFromRecovery = false }
        let wasTrusted = wallAnchor?.wall.trusted ?? false
        let updated = wallAnchor.map { $0.updated(observed: w, at: now) } ?? WallClockAnchor(monotonic: now, wall: w)
        let changed = updated != wallAnchor
        wallAnchor = updated
        if changed, header != nil, lifecycle.state.isRideInProgress { journal(.wallClock(updated)) }
        if updated.wall.trusted && !wasTrusted {
            emit(.clockTrusted(WallClockAnchor(monotonic: now.advanced(byMs: -instantOffsetMs), wall: updated.wall)))
        }
    }

    mutating func handleStorage(_ c: StorageCondition, at now: MonotonicInstant) {
        guard c != screen.storage else { return }
        screen.storage = c
        switch c {
        case .ok: break
        case .low: showOverlay(.lowStorage, at: now)
        case .full: showOverlay(.storageFull, at: now)
        case .failing: showOverlay(.storageError, at: now)
        }
    }

    mutating func showOverlay(_ alert: Alert, at now: MonotonicInstant) {
        screen.overlay = alert
        overlayUntil = now.advanced(byMs: configuration.alertDisplayMs)
        emit(.alert(alert))
    }

    // MARK: Ticks

    mutating func handleTick(_ now: MonotonicInstant) {
        checkLongPresses(at: now)
        radarTick(at: now)
        _ = screen.sensorsMenu.expire(at: now)
        screen.coursesMenu.expire(at: now)
        if sensorsOpen { screen.sensorsMenu.tick(at: now) }
        if lifecycle.state == .prepared, let c = countdownStart {
            let end = c.advanced(byMs: Int64(configuration.countdownSeconds) * 1000)
            if now >= end { beginRide(at: end) }
        }
        takeDueRecord(at: now)
        builder?.advance(to: now)
        if let until = overlayUntil, now >= until {
            screen.overlay = nil
            overlayUntil = nil
        }
    }

    /// The 1 Hz record due at or before `now`, at its whole second of the ride (records missed
    /// while the loop was held up are counted, not made up).
    mutating func takeDueRecord(at now: MonotonicInstant) {
        guard let due = nextRecordInstant, now >= due, let start = builder?.startInstant else { return }
        let aligned = start.advanced(byMs: (now.milliseconds(since: start) / 1000) * 1000)
        let missed = aligned.milliseconds(since: due) / 1000
        if missed > 0 { recordsSkipped &+= UInt64(missed) }
        takeRecord(at: aligned)
        nextRecordInstant = aligned.advanced(byMs: 1000)
    }

    /// The 1 Hz record: every enabled quantity with a fresh live value, as a sample at `instant`,
    /// into the builder and the journal.
    mutating func takeRecord(at instant: MonotonicInstant) {
        guard builder != nil else { return }
        recordValues = RecordValues()
        var journaled = false
        for q in Quantity.allCases where q != .rrInterval {
            guard let value = recordValue(q, at: instant) else {
                // A sensor reported stale or lost: its last value is not bridged to a later one.
                if !liveValues[q.index].seen && !q.isCumulative { builder!.interrupt(q, at: instant) }
                continue
            }
            liveValues[q.index].recordedAt = liveValues[q.index].instant
            let v = q.recordedValue(value)
            let s = Sample(q, v, at: instant, origin: q == .distance || q == .energy ? .generated : .measured)
            do {
                try builder!.add(s)
                journal(.sample(s))
                journaled = true
                noteRecordValue(s)
            } catch {
                continue
            }
        }
        // Nothing to count at this second of a running ride: its time still went on, and a crash
        // must not take it back (workout-model.md §5: samples durable at least once per second).
        // (An instant an event already carries, the start's or a resume's, needs none.)
        if !journaled && lifecycle.state == .running && instant > (builder!.lastEventInstant ?? instant) {
            journal(.elapsed(instant))
        }
        afterRecord(at: instant, live: true)
    }

    /// The value a record at `instant` carries for `q`: a frame received within
    /// `recordWindowMs` before it and not recorded yet. A counter (distance, energy) is read at
    /// every record while its sensor is not reported stale or lost: the newest reading stays
    /// true until the next (a repeated reading adds nothing), and the distance covered while its
    /// sensor was quiet is counted when it speaks again.
    func recordValue(_ q: Quantity, at instant: MonotonicInstant) -> Double? {
        let l = liveValues[q.index]
        guard l.seen, configuration.enabledQuantities[q.index] else { return nil }
        if q.isCumulative { return l.value }
        guard l.instant > l.recordedAt, instant.milliseconds(since: l.instant) <= configuration.recordWindowMs else { return nil }
        return l.value
    }

    func freshLiveValue(_ q: Quantity, at now: MonotonicInstant) -> Double? {
        let l = liveValues[q.index]
        guard l.seen, configuration.enabledQuantities[q.index] else { return nil }
        guard now.milliseconds(since: l.instant) <= configuration.liveStaleMs else { return nil }
        return l.value
    }

    /// Announces zone changes at a record instant. The builder must be advanced to `instant`
    /// first, so that a value whose hold ran out by then no longer has a zone and the zone times
    /// in the update are complete up to `instant`.
    mutating func checkZoneChanges(at instant: MonotonicInstant, emitting: Bool = true) {
        guard let b = builder, lifecycle.state == .running else { return }
        for slot in ZoneSlot.allCases {
            let q = slot.quantity
            let z = b.currentZone(q)
            let previous = zoneSlots[slot.rawValue].lastZone
            guard z != previous else { continue }
            if emitting {
                let lap = b.currentLap
                emit(.zoneUpdate(ZoneUpdate(
                    quantity: q, zone: z, previousZone: previous,
                    rideZoneTimes: q == .heartRate ? b.heartRateZoneTimes : b.powerZoneTimes,
                    lapZoneTimes: (q == .heartRate ? lap?.heartRateZoneTimes : lap?.powerZoneTimes) ?? ZoneTimes(zoneCount: 0),
                    lastSampleInstant: instant)))
            }
            announceZone(z, for: slot)
        }
    }

    // MARK: Screen

    mutating func refreshScreen(at now: MonotonicInstant) {
        switch lifecycle.state {
        case .idle: screen.mode = sensorsOpen ? .sensors : navigation.menuOpen ? .courses : .idle
        case .prepared:
            let step = countdownStart.map { Int(now.milliseconds(since: $0) / 1000) } ?? 0
            screen.mode = .countdown(max(1, configuration.countdownSeconds - step))
        case .running: screen.mode = .running(page: runningPage)
        case .paused: screen.mode = .paused
        case .stopped, .ended:
            if screen.mode != .confirmDiscard { screen.mode = .summary(page: summaryPage) }
        }
        screen.recovered = recovered
        if let b = battery { screen.battery = b.status(atMs: now.milliseconds) }
        guard let b = builder, lifecycle.state == .running || lifecycle.state == .paused else {
            for m in 0..<Metric.countMax { screen.metrics[m] = nil }
            screen.heartRateZoneCount = 0
            screen.powerZoneCount = 0
            screen.heartRateTargetZone = nil
            screen.powerTargetZone = nil
            screen.heartRateZoneName = nil
            screen.powerZoneName = nil
            if lifecycle.state == .prepared || lifecycle.state == .idle {
                screen.timerMs = 0
                screen.elapsedMs = 0
                screen.movingMs = nil
                screen.lapTimerMs = 0
                screen.lapNumber = 0
            }
            // The idle screen still shows live sensor readings.
            if lifecycle.state == .idle || lifecycle.state == .prepared {
                screen[.heartRate] = freshLiveValue(.heartRate, at: now)
                screen[.power] = freshLiveValue(.power, at: now)
                screen[.speed] = freshLiveValue(.speed, at: now)
                screen[.cadence] = freshLiveValue(.cadence, at: now)
            }
            return
        }
        screen.timerMs = b.timerTimeMs(at: now)
        screen.elapsedMs = b.elapsedTimeMs(at: now)
        screen.movingMs = b.ride.movingTime
        screen.lapTimerMs = b.lapTimerTimeMs(at: now)
        screen.lapNumber = b.laps.count
        // Timer times at `now`: the live averages (speed = distance / timer time) are current
        // at every instant, also after a pause.
        let r = b.statistics(at: now)
        let lap = b.laps.isEmpty ? nil : b.lapStatistics(b.laps.count - 1, at: now)
        let live = lifecycle.state == .running
        screen[.speed] = live ? freshLiveValue(.speed, at: now) : nil
        screen[.heartRate] = live ? freshLiveValue(.heartRate, at: now) : nil
        screen[.power] = live ? freshLiveValue(.power, at: now) : nil
        screen[.cadence] = live ? freshLiveValue(.cadence, at: now) : nil
        screen[.distance] = r[.distance].hasData ? r.distanceM : nil
        refreshClimbing(r, at: now)
        screen[.averageSpeed] = r.averageSpeedMps
        screen[.maxSpeed] = r[.speed].max
        screen[.averageHeartRate] = r[.heartRate].average
        screen[.maxHeartRate] = r[.heartRate].max
        screen[.averagePower] = r[.power].average
        screen[.maxPower] = r[.power].max
        screen[.normalizedPower] = b.normalizedPowerW
        screen[.averageCadence] = r[.cadence].average
        // The zone last announced (a live zone update), numbered as shown: "Z3".
        let hrZones = b.settings.heartRateZones, powerZones = b.settings.powerZones
        let hr = zoneSlots[ZoneSlot.heartRate.rawValue], pwr = zoneSlots[ZoneSlot.power.rawValue]
        screen[.heartRateZone] = live ? hr.lastZone.flatMap { z in hrZones.map { Double($0.number(ofZone: z)) } } : nil
        screen[.powerZone] = live ? pwr.lastZone.flatMap { z in powerZones.map { Double($0.number(ofZone: z)) } } : nil
        screen.heartRateZoneName = live ? hr.lastZoneName : nil
        screen.powerZoneName = live ? pwr.lastZoneName : nil
        screen.heartRateZoneCount = b.settings.heartRateZones?.zoneCount ?? 0
        screen.powerZoneCount = b.settings.powerZones?.zoneCount ?? 0
        screen.heartRateTargetZone = hr.targetMonitor?.target.zone
        screen.powerTargetZone = pwr.targetMonitor?.target.zone
        screen[.lapDistance] = (lap?[.distance].hasData ?? false) ? lap?.distanceM : nil
        screen[.lapAveragePower] = lap?[.power].average
        screen[.lapAverageSpeed] = lap?.averageSpeedMps
        screen[.lapAverageHeartRate] = lap?[.heartRate].average
    }

    // MARK: Randomness (ride ids)

    /// Deterministic from the seed (`SplitMix64`), so the simulator's outputs repeat exactly.
    mutating func nextRandom() -> UInt64 {
        var g = SplitMix64(seed: randomState)
        defer { randomState = g.state }
        return g.next()
    }
}
