import AppCore
import RideFiles
import RideModel

/// Where the runtime makes journal records durable (the flash journal on the board, the
/// simulated flash or a directory in the simulator).
public protocol RideJournalPort: AnyObject {
    /// Buffers a record (in order).
    func append(_ record: RideRecord, at now: MonotonicInstant)
    /// Makes everything appended so far durable now (state transitions).
    func syncNow(at now: MonotonicInstant)
    /// Called on every tick: group commit when due (at least once per second while riding).
    func tick(at now: MonotonicInstant)
    /// The storage's health, reported to the app core when it changes.
    var condition: StorageCondition { get }
    /// The records of `rideID` as they are durable now, in order (for writing its ride file).
    func records(of rideID: RideID) -> [RideRecord]
    /// The ride's file is durable: its journal may be compacted away.
    func rideFileIsDurable(_ rideID: RideID)
    /// Every record of `rideID` the device still holds: the durable ones, then those appended
    /// but not yet durable (a full or failing card). Its file is written from these, so a
    /// storage fault loses nothing that was recorded. Nil when the journal cannot be read back
    /// whole now (a read error): a file from part of it would let the journal go; try later.
    func recordsHeld(of rideID: RideID) -> [RideRecord]?
    /// A state change's records (the last `syncNow`) are not durable yet: the screen does not
    /// confirm the change until they are (storage that syncs in the background).
    var awaitingDurable: Bool { get }
    /// Background syncs finished (the board's completion eventfd fired): takes their completions.
    func syncProgress(at now: MonotonicInstant)
    /// Makes everything durable and waits for it (shutdown only).
    func flush(at now: MonotonicInstant)
    /// Where the last state change (`syncNow`) stands in the journal: it is durable once
    /// `isDurable(confirmationMark)` (control replies wait for that, as the screen does).
    var confirmationMark: UInt64 { get }
    func isDurable(_ mark: UInt64) -> Bool
    /// Why records appended now will not become durable soon (the journal is disabled, the
    /// card reported an error or is full); nil while syncs work.
    var notDurableReason: String? { get }
}

extension RideJournalPort {
    public func recordsHeld(of rideID: RideID) -> [RideRecord]? { records(of: rideID) }
    public var awaitingDurable: Bool { false }
    public func syncProgress(at now: MonotonicInstant) {}
    public func flush(at now: MonotonicInstant) { syncNow(at: now) }
    /// Storage that syncs in `syncNow` (the simulator's): every change is durable at once.
    public var confirmationMark: UInt64 { 0 }
    public func isDurable(_ mark: UInt64) -> Bool { true }
    public var notDurableReason: String? { nil }
}

/// The journal could not be read back whole to write a ride's file (retried like a failed write).
public struct JournalUnreadable: Error, CustomStringConvertible {
    public var description: String { "the journal cannot be read back whole now (a read error)" }
    public init() {}
}

/// Where finished rides go (the ride library on the data directory).
public protocol RideArchivePort: AnyObject {
    /// Writes the ride's file(s) durably; returns a short description for logs.
    func store(rideID: RideID, records: [RideRecord]) throws -> String
    /// Removes a saved ride (discarded from the summary screen).
    func delete(rideID: RideID) throws
    /// The same work as `store` in bounded steps (the board's loop takes one per turn).
    func beginStore(rideID: RideID, records: [RideRecord]) -> RideArchiveJob
    /// The wall clock became trusted (`anchor`: a trusted reading at a device instant): rides
    /// saved on the untrusted clock can be dated (`DatingRideArchive`). Does no file work: the
    /// dating is done by the jobs `nextRedating` hands out.
    func clockTrusted(_ anchor: WallClockAnchor)
    /// The next ride to date, as steps like a ride file's (issue 27: re-dating never holds a loop
    /// turn); nil when none waits. The runtime takes one at a time into its ride-file queue.
    func nextRedating() -> (RideID, RideArchiveJob)?
}

/// A ride's files being written step by step (`RideArchivePort.beginStore`).
public protocol RideArchiveJob: AnyObject {
    /// One bounded piece of the work; true once the files are durable. Throws on a failure
    /// (`RideArchiveFailure` says what kind), after which `retry()` starts the writing over.
    func step() throws -> Bool
    func retry()
    /// For the log once done.
    var summary: String { get }
    /// The last step left the work waiting for the card (a background fsync): the next step
    /// is worth taking a little later (`DeviceRuntime.rideFilePollMs`), not at once.
    var waitsForStorage: Bool { get }
}

extension RideArchiveJob {
    public var waitsForStorage: Bool { false }
}

/// What a failed ride-file write says about the storage, for the alert and the retry.
public enum RideArchiveFailure: Sendable, Hashable {
    case full, readOnly, io, other
    /// The ride cannot be written as a file at all (its records do not export): retrying does
    /// not help; its journal is kept.
    case unexportable

    public init(_ error: any Error) {
        switch error {
        case RideLibraryError.storage(_, let fault):
            switch fault {
            case .full: self = .full
            case .readOnly: self = .readOnly
            case .io: self = .io
            case .other: self = .other
            }
        case RideLibraryError.unexportable: self = .unexportable
        case is JournalUnreadable: self = .io
        default: self = .other
        }
    }

    /// The storage condition it shows (STORAGE FULL / STORAGE ERROR).
    public var condition: StorageCondition {
        switch self {
        case .full: .full
        case .readOnly, .io, .other: .failing
        case .unexportable: .ok
        }
    }
}

/// `store` in a single step: for archives that have no steps of their own (tests, memory).
final class OneStepArchiveJob: RideArchiveJob {
    let archive: RideArchivePort
    let rideID: RideID
    let records: [RideRecord]
    var summary = ""
    init(_ archive: RideArchivePort, _ rideID: RideID, _ records: [RideRecord]) {
        self.archive = archive
        self.rideID = rideID
        self.records = records
    }
    func step() throws -> Bool {
        summary = try archive.store(rideID: rideID, records: records)
        return true
    }
    func retry() {}
}

extension RideArchivePort {
    public func beginStore(rideID: RideID, records: [RideRecord]) -> RideArchiveJob {
        OneStepArchiveJob(self, rideID, records)
    }
    public func clockTrusted(_ anchor: WallClockAnchor) {}
    public func nextRedating() -> (RideID, RideArchiveJob)? { nil }
}

/// The buzzer or LED line, if the board has one.
public protocol AlertOutputPort: AnyObject {
    func pulse(for alert: Alert, at now: MonotonicInstant)
}

/// Log lines from the runtime (stderr/journald on the board, a buffer in tests).
public protocol LogPort: AnyObject {
    func log(_ level: LogLevel, _ message: String)
}

public enum LogLevel: String, Sendable { case debug, info, warning, error }

/// A log that keeps the last lines in memory (tests, the simulator's status line).
public final class MemoryLog: LogPort {
    public private(set) var lines: RingBuffer<String>
    public init(capacity: Int = 256) { lines = RingBuffer(capacity: capacity) }
    public func log(_ level: LogLevel, _ message: String) { lines.append("\(level.rawValue): \(message)") }
}

/// The ride library (RideFiles) is where the board's finished rides go, in steps.
extension RideLibrary: RideArchivePort {
    public func beginStore(rideID: RideID, records: [RideRecord]) -> RideArchiveJob {
        writing(rideID: rideID, records: records)
    }
}

extension RideFileWrite: RideArchiveJob {
    public var summary: String { result ?? "" }
    public func step() throws -> Bool { try stepTyped() }
}
