import AppCore
import RideModel

/// Where the screen value goes: the renderer and display driver on the board, the emulator in
/// the simulator. Called after every input that may have changed the screen; the adapter decides
/// what actually changed (dirty pages) and sends only that.
public protocol ScreenPort: AnyObject {
    func show(_ screen: ScreenModel, at now: MonotonicInstant)
}

/// Somebody following the ride (the control socket's subscribers, a companion): told about
/// every effect the core emits, after the runtime has carried it out.
public protocol RideObserver: AnyObject {
    func observe(_ effect: AppEffect, core: AppCore, at now: MonotonicInstant)
}

/// The runtime both executables share: owns the app core, feeds it inputs, and carries out its
/// effects through ports (journal, ride archive, screen, alert line, log). It knows nothing of
/// epoll, GPIO or files: the board's run loop and the simulator's manual clock call the same
/// methods, so the same inputs give the same ride on both.
public final class DeviceRuntime {
    public private(set) var core: AppCore
    let journal: RideJournalPort
    let archive: RideArchivePort
    let screenPort: ScreenPort?
    let alertOutput: AlertOutputPort?
    let log: LogPort
    var observers: [RideObserver] = []
    /// Observers kept at most (control-socket subscribers plus a companion).
    public static let observersMax = 16

    /// The reply to the last control command (the control socket hands it back to its client).
    public private(set) var lastReply: CommandReply?
    /// summary.json text of the last ride that finished (saved or discarded), for the simulator.
    public private(set) var lastFinishedSummaryJSON: String?
    public private(set) var lastFinishedRide: RideID?
    /// Rides whose file could not be written: their journal is kept so nothing is lost.
    public private(set) var archiveFailures: UInt64 = 0
    public private(set) var inputsHandled: UInt64 = 0
    var reportedStorage: StorageCondition = .ok

    public init(core: AppCore, journal: RideJournalPort, archive: RideArchivePort,
                screen: ScreenPort? = nil, alertOutput: AlertOutputPort? = nil, log: LogPort) {
        self.core = core
        self.journal = journal
        self.archive = archive
        self.screenPort = screen
        self.alertOutput = alertOutput
        self.log = log
        nextDeadline = core.nextDeadline
        state = core.state
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

    /// Feeds one input and carries out everything it caused.
    public func handle(_ input: AppInput) {
        inputsHandled &+= 1
        core.handle(input)
        let now = input.instant
        drain(at: now)
        if case .tick = input { journal.tick(at: now) }
        reportStorageIfChanged(at: now)
        screenPort?.show(core.screen, at: now)
        refreshDerived()
    }

    /// A control command; returns the core's answer.
    @discardableResult
    public func command(_ c: ControlCommand, at now: MonotonicInstant) -> CommandReply? {
        lastReply = nil
        handle(.command(c, at: now))
        return lastReply
    }

    /// Rebuilds an interrupted ride from its durable records (crash recovery), then re-attaches
    /// it to the device clock. `gapMs` is how long the device was down when a trusted wall clock
    /// says so, else 0.
    public func recover(_ records: [RideRecord], deviceNow: MonotonicInstant, gapMs: Int64) {
        for r in records { core.replay(r) }
        core.finishRecovery(deviceNow: deviceNow, gapMs: gapMs)
        drain(at: deviceNow)
        journal.syncNow(at: deviceNow)
        screenPort?.show(core.screen, at: deviceNow)
        refreshDerived()
        log.log(.warning, "recovered ride \(core.header?.rideID.description ?? "-") in state \(core.state), gap \(gapMs) ms")
    }

    /// Takes over a core that was just built (fresh or recovered by `FlashJournal.open`): carries
    /// out what it left pending (the gap event, "ride recovered") and shows the first screen.
    public func start(at now: MonotonicInstant) {
        drain(at: now)
        journal.syncNow(at: now)
        reportStorageIfChanged(at: now)
        screenPort?.show(core.screen, at: now)
        refreshDerived()
    }

    /// Writes a saved ride's file from its durable journal records, then lets the journal compact
    /// it. Also for a ride that ended before a crash but whose file was never confirmed durable
    /// (recovery reports them). On failure the journal keeps the ride: nothing is lost, and the
    /// next start tries again.
    public func writeRideFile(_ id: RideID, at now: MonotonicInstant) {
        let records = journal.records(of: id)
        guard !records.isEmpty else {
            log.log(.error, "ride \(id): no durable records to write a file from")
            return
        }
        do {
            let what = try archive.store(rideID: id, records: records)
            journal.rideFileIsDurable(id)
            log.log(.info, "ride \(id) saved: \(what)")
        } catch {
            archiveFailures &+= 1
            log.log(.error, "ride \(id) not written (\(error)); its journal is kept")
        }
    }

    /// Makes the journal durable (shutdown on SIGTERM).
    public func shutdown(at now: MonotonicInstant) {
        journal.syncNow(at: now)
        log.log(.info, "journal synced for shutdown")
    }

    func drain(at now: MonotonicInstant) {
        while let effect = core.drainEffect() {
            carryOut(effect, at: now)
            for o in observers { o.observe(effect, core: core, at: now) }
        }
    }

    func carryOut(_ effect: AppEffect, at now: MonotonicInstant) {
        switch effect {
        case .journal(let record):
            journal.append(record, at: now)
        case .syncJournal:
            journal.syncNow(at: now)
        case .alert(let alert):
            log.log(alert.sounds ? .warning : .info, "alert: \(alert)")
            if alert.sounds { alertOutput?.pulse(for: alert, at: now) }
        case .zoneUpdate:
            break // observers get it
        case .reply(let r):
            lastReply = r
        case .rideFinished(let id, let saved):
            finished(id, saved: saved, at: now)
        case .rideDeleted(let id):
            do {
                try archive.delete(rideID: id)
                log.log(.info, "ride \(id) deleted")
            } catch {
                log.log(.error, "could not delete ride \(id): \(error)")
            }
        }
    }

    func finished(_ id: RideID, saved: Bool, at now: MonotonicInstant) {
        lastFinishedSummaryJSON = SummaryJSON.make(core, at: now)
        lastFinishedRide = id
        journal.syncNow(at: now)
        guard saved else {
            journal.rideFileIsDurable(id)
            log.log(.info, "ride \(id) discarded")
            return
        }
        writeRideFile(id, at: now)
    }

    func reportStorageIfChanged(at now: MonotonicInstant) {
        let c = journal.condition
        guard c != reportedStorage else { return }
        reportedStorage = c
        core.handle(.storage(c, at: now))
        drain(at: now)
    }
}
