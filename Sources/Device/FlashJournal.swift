import AppCore
import Journal
import RideModel

/// What recovery found and did, for the log, the screen and `journal inspect`.
public struct RecoveryReport: Sendable {
    /// The interrupted ride that was rebuilt, if any.
    public var recoveredRide: RideID?
    /// The state it resumed in.
    public var resumedState: SessionState = .idle
    public var recordsReplayed = 0
    /// Time the device was down (from the monotonic clock in the same boot, else a trusted
    /// wall clock; 0 when unknown) and where it came from.
    public var gapMs: Int64 = 0
    public var gapSource: RecoveryGapSource = .unknown
    /// Rides that ended (saved) but whose file was never confirmed durable: write them again.
    public var finishedRidesAwaitingFile: [RideID] = []
    /// Repairs: cut torn records, segments set aside (kept, never deleted), storage errors.
    public var repairs: [String] = []
    public var segmentsSetAside: [String] = []
    /// Checkpoints that disagreed with the records before them (a sign of lost records).
    public var checkpointMismatches = 0
    public var orphanRecords = 0

    public var lines: [String] {
        var out: [String] = []
        if let id = recoveredRide {
            out.append("ride \(id) recovered: \(recordsReplayed) records replayed, resumed \(resumedState), gap \(gapMs) ms (\(gapSource))")
        } else {
            out.append("no interrupted ride")
        }
        for id in finishedRidesAwaitingFile { out.append("ride \(id) ended but its file was not confirmed: write it again") }
        if checkpointMismatches > 0 { out.append("\(checkpointMismatches) checkpoint(s) disagree with the records before them") }
        if orphanRecords > 0 { out.append("\(orphanRecords) record(s) without a ride header ignored") }
        out += repairs
        return out
    }
}

/// The ride journal on flash: `RideJournalPort` over any `SegmentStorage` (the simulated flash
/// or a data directory), with recovery into a fresh `AppCore`.
public final class FlashJournal: RideJournalPort {
    public let writer: JournalWriter
    public let storage: SegmentStorage

    /// Continues the journal after `scan` (from `FlashJournal.open`).
    init(storage: SegmentStorage, scan: JournalScan, rides: [JournaledRide], policy: CommitPolicy) {
        self.storage = storage
        writer = JournalWriter(storage: storage, after: scan, rides: rides, policy: policy)
    }

    public func append(_ record: RideRecord, at now: MonotonicInstant) { writer.append(record, at: now) }
    /// A state change: committed at once. Over storage that syncs in the background this does
    /// not wait; `awaitingDurable` holds the screen's confirmation until the sync completes.
    public func syncNow(at now: MonotonicInstant) {
        confirmationMark = writer.enqueuedCount
        writer.commit(at: now, confirm: true)
    }
    /// Items queued up to the last state change (`syncNow`): durable once `durableSerial` reaches it.
    public private(set) var confirmationMark: UInt64 = 0
    public func isDurable(_ mark: UInt64) -> Bool {
        // A disabled journal drops what a written ride file holds (`discardPending`): gone, not durable.
        disabledReason == nil && writer.durableSerial >= mark
    }
    public var notDurableReason: String? {
        if let d = disabledReason { return "journal disabled: \(d)" }
        guard let e = writer.lastError else { return nil }
        return e.kind == .noSpace ? "STORAGE FULL: \(e.message)" : "STORAGE ERROR: \(e.message)"
    }
    public func tick(at now: MonotonicInstant) {
        writer.tick(at: now)
        if compactionOwed && writer.pendingCount == 0 {
            compactionOwed = false
            writer.compact()
        }
    }
    public var awaitingDurable: Bool { writer.awaitingConfirmation }
    public func syncProgress(at now: MonotonicInstant) {
        lastInstant = max(lastInstant, now)
        writer.pollCompletions(at: now)
    }
    public func flush(at now: MonotonicInstant) { writer.commitAndWait(at: now) }

    /// A ride's file became durable while the journal could not write its mark: once the
    /// retries got everything written, the journal is compacted (not only at the next start).
    var compactionOwed = false

    /// Why the journal cannot write at all (an unusable data directory at start): every record
    /// is kept in memory (`CommitPolicy.pendingRecordsMax`, then counted as dropped) and the
    /// condition is `.failing` from the start.
    public private(set) var disabledReason: String?

    public var condition: StorageCondition {
        if disabledReason != nil { return .failing }
        return switch writer.health {
        case .ok: .ok
        case .low: .low
        case .full: .full
        case .failing: .failing
        }
    }

    public var counters: JournalCounters { writer.counters }

    var reportedCondition: StorageCondition = .ok

    /// The storage condition if it changed since the last call: feed it to the app core as
    /// `.storage(condition, at:)` (it shows STORAGE FULL / ERROR / LOW; the ride goes on).
    public func conditionChange() -> StorageCondition? {
        let c = condition
        guard c != reportedCondition else { return nil }
        reportedCondition = c
        return c
    }

    /// The ride's durable records, read back from storage (verified, not repaired).
    public func records(of rideID: RideID) -> [RideRecord] {
        let scan = JournalScan.scan(storage, repair: false)
        guard let ride = scan.rides(withRecords: false).rides.last(where: { $0.rideID == rideID }) else { return [] }
        return scan.records(of: ride)
    }

    /// The durable records (as `records(of:)`, but only those the writer counts as durable:
    /// written but unsynced frames are left to the pending ones), then the records still waiting
    /// to be written.
    public func recordsHeld(of rideID: RideID) -> [RideRecord]? {
        var scan = JournalScan.scan(storage, repair: false)
        if disabledReason == nil && !scan.storageErrors.isEmpty { return nil }
        let durableEnd = writer.nextSequence
        if let cut = scan.records.firstIndex(where: { $0.sequence >= durableEnd }) { scan.records.removeSubrange(cut...) }
        var out: [RideRecord] = []
        if let ride = scan.rides(withRecords: false).rides.last(where: { $0.rideID == rideID }) { out = scan.records(of: ride) }
        out += writer.pendingRecords(of: rideID)
        return out
    }

    public func rideFileIsDurable(_ rideID: RideID) {
        if disabledReason != nil {
            writer.discardPending(of: rideID) // the file holds it all; nothing else ever will
            return
        }
        writer.markRideFileDurable(rideID, at: lastInstant)
        if writer.pendingCount > 0 { compactionOwed = true }
    }

    /// Instant used for bookkeeping records that have no input of their own.
    var lastInstant = MonotonicInstant.zero

    /// Carries out the app core's journal effects (the runtime does this for every effect; tests
    /// and tools use it). Returns the effects that are not the journal's.
    public func apply(_ effect: AppEffect, at now: MonotonicInstant) -> Bool {
        lastInstant = now
        switch effect {
        case .journal(let r): append(r, at: now); return true
        case .syncJournal: syncNow(at: now); return true
        default: return false
        }
    }

    /// Opens the journal on `storage`: scans and repairs it, rebuilds the interrupted ride (if any)
    /// in a fresh app core and re-attaches it to the device's clock. The core's pending effects
    /// (the gap event, "ride recovered") are left for the runtime to drain as usual; apply them
    /// to the returned journal.
    ///
    /// - Parameters:
    ///   - deviceNow: the monotonic clock now (it restarted at boot).
    ///   - wallNow: the wall clock now, if known; a trusted reading gives the gap's length.
    ///   - boot: this boot's identity, if known: a ride journaled in the same boot gets its gap
    ///     from the monotonic clock, and every ride journals its timeline in it.
    public static func open(storage: SegmentStorage, configuration: AppConfiguration = AppConfiguration(),
                            randomSeed: UInt64, deviceNow: MonotonicInstant, wallNow: WallClockTime? = nil,
                            boot: BootIdentity? = nil,
                            policy: CommitPolicy = CommitPolicy()) -> (journal: FlashJournal, core: AppCore, report: RecoveryReport) {
        let scan = JournalScan.scan(storage, repair: true)
        let (rides, orphans) = scan.rides(withRecords: false)
        let journal = FlashJournal(storage: storage, scan: scan, rides: rides, policy: policy)
        journal.lastInstant = deviceNow
        var report = RecoveryReport()
        report.repairs = scan.repairs
        report.segmentsSetAside = scan.setAside.map(\.name)
        report.orphanRecords = orphans
        report.checkpointMismatches = rides.reduce(0) { $0 + $1.checkpointMismatches }
        report.finishedRidesAwaitingFile = rides.filter { $0.finished == true && !$0.fileDurable }.map(\.rideID)
        var core = AppCore(configuration: configuration, randomSeed: randomSeed)
        core.boot = boot
        if let ride = rides.last, ride.isUnfinished {
            var replayed = 0
            scan.forEachRecord(in: ride.frames) { r in
                core.replay(r)
                replayed += 1
            }
            report.recordsReplayed = replayed
            let gap = core.recoveryGapMs(deviceNow: deviceNow, wallNow: wallNow, maxMs: Self.gapMsMax)
            report.gapMs = gap.ms
            report.gapSource = gap.from
            core.finishRecovery(deviceNow: deviceNow, gapMs: report.gapMs)
            if ride.started {
                report.recoveredRide = ride.rideID
                report.resumedState = core.state
                // A ride stopped but not yet saved is saved now: the core emits `.rideFinished`
                // for it like for any ride, so it is not listed in `finishedRidesAwaitingFile`.
            } else {
                // Header without a start: nothing to recover; let compaction drop it.
                journal.writer.markRideFileDurable(ride.rideID, at: deviceNow)
            }
        }
        journal.writer.compact()
        return (journal, core, report)
    }

    /// A journal that writes nothing (the data directory cannot be used at start): the device
    /// starts and rides anyway, its records kept in memory for the ride file, the condition
    /// `.failing` (STORAGE ERROR) and `reason` in the report.
    public static func disabled(reason: String, configuration: AppConfiguration = AppConfiguration(), randomSeed: UInt64,
                                deviceNow: MonotonicInstant,
                                policy: CommitPolicy = CommitPolicy()) -> (journal: FlashJournal, core: AppCore, report: RecoveryReport) {
        let storage = UnavailableStorage(reason: reason)
        let journal = FlashJournal(storage: storage, scan: JournalScan.scan(storage, repair: false), rides: [], policy: policy)
        journal.disabledReason = reason
        journal.lastInstant = deviceNow
        var report = RecoveryReport()
        report.repairs = ["journal disabled: \(reason); rides are kept in memory until their file is written"]
        return (journal, AppCore(configuration: configuration, randomSeed: randomSeed), report)
    }

    /// A gap longer than this (a wall clock far off) is taken as unknown.
    public static let gapMsMax: Int64 = 7 * 24 * 3_600_000
}

/// A read-only look at a journal: what is on the card and what recovery would rebuild
/// (`bikecomputer journal inspect`). Nothing is repaired or written.
public struct JournalInspection: Sendable {
    public struct RideSummary: Sendable {
        public var rideID: RideID
        public var records: Int
        public var samples: Int
        public var series: Int
        public var events: [RideEvent]
        public var started: Bool
        public var finished: Bool?
        public var fileDurable: Bool
        public var checkpoints: Int
        public var checkpointMismatches: Int
        public var segments: [UInt32]
    }

    /// What replaying the interrupted ride gives (before re-attaching it to a clock).
    public struct Rebuild: Sendable {
        public var rideID: RideID
        public var state: SessionState
        public var lastInstant: MonotonicInstant?
        public var timerTimeMs: Int64
        public var elapsedTimeMs: Int64
        public var distanceM: Double?
        public var laps: Int
        public var events: Int
        public var averagePowerW: Double?
        public var averageHeartRate: Double?
        public var gapsMs: Int64
        public var wallAnchor: WallClockAnchor?
    }

    public var scan: JournalScan
    public var rides: [RideSummary] = []
    public var orphans = 0
    public var rebuild: Rebuild?

    public init(storage: SegmentStorage, configuration: AppConfiguration = AppConfiguration()) {
        scan = JournalScan.scan(storage, repair: false)
        let (list, orphanCount) = scan.rides(withRecords: false)
        orphans = orphanCount
        for r in list {
            var events: [RideEvent] = []
            for f in r.frames where scan.records[f].type == .event {
                if case .records(let l) = scan.entry(scan.records[f]), case .event(let e)? = l.first { events.append(e) }
            }
            rides.append(RideSummary(rideID: r.rideID, records: Int(r.counts.recordCount), samples: Int(r.counts.sampleCount),
                                     series: Int(r.counts.seriesCount), events: events,
                                     started: r.started, finished: r.finished, fileDurable: r.fileDurable,
                                     checkpoints: r.checkpoints.count, checkpointMismatches: r.checkpointMismatches,
                                     segments: r.segments.sorted()))
        }
        if let r = list.last, r.isUnfinished, r.started {
            var core = AppCore(configuration: configuration, randomSeed: 0)
            scan.forEachRecord(in: r.frames) { core.replay($0) }
            let last = core.lastReplayedInstant
            let b = core.builder
            rebuild = Rebuild(rideID: r.rideID, state: core.state, lastInstant: last,
                              timerTimeMs: last.flatMap { b?.timerTimeMs(at: $0) } ?? 0,
                              elapsedTimeMs: last.flatMap { b?.elapsedTimeMs(at: $0) } ?? 0,
                              distanceM: (b?.ride[.distance].hasData ?? false) ? b?.ride.distanceM : nil,
                              laps: b?.laps.count ?? 0, events: b?.events.count ?? 0,
                              averagePowerW: b?.ride[.power].average, averageHeartRate: b?.ride[.heartRate].average,
                              gapsMs: core.gapsMs, wallAnchor: core.wallAnchorForRide)
        }
    }
}

/// Storage that cannot be used: every operation fails with the reason (the disabled journal).
final class UnavailableStorage: SegmentStorage {
    let reason: String
    init(reason: String) { self.reason = reason }
    var segmentBytes: Int { JournalFormat.defaultSegmentBytes }
    func fail() -> StorageError { StorageError(.permissionDenied, "journal disabled: \(reason)") }
    func list() throws(StorageError) -> [UInt32] { throw fail() }
    func create(_ id: UInt32) throws(StorageError) { throw fail() }
    func write(_ id: UInt32, at offset: Int, _ bytes: UnsafeRawBufferPointer) throws(StorageError) { throw fail() }
    func sync(_ id: UInt32) throws(StorageError) { throw fail() }
    func read(_ id: UInt32) throws(StorageError) -> [UInt8] { throw fail() }
    func truncate(_ id: UInt32, at offset: Int) throws(StorageError) { throw fail() }
    func remove(_ id: UInt32) throws(StorageError) { throw fail() }
    func setAside(_ id: UInt32) throws(StorageError) -> String { throw fail() }
    func copyAside(_ id: UInt32) throws(StorageError) -> String { throw fail() }
    func availableBytes() -> Int? { nil }
}
