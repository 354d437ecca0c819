import AppCore
import Control
import RideModel
import Sensors

/// Where the screen value goes: the renderer and display driver on the board, the emulator in
/// the simulator. Called after every input that may have changed the screen; the adapter decides
/// what actually changed (dirty pages) and sends only that.
public protocol ScreenPort: AnyObject {
    func show(_ screen: ScreenModel, at now: MonotonicInstant)
}

/// The runtime every front end shares: owns the app core and the sensor inputs (data source and
/// serial framing), takes every input through one API, and carries out the core's effects
/// through ports (journal, ride archive, screen, alert line, log).
///
/// The inputs, whoever delivers them (the board's loop, the simulator's clock, the benchmark,
/// the tests):
/// - raw sensor input as it arrived: `receive(_:at:)` (a bridge packet, serial bytes; the
///   parsing, decoding and counting happen here, nowhere else), `bridgeConnected(at:)`,
///   `bridgeDisconnected(at:)`;
/// - a button edge: `buttonEdge(_:pressed:at:)` (debounced here when the runtime was made with
///   a debounce time; then `settleButtons(at:)` at `buttonsDeadline`);
/// - a control-socket line: `control(_:at:status:)` (parsed, dispatched and answered here);
/// - time: `tick(at:)` (sensor timeouts and the core's tick), `coreTick(at:)` (the core's own
///   deadline only), `wallClock(_:at:)`.
///
/// It knows nothing of epoll, GPIO or files, so the same inputs give the same ride on the board
/// and in the simulator. `boot` is the one start-up sequence.
public final class DeviceRuntime {
    public private(set) var core: AppCore
    let journal: RideJournalPort
    let archive: RideArchivePort
    let screenPort: ScreenPort?
    let alertOutput: AlertOutputPort?
    let log: LogPort
    var inputs: SensorInputs
    var debouncer: ButtonDebouncer?
    var observers: [RideObserver] = []
    /// Observers kept at most (control-socket subscribers plus a companion).
    public static let observersMax = 16

    /// The reply to the last control command (the control socket hands it back to its client).
    public private(set) var lastReply: CommandReply?
    /// The last ride that finished (saved or discarded).
    public private(set) var lastFinishedRide: RideID?
    /// Failed ride-file writes (each attempt): the ride is kept (journal and memory) and retried.
    public private(set) var archiveFailures: UInt64 = 0
    /// Ride files written durably.
    public private(set) var rideFilesWritten: UInt64 = 0
    /// Rides whose file could not be queued (more than `rideFilesPendingMax` waiting): their
    /// journal keeps them and the next start writes them.
    public private(set) var rideFilesNotQueued: UInt64 = 0
    /// The last ride-file failure, for `ctl status` (nil once a file is written again).
    public private(set) var lastRideFileError: String?
    /// Ride files wait in this queue; the head is written step by step (`workOnRideFiles`).
    var rideFiles: [RideFileJob] = []
    /// Rides whose file waits at most (a card that stays broken over many rides).
    public static let rideFilesPendingMax = 16
    /// After a failed write, the next attempt waits this long, doubling per failure up to
    /// `rideFileRetryMsMax` (a card that heals is used within that long, without a restart).
    public static let rideFileRetryMsMin: Int64 = 1_000
    public static let rideFileRetryMsMax: Int64 = 8_000
    /// While a ride file's fsync runs in the background (the board's io_uring), its completion
    /// is looked for this often, unless the board says when completions arrive
    /// (`rideFileCompletionsSignalled`: the ring's eventfd in the loop's epoll set).
    public static let rideFilePollMs: Int64 = 10
    /// With completions signalled, the next step is taken when one arrives
    /// (`rideFileStorageProgress`), or after this long at the latest (a guard, not a poll).
    public static let rideFileStorageGuardMs: Int64 = 1_000
    /// The board watches the ride files' completions (the ring's eventfd): a step waiting for
    /// the card is taken when `rideFileStorageProgress` says one arrived, not polled.
    public var rideFileCompletionsSignalled = false
    /// Attempts at dating one ride in this start (each failed step waits as a ride file's does);
    /// then it waits for the next start (its offset is on the card).
    public static let redatingAttemptsMax = 3
    /// Rides dated since this start, and datings given up until the next start.
    public private(set) var ridesRedated: UInt64 = 0
    public private(set) var redatingsDeferred: UInt64 = 0
    /// Whether ride files are written one bounded step per call of `workOnRideFiles` (the
    /// board's loop, between its turns) or all at once after the input that ended the ride (the
    /// simulator, tests).
    public var stepsRideFiles = false
    /// What the last ride-file write said about the storage (shown with the journal's).
    var rideFileCondition: StorageCondition = .ok
    public private(set) var inputsHandled: UInt64 = 0
    /// The ride recovery rebuilt at boot, if any.
    public private(set) var recoveredRide: RideID?
    var reportedStorage: StorageCondition = .ok
    /// Holds the screen's confirmation of a state change until its records are durable.
    var gate = ConfirmationGate()
    var sensorRequests: [SensorsRequest] = []
    public static let sensorRequestsMax = 8
    /// The courses on the card (nil: none can be loaded; `course load` says so).
    public var courseStore: CourseStorePort?
    /// What the Courses screen asked, carried out after the input (CourseStore.swift).
    var courseRequests: [CoursesRequest] = []
    public static let courseRequestsMax = 4

    /// A control reply held until the command's state change is durable (`control`).
    struct WaitingReply {
        var id: UInt64
        var mark: UInt64
        var answer: ControlAnswer
        var since: MonotonicInstant
        /// `end`: the ride whose file the reply waits for too, and the core's reply to reword
        /// when the file is not saved (DeviceRuntime+EndReply.swift).
        var rideFile: RideID? = nil
        var reply: CommandReply? = nil
    }
    /// Replies that wait for the journal's sync, oldest first (bounded: `controlRepliesWaitingMax`).
    var waitingReplies: [WaitingReply] = []
    var lastReplyID: UInt64 = 0
    /// The last ride files' fates, newest last: nil when durable, else why not (the last
    /// attempt's). Bounded: `rideFileOutcomesMax`.
    var rideFileOutcomes: [(id: RideID, notSaved: String?)] = []
    /// Control replies waiting for durability at most (the control socket serves 8 clients,
    /// each waiting for one reply at a time); past it a reply goes out at once, saying so.
    public static let controlRepliesWaitingMax = 16
    /// The longest a control reply waits for its change to become durable before it goes out
    /// with "(not yet durable: ...)". Checked on every input (ticks come at least once a
    /// second), so a reply leaves within about 2.5 s: inside the companion's 3 s command timeout.
    public static let controlReplyWaitMsMax: Int64 = 1_500
    /// Where a reply that waited for durability goes (the board's control socket server), with
    /// the id its `ControlAnswer.awaitingDurability` carried. Without a sink nothing waits: the
    /// reply goes out at once, saying the change is not durable yet.
    public var durableReplySink: ((UInt64, ControlAnswer) -> Void)?
    /// Carries out `sensors …` control lines (the board's sensors component: the bridge, the
    /// config file); nil where nothing can search or pair (the simulator, the tests).
    public var sensorsControl: ((SensorsControl) -> ControlAnswer)?
    /// Control replies that waited for durability, and those sent without it (a failing or
    /// disabled journal, a card slower than `controlReplyWaitMsMax`, too many waiting).
    public internal(set) var repliesDelayedForDurability: UInt64 = 0
    public private(set) var repliesNotDurable: UInt64 = 0
    /// Where a power-off is asked for (docs/power.md); nil: nowhere (logged when needed).
    public var powerPort: PowerPort?
    /// A power-off the core asked for (`PowerOff.swift`).
    var powerOffState: PowerOffState?

    /// - Parameters:
    ///   - sensors: the data source's pairing (the simulator's and the board's bridge sensors).
    ///   - buttonDebounceMs: debounce raw button edges this long (the board's GPIO lines); nil
    ///     when edges arrive clean (the simulator's scripted presses).
    public init(core: AppCore, journal: RideJournalPort, archive: RideArchivePort,
                screen: ScreenPort? = nil, alertOutput: AlertOutputPort? = nil, log: LogPort,
                sensors: DataSourceConfiguration = DataSourceConfiguration(sensors: []),
                buttonDebounceMs: Int64? = nil, initiallyPressed: [Button: Bool] = [:]) {
        self.core = core
        self.journal = journal
        self.archive = archive
        self.screenPort = screen
        self.alertOutput = alertOutput
        self.log = log
        inputs = SensorInputs(sensors)
        debouncer = buttonDebounceMs.map { ButtonDebouncer(debounceMs: $0, initiallyPressed: initiallyPressed) }
        nextDeadline = core.nextDeadline
        state = core.state
    }

    // MARK: Boot

    /// The journal as it was opened (`FlashJournal.open` over any storage): the port, the core it
    /// rebuilt (an interrupted ride recovered into it) and what recovery found.
    public typealias OpenedJournal = (journal: RideJournalPort, core: AppCore, report: RecoveryReport)

    /// The one start-up sequence (board, simulator, replay, benchmark): takes over the core the
    /// journal rebuilt and carries out what recovery left pending (the gap event, "ride
    /// recovered"), shows the first screen, reads the wall clock, writes the files of rides that
    /// ended before their file was durable, then announces every sensor role's first state.
    public static func boot(_ opened: OpenedJournal, archive: RideArchivePort, screen: ScreenPort? = nil,
                            alertOutput: AlertOutputPort? = nil, log: LogPort,
                            sensors: DataSourceConfiguration = DataSourceConfiguration(sensors: []),
                            buttonDebounceMs: Int64? = nil, initiallyPressed: [Button: Bool] = [:],
                            stepsRideFiles: Bool = false,
                            wall: WallClockTime?, at now: MonotonicInstant) -> DeviceRuntime {
        let report = opened.report
        for line in report.lines { log.log(report.recoveredRide == nil ? .info : .warning, "journal: \(line)") }
        let runtime = DeviceRuntime(core: opened.core, journal: opened.journal, archive: archive, screen: screen,
                                    alertOutput: alertOutput, log: log, sensors: sensors,
                                    buttonDebounceMs: buttonDebounceMs, initiallyPressed: initiallyPressed)
        runtime.recoveredRide = report.recoveredRide
        runtime.stepsRideFiles = stepsRideFiles
        for id in report.finishedRidesAwaitingFile { runtime.queueRideFile(id, at: now) }
        runtime.queueNextRedating(at: now)  // a dating a power cut interrupted (its offset is on the card)
        runtime.start(at: now)
        if let wall { runtime.wallClock(wall, at: now) }
        runtime.inputs.start(at: now) { runtime.handle(.sensor($0)) }
        return runtime
    }

    /// Takes over a core that was just built (fresh or recovered by `FlashJournal.open`): carries
    /// out what it left pending (the gap event, "ride recovered") and shows the first screen.
    /// Part of `boot`; on its own for tests that build the runtime by hand.
    public func start(at now: MonotonicInstant) {
        drain(at: now)
        sync(at: now)
        reportStorageIfChanged(at: now)
        show(at: now)
        refreshDerived()
        if !stepsRideFiles { writeDueRideFiles(at: now) }
    }

    /// Shows the core's screen, a state change held back while its records are not durable.
    func show(at now: MonotonicInstant) {
        let shown = gate.screen(core.screen, state: core.state, awaiting: journal.awaitingDurable)
        screenPort?.show(shown, at: now)
    }

    /// The lap number the screen shows (`ctl status` `lap`): the core's once the last state
    /// change is durable, the last confirmed one while it is still being synced. The core's own
    /// changes at the press, before its record is on the card.
    public var lapNumberShown: Int {
        guard journal.awaitingDurable, let confirmed = gate.confirmed else { return core.screen.lapNumber }
        return confirmed.lapNumber
    }

    /// The session state the screen shows (`ctl status` `state_shown`): the core's once its last
    /// change is durable, the last confirmed one while that change is still being synced. The
    /// core's `state` changes at the press; a power cut before the sync completes comes back in
    /// this one (the dm-log-writes sweep checks every replay point against it).
    public var stateShown: SessionState {
        guard journal.awaitingDurable, let confirmed = gate.confirmed else { return core.state }
        return confirmed.state
    }

    /// Screens shown with a state change held back until its records were durable.
    public var screensHeldForDurability: UInt64 { gate.heldScreens }

    /// A state change is on screen only once durable: true while one waits for its sync.
    public var confirmationAwaitingDurability: Bool { journal.awaitingDurable }

    /// The journal's background syncs finished (the board's completion eventfd): the durable
    /// prefix advances, a held state change appears, a failed sync is reported as the storage
    /// condition.
    public func syncProgress(at now: MonotonicInstant) {
        journal.syncProgress(at: now)
        reportStorageIfChanged(at: now)
        show(at: now)
        refreshDerived()
        if !stepsRideFiles && !rideFiles.isEmpty { writeDueRideFiles(at: now) }
        if !waitingReplies.isEmpty { settleWaitingReplies(at: now) }
    }

    public func addObserver(_ o: RideObserver) -> Bool {
        guard observers.count < Self.observersMax else { return false }
        observers.append(o)
        return true
    }

    public func removeObserver(_ o: RideObserver) {
        observers.removeAll { $0 === o }
    }

    /// The next device instant at which the core needs a tick (the run loop arms a timer for it).
    public private(set) var nextDeadline: MonotonicInstant?

    /// The session state.
    public private(set) var state: SessionState

    /// Copies what the run loop asks after every input out of the core. It reads the core in
    /// place: calling a getter on `core` (a stored property of a class) copies the whole core
    /// first, retains and all, which was the largest user-space cost per sensor frame.
    func refreshDerived() {
        let (d, s) = withUnsafeMutablePointer(to: &core) { p in (p.pointee.nextDeadline, p.pointee.state) }
        nextDeadline = d
        state = s
    }

    /// Lets a control stream look at the core (its state changes; with `metrics`, its 1 Hz
    /// metrics line) without copying the core, as reading `core` from another module would.
    public func sample(_ stream: ControlStream, metrics: Bool = true, at now: MonotonicInstant) {
        stream.tick(core: core, metrics: metrics, at: now)
    }

    // MARK: Sensor input

    /// Counters of everything sensor input went through (frames, samples, bad input by kind).
    public var sensorStatus: DataSourceStatus { inputs.status }

    /// The data source's pairing and per-sensor states (status queries; allocates).
    public var sensorReports: [DataSource.SensorReport] { inputs.source.sensorReports }

    /// Raw sensor input as a transport delivered it: parsed, decoded, counted and fed to the core.
    public func receive(_ input: RawSensorInput, at now: MonotonicInstant) {
        inputs.receive(input, at: now) { self.handle(.sensor($0)) }
    }

    /// Readings an onboard receiver delivered decoded (see `DataSource.handle(_:from:at:_:)`).
    public func receive(_ values: DerivedValues, from who: SourceIdentity, at now: MonotonicInstant) {
        inputs.receive(values, from: who, at: now) { self.handle(.sensor($0)) }
    }

    /// An onboard receiver's link changed (a GPS gained or lost its fix).
    public func link(_ who: SourceIdentity, _ state: LinkState, at now: MonotonicInstant) {
        inputs.link(who, state, at: now) { self.handle(.sensor($0)) }
    }

    /// The bridge transport is up (a socket accepted, a serial device opened).
    public func bridgeConnected(at now: MonotonicInstant) { inputs.bridgeConnected(at: now) }

    /// The paired sensors changed while running (the config file was rewritten by pairing or
    /// forgetting): the data source takes the new list, keeping the state of those still paired.
    public func replaceSensors(_ sensors: [PairedSensor], at now: MonotonicInstant) {
        inputs.replaceSensors(sensors, at: now) { self.handle(.sensor($0)) }
    }

    /// What the Sensors screen asked (`AppEffect.sensors`), in order, for the board to carry out
    /// after the input that caused it (never in the middle of draining the core's effects).
    public func takeSensorRequests() -> [SensorsRequest] {
        guard !sensorRequests.isEmpty else { return [] }
        defer { sensorRequests.removeAll() }
        return sensorRequests
    }

    /// The bridge transport went away: every sensor behind it is lost until it is back.
    public func bridgeDisconnected(at now: MonotonicInstant) {
        inputs.bridgeDisconnected(at: now) { self.handle(.sensor($0)) }
    }

    // MARK: Buttons

    /// A button's level changed at `instant` (`pressed` already accounts for active-low). With a
    /// debounce time the edge is held until it settles (`settleButtons(at:)`); without, it goes
    /// to the core at once as a down or up.
    public func buttonEdge(_ button: Button, pressed: Bool, at instant: MonotonicInstant) {
        if debouncer != nil {
            debouncer!.edge(button, pressed: pressed, at: instant)
        } else {
            handle(.button(ButtonEvent(button, pressed ? .down : .up, at: instant)))
        }
    }

    /// When debounced edges next settle (the run loop arms a timer for it); nil: none pending.
    public var buttonsDeadline: MonotonicInstant? { debouncer?.nextDeadline }

    /// Confirms the button levels that settled by `now` and feeds their downs and ups to the core.
    public func settleButtons(at now: MonotonicInstant) {
        guard debouncer != nil else { return }
        for e in debouncer!.advance(to: now) { handle(.button(e)) }
    }

    /// The debouncer's counters (status, tests); nil without debouncing.
    public var buttonDebouncer: ButtonDebouncer? { debouncer }

    // MARK: Time

    /// The 1 Hz tick: stale and lost sensors, a silent bridge, then the core's tick (its
    /// deadlines, the 1 Hz record, the journal's group commit).
    public func tick(at now: MonotonicInstant) {
        inputs.tick(at: now) { self.handle(.sensor($0)) }
        handle(.tick(now))
        if powerOffState != nil { powerOffIfDue(at: now) }
    }

    /// The core's own deadline only (a long press, a record instant, a countdown step), without
    /// the sensor timeouts: for clocks that run those once a second apart (the simulator).
    public func coreTick(at now: MonotonicInstant) { handle(.tick(now)) }

    /// A wall-clock reading (the system clock; NTP may set it after boot).
    public func wallClock(_ wall: WallClockTime, at now: MonotonicInstant) { handle(.wallClock(wall, at: now)) }

    // MARK: Control

    /// A control command; returns the core's answer.
    @discardableResult
    public func command(_ c: ControlCommand, at now: MonotonicInstant) -> CommandReply? {
        lastReply = nil
        handle(.command(c, at: now))
        return lastReply
    }

    /// One control-socket line, answered: commands go to the core (its reply, or "accepted"),
    /// `status` is `status()` (the board's figures; the runtime has no loop or hardware), and
    /// `subscribe` turns the connection into `stream`'s (when there is one).
    public func control(_ line: String, stream: ControlStream? = nil, at now: MonotonicInstant,
                        status: () -> String) -> ControlAnswer {
        if let special = ControlProtocol.parseStreamRequest(line) {
            switch special {
            case .failure(let e):
                return ControlAnswer(ControlProtocol.format(e), isError: true)
            case .success(.subscribe(let from, let id)):
                guard let stream else { return ControlAnswer("error this device has no event stream", isError: true) }
                let sub = stream.subscribe(from: from, streamID: id, core: core, at: now)
                return ControlAnswer(sub.reply, subscription: sub.lines)
            case .success(.pairingCode(let code)):
                // A stream request's reply carries no state ("ok pairing code shown").
                let reply = command(.showPairingCode(code), at: now)
                guard let reply else { return ControlAnswer("ok " + ControlProtocol.word(.showPairingCode(code))) }
                return ControlAnswer((reply.ok ? "ok " : "error ") + reply.message, isError: !reply.ok)
            }
        }
        switch ControlProtocol.parse(line) {
        case .failure(let e):
            return ControlAnswer(ControlProtocol.format(e), isError: true)
        case .success(.help):
            return ControlAnswer(ControlProtocol.formatHelp())
        case .success(.status):
            return ControlAnswer("ok " + status())
        case .success(.sensors(let request)):
            guard let sensorsControl else { return ControlAnswer("error this device has no bridge to search or pair sensors with", isError: true) }
            return sensorsControl(request)
        case .success(.courseList):
            return controlCourse(.list, at: now)
        case .success(.courseLoad(let name)):
            return controlCourse(.load(name), at: now)
        case .success(.command(let c)):
            let markBefore = journal.confirmationMark
            let finishedBefore = lastFinishedRide
            let reply = command(c, at: now)
            let a = answer(for: c, reply)
            let mark = journal.confirmationMark
            if case .end = c, let reply, reply.ok, let id = lastFinishedRide, id != finishedBefore,
               rideFiles.contains(where: { $0.rideID == id }) || rideFileOutcomes.contains(where: { $0.id == id }) {
                return awaitingRideFile(a, reply, ride: id, mark: mark, at: now)
            }
            guard mark != markBefore, !a.isError else { return a }
            return awaitingDurability(a, mark: mark, at: now)
        }
    }

    /// A command that changed the ride's state (it synced the journal) is answered only once
    /// its records are durable, as the screen confirms it only then ("ok" must survive a power
    /// cut). Where that cannot be waited for, the reply goes now and says why.
    func awaitingDurability(_ a: ControlAnswer, mark: UInt64, at now: MonotonicInstant) -> ControlAnswer {
        if journal.isDurable(mark) { return a }
        if let why = journal.notDurableReason { return notDurable(a, why) }
        guard durableReplySink != nil else { return notDurable(a, "the journal's sync is still running") }
        guard waitingReplies.count < Self.controlRepliesWaitingMax else {
            return notDurable(a, "\(waitingReplies.count) replies already wait for the card")
        }
        lastReplyID &+= 1
        waitingReplies.append(WaitingReply(id: lastReplyID, mark: mark, answer: a, since: now))
        repliesDelayedForDurability &+= 1
        var held = a
        held.awaitingDurability = lastReplyID
        return held
    }

    func notDurable(_ a: ControlAnswer, _ why: String) -> ControlAnswer {
        repliesNotDurable &+= 1
        log.log(.warning, "control: reply sent before its change was durable (\(why))")
        return ControlAnswer(a.line + " " + ControlProtocol.notDurableMarker + why + ")", isError: a.isError)
    }

    /// Control replies that wait for durability: those whose change is durable go out as they
    /// are; those that cannot become durable now (a failing or disabled journal) or waited
    /// `controlReplyWaitMsMax` go out saying so. Each goes to `durableReplySink` outside any
    /// iteration, so the sink may feed the runtime again (a client's next line).
    func settleWaitingReplies(at now: MonotonicInstant) {
        for _ in 0..<Self.controlRepliesWaitingMax {
            var found: (Int, ControlAnswer)?
            for (i, w) in waitingReplies.enumerated() {
                if let id = w.rideFile, let reply = w.reply {
                    let late = now.milliseconds(since: w.since) >= Self.controlReplyWaitMsMax
                    found = (rideFileAnswer(w.answer, reply, ride: id) ?? (late ? rideFileLate(reply, mark: w.mark) : nil)).map { (i, $0) }
                } else if journal.isDurable(w.mark) {
                    found = (i, w.answer)
                } else if let why = journal.notDurableReason {
                    found = (i, notDurable(w.answer, why))
                } else if now.milliseconds(since: w.since) >= Self.controlReplyWaitMsMax {
                    found = (i, notDurable(w.answer, "the card has not confirmed the write within \(Self.controlReplyWaitMsMax) ms; the screen shows the change once it has"))
                }
                if found != nil { break }
            }
            guard let (i, answer) = found else { return }
            let id = waitingReplies.remove(at: i).id
            durableReplySink?(id, answer)
        }
    }

    /// Control replies waiting for their change to become durable.
    public var controlRepliesWaiting: Int { waitingReplies.count }

    func answer(for c: ControlCommand, _ reply: CommandReply?) -> ControlAnswer {
        log.log(reply?.ok == false ? .warning : .info, "control: \(ControlProtocol.word(c)) → \(reply.map { $0.message } ?? "accepted")")
        guard let reply else { return ControlAnswer(ControlProtocol.formatAccepted(c, state: state)) }
        return ControlAnswer(ControlProtocol.format(reply), isError: !reply.ok)
    }

    // MARK: Any input

    /// Feeds one input and carries out everything it caused. The typed entries above are the
    /// front ends' API; this one is for inputs that are already app inputs (a replayed FIT file's
    /// samples, tests).
    public func handle(_ input: AppInput) {
        inputsHandled &+= 1
        core.handle(input)
        let now = input.instant
        drain(at: now)
        if case .tick = input { journal.tick(at: now) }
        reportStorageIfChanged(at: now)
        show(at: now)
        refreshDerived()
        if !stepsRideFiles && !rideFiles.isEmpty { writeDueRideFiles(at: now) }
        if !waitingReplies.isEmpty { settleWaitingReplies(at: now) }
        if !courseRequests.isEmpty { serviceCourseRequests(at: now) }
    }

    // MARK: Effects

    /// A ride whose file is to be written: its records are gathered at the first step, then
    /// the archive's steps run; a failure waits `backoffMs` and starts the writing over.
    struct RideFileJob {
        var rideID: RideID
        var write: RideArchiveJob?
        var failures = 0
        var dueAt: MonotonicInstant
        /// Whether the rider was told it failed (once per ride, not per retry).
        var alerted = false
        /// A saved ride's files written again, dated (`RideArchivePort.nextRedating`): no journal
        /// to release and nothing to tell the rider when done.
        var redating = false
        /// The last step waits for the card (a background fsync).
        var waiting = false
    }

    /// Takes the archive's next ride to date into the ride-file queue, behind the rides being
    /// saved, unless one is there already (one at a time: the queue stays bounded).
    func queueNextRedating(at now: MonotonicInstant) {
        guard !rideFiles.contains(where: \.redating), let (id, job) = archive.nextRedating() else { return }
        rideFiles.append(RideFileJob(rideID: id, write: job, dueAt: now, redating: true))
    }

    /// The board's ride-file completions arrived (the ring's eventfd): a step waiting for the
    /// card is taken now.
    public func rideFileStorageProgress(at now: MonotonicInstant) {
        guard !rideFiles.isEmpty, rideFiles[0].waiting else { return }
        rideFiles[0].waiting = false
        rideFiles[0].dueAt = now
        if !stepsRideFiles { writeDueRideFiles(at: now) }
    }

    /// Queues the file of a ride that ended saved (or that recovery found without a durable
    /// file). It is written from everything the device holds of the ride, durable or not.
    public func writeRideFile(_ id: RideID, at now: MonotonicInstant) {
        queueRideFile(id, at: now)
        if !stepsRideFiles { writeDueRideFiles(at: now) }
    }

    func queueRideFile(_ id: RideID, at now: MonotonicInstant) {
        guard !rideFiles.contains(where: { $0.rideID == id }) else { return }
        guard rideFiles.count < Self.rideFilesPendingMax else {
            rideFilesNotQueued &+= 1
            log.log(.error, "ride \(id): \(rideFiles.count) ride files already wait to be written; its journal keeps it and the next start writes it")
            return
        }
        rideFiles.append(RideFileJob(rideID: id, dueAt: now))
    }

    /// Rides whose file waits to be written (the one being written included).
    public var rideFilesPending: Int { rideFiles.count }

    /// When `workOnRideFiles` has work next: now while a file is being written, the retry time
    /// after a failure, nil when no file waits. The board's loop arms a timer for it.
    public var rideFileDeadline: MonotonicInstant? { rideFiles.first?.dueAt }

    /// One bounded step of the ride file being written (gather its records, build the export,
    /// one encoder, one file written and synced, ...). Returns whether more steps are due at
    /// once (the loop serves its descriptors in between).
    @discardableResult
    public func workOnRideFiles(at now: MonotonicInstant) -> Bool {
        guard var job = rideFiles.first, now >= job.dueAt else { return false }
        if job.write == nil {
            guard let records = journal.recordsHeld(of: job.rideID) else {
                rideFileFailed(&job, JournalUnreadable(), at: now)
                return false
            }
            guard !records.isEmpty else {
                rideFiles.removeFirst()
                log.log(.error, "ride \(job.rideID): no records held to write a file from")
                return !rideFiles.isEmpty
            }
            job.write = archive.beginStore(rideID: job.rideID, records: records)
            rideFiles[0] = job
            return true
        }
        do {
            job.waiting = false
            guard try job.write!.step() else {
                guard job.write!.waitsForStorage else { return true }
                job.waiting = true
                job.dueAt = now.advanced(byMs: rideFileCompletionsSignalled ? Self.rideFileStorageGuardMs : Self.rideFilePollMs)
                rideFiles[0] = job
                return false
            }
        } catch {
            rideFileFailed(&job, error, at: now)
            return false
        }
        rideFiles.removeFirst()
        if job.redating {
            ridesRedated &+= 1
            log.log(.info, "ride \(job.rideID) dated: \(job.write!.summary)")
            queueNextRedating(at: now)
            return !rideFiles.isEmpty
        }
        rideFilesWritten &+= 1
        rideFileCondition = .ok
        lastRideFileError = nil
        noteRideFileOutcome(job.rideID, notSaved: nil)
        // Only now may the journal let the ride go: its file holds every record.
        journal.rideFileIsDurable(job.rideID)
        // Saved on an unset clock that was set meanwhile: its dating joins the queue.
        queueNextRedating(at: now)
        log.log(.info, "ride \(job.rideID) saved: \(job.write!.summary)")
        handle(.rideFile(job.rideID, durable: true, at: now))
        return !rideFiles.isEmpty
    }

    func rideFileFailed(_ job: inout RideFileJob, _ error: any Error, at now: MonotonicInstant) {
        if job.redating {
            redatingFailed(&job, error, at: now)
            return
        }
        archiveFailures &+= 1
        let failure = RideArchiveFailure(error)
        lastRideFileError = "\(error)"
        noteRideFileOutcome(job.rideID, notSaved: Self.notSavedWhy(failure, error))
        if failure == .unexportable {
            rideFiles.removeFirst()
            log.log(.error, "ride \(job.rideID) cannot be written as a file (\(error)); its journal is kept")
        } else {
            job.failures += 1
            let backoff = min(Self.rideFileRetryMsMax, Self.rideFileRetryMsMin << min(job.failures - 1, 16))
            job.dueAt = now.advanced(byMs: backoff)
            job.write?.retry()
            rideFileCondition = failure.condition
            log.log(.error, "ride \(job.rideID) not written (\(error)); kept, retry \(job.failures) in \(backoff) ms")
            let tell = !job.alerted
            job.alerted = true
            rideFiles[0] = job
            guard tell else { reportStorageAfterRideFile(at: now); return }
            // The storage word first (status bar), then the overlay the rider is left with.
            reportStorageIfChanged(at: now)
        }
        handle(.rideFile(job.rideID, durable: false, at: now))
    }

    /// A dating step failed: tried again after the ride files' back-off, a few times; then the
    /// ride waits for the next start (its records and offset stay on the card). The ride is
    /// saved either way: nothing is shown to the rider beyond the storage condition.
    func redatingFailed(_ job: inout RideFileJob, _ error: any Error, at now: MonotonicInstant) {
        job.failures += 1
        let failure = RideArchiveFailure(error)
        if failure != .unexportable { rideFileCondition = failure.condition }
        guard job.failures < Self.redatingAttemptsMax, failure != .unexportable else {
            rideFiles.removeFirst()
            redatingsDeferred &+= 1
            log.log(.error, "ride \(job.rideID) not dated (\(error)); the next start tries again")
            reportStorageAfterRideFile(at: now)
            queueNextRedating(at: now)
            return
        }
        let backoff = min(Self.rideFileRetryMsMax, Self.rideFileRetryMsMin << min(job.failures - 1, 16))
        job.dueAt = now.advanced(byMs: backoff)
        job.waiting = false
        job.write?.retry()
        rideFiles[0] = job
        log.log(.error, "ride \(job.rideID) not dated yet (\(error)); retry \(job.failures) in \(backoff) ms")
        reportStorageAfterRideFile(at: now)
    }

    /// A retry that failed again changes no alert unless the storage condition changed.
    func reportStorageAfterRideFile(at now: MonotonicInstant) {
        reportStorageIfChanged(at: now)
        show(at: now)
        refreshDerived()
    }

    /// Without steps (the simulator, tests): every due ride file is written at once.
    func writeDueRideFiles(at now: MonotonicInstant) {
        var budget = Self.rideFilesPendingMax * 64 // bounded: steps per file are few
        while budget > 0, let due = rideFiles.first?.dueAt, now >= due {
            budget -= 1
            _ = workOnRideFiles(at: now)
        }
    }

    /// Makes the journal durable (shutdown on SIGTERM).
    public func shutdown(at now: MonotonicInstant) {
        journal.flush(at: now)
        log.log(.info, "journal synced for shutdown")
    }

    func sync(at now: MonotonicInstant) { journal.syncNow(at: now) }

    func drain(at now: MonotonicInstant) {
        while let effect = core.drainEffect() {
            carryOut(effect, at: now)
            guard !observers.isEmpty else { continue }
            // The core is lent in place (see `refreshDerived`): reading `core` would copy it,
            // retains and all, once per effect and observer.
            withUnsafeMutablePointer(to: &core) { p in
                for o in observers { o.observe(effect, core: p.pointee, at: now) }
            }
        }
    }

    func carryOut(_ effect: AppEffect, at now: MonotonicInstant) {
        switch effect {
        case .journal(let record):
            journal.append(record, at: now)
        case .syncJournal:
            sync(at: now)
        case .alert(let alert):
            // The radar's beeps are news, not trouble: logged as information.
            log.log(alert.sounds && alert.beep == .single ? .warning : .info, "alert: \(alert)")
            if alert.sounds { alertOutput?.pulse(for: alert, at: now) }
        case .zoneUpdate:
            break // observers get it
        case .reply(let r):
            lastReply = r
        case .rideFinished(let id, let saved):
            finished(id, saved: saved, at: now)
        case .rideDeleted(let id):
            // A dating of it under way is dropped (it must not write the ride back).
            if let i = rideFiles.firstIndex(where: { $0.rideID == id && $0.redating }) {
                rideFiles.remove(at: i)
                queueNextRedating(at: now)
            }
            if let i = rideFiles.firstIndex(where: { $0.rideID == id }) {
                // Deleted before its file was written: nothing to write, nothing to keep.
                rideFiles.remove(at: i)
                journal.rideFileIsDurable(id)
                log.log(.info, "ride \(id) deleted before its file was written")
                return
            }
            do {
                try archive.delete(rideID: id)
                log.log(.info, "ride \(id) deleted")
            } catch {
                log.log(.error, "could not delete ride \(id): \(error)")
            }
        case .sensors(let request):
            // Bounded: a board that never takes them (the simulator) keeps the newest few.
            if sensorRequests.count >= Self.sensorRequestsMax { sensorRequests.removeFirst() }
            sensorRequests.append(request)
        case .clockTrusted(let anchor):
            // No file work here: the rides to date join the ride-file queue as stepped jobs.
            archive.clockTrusted(anchor)
            queueNextRedating(at: now)
        case .pairingCodeDismissed:
            log.log(.info, "pairing code cleared with a button")
        case .courses(let request):
            if courseRequests.count >= Self.courseRequestsMax { courseRequests.removeFirst() }
            courseRequests.append(request)
        case .powerOff(let reason):
            powerOffAsked(reason, at: now)
        }
    }

    func finished(_ id: RideID, saved: Bool, at now: MonotonicInstant) {
        lastFinishedRide = id
        // Not waited for: the ride file is written from every record held (`recordsHeld`: the
        // durable ones, then those still in flight or queued).
        sync(at: now)
        guard saved else {
            journal.rideFileIsDurable(id)
            log.log(.info, "ride \(id) discarded")
            return
        }
        queueRideFile(id, at: now)
    }

    /// The storage condition the rider is shown: the worse of the journal's and the last
    /// ride-file write's.
    public var storageCondition: StorageCondition {
        let j = journal.condition
        return j.rawValue >= rideFileCondition.rawValue ? j : rideFileCondition
    }

    func reportStorageIfChanged(at now: MonotonicInstant) {
        let c = storageCondition
        guard c != reportedStorage else { return }
        reportedStorage = c
        core.handle(.storage(c, at: now))
        drain(at: now)
    }
}
