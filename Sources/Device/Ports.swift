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
    /// A state change's records (the last `syncNow`) are not durable yet: the screen does not
    /// confirm the change until they are (storage that syncs in the background).
    var awaitingDurable: Bool { get }
    /// Background syncs finished (the board's completion eventfd fired): takes their completions.
    func syncProgress(at now: MonotonicInstant)
    /// Makes everything durable and waits for it (shutdown only).
    func flush(at now: MonotonicInstant)
}

extension RideJournalPort {
    public var awaitingDurable: Bool { false }
    public func syncProgress(at now: MonotonicInstant) {}
    public func flush(at now: MonotonicInstant) { syncNow(at: now) }
}

/// Where finished rides go (the ride library on the data directory).
public protocol RideArchivePort: AnyObject {
    /// Writes the ride's file(s) durably; returns a short description for logs.
    func store(rideID: RideID, records: [RideRecord]) throws -> String
    /// Removes a saved ride (discarded from the summary screen).
    func delete(rideID: RideID) throws
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

/// The ride library (RideFiles) is where the board's finished rides go.
extension RideLibrary: RideArchivePort {}
