import AppCore
import BoardIO
import Device
import Glibc
import Journal
import RideModel

/// The journal's segment files in a directory of the data directory: `SegmentFileSystem` over
/// BoardIO's `SegmentDirectory` (a wrapper rather than a conformance, so this module and the
/// executables that declare their own conformance can be linked together).
public final class JournalDirectoryFiles: SegmentFileSystem {
    public let directory: SegmentDirectory
    public init(_ directory: SegmentDirectory) { self.directory = directory }

    public var segmentBytes: Int { directory.segmentBytes }
    public func list() throws -> [String] { try directory.list() }
    public func create(_ name: String) throws { try directory.create(name) }
    public func write(_ name: String, at offset: Int, _ bytes: UnsafeRawBufferPointer) throws { try directory.write(name, at: offset, bytes) }
    public func sync(_ name: String) throws { try directory.sync(name) }
    public func read(_ name: String) throws -> [UInt8] { try directory.read(name) }
    public func zero(_ name: String, from offset: Int) throws { try directory.zero(name, from: offset) }
    public func remove(_ name: String) throws { try directory.remove(name) }
    public func rename(_ name: String, toFreeNameLike newBase: String) throws -> String { try directory.rename(name, toFreeNameLike: newBase) }
    public func copy(_ name: String, toFreeNameLike newBase: String) throws -> String { try directory.copy(name, toFreeNameLike: newBase) }
    public func availableBytes() -> Int? { directory.availableBytes() }

    public func storageError(_ error: any Error, _ doing: String) -> StorageError {
        guard let e = error as? SystemError else { return StorageError(.other, "\(doing): \(error)") }
        if e.isNoSpace { return StorageError(.noSpace, "\(doing): \(e) — the card is full: delete old rides") }
        if e.isNotFound { return StorageError(.notFound, "\(doing): \(e)") }
        if e.isPermissionDenied || e.errno == EROFS { return StorageError(.permissionDenied, "\(doing): \(e) — make the data directory writable") }
        if e.errno == EIO { return StorageError(.io, "\(doing): \(e) — the card may be failing: copy your rides off it") }
        return StorageError(.other, "\(doing): \(e)")
    }
}

/// Opening the board's journal: the directory (created if missing), the scan, the repair and
/// the rebuild of an interrupted ride.
public enum BoardJournal {
    public static let segmentBytes = JournalFormat.defaultSegmentBytes

    /// Opens the journal in `directory` and recovers the interrupted ride into the returned core
    /// (`FlashJournal.open`). The core's pending effects (gap event, "ride recovered") are
    /// drained by the runtime's first input.
    public static func open(directory: String, configuration: AppConfiguration, randomSeed: UInt64,
                            deviceNow: MonotonicInstant, wallNow: WallClockTime?,
                            policy: CommitPolicy) throws(SystemError) -> (journal: FlashJournal, core: AppCore, report: RecoveryReport) {
        try AtomicFiles.makeDirectories(directory)
        let dir = try SegmentDirectory(path: directory, segmentBytes: segmentBytes, createIfMissing: true)
        return FlashJournal.open(storage: FileSystemSegmentStorage(JournalDirectoryFiles(dir)), configuration: configuration,
                                 randomSeed: randomSeed, deviceNow: deviceNow, wallNow: wallNow, policy: policy)
    }
}

/// The system's wall clock. Trusted only while the kernel says it is synchronised to a time
/// source (`KernelClock`: adjtimex, STA_UNSYNC clear), never because it reads a plausible date:
/// a board without an RTC boots at its last saved time, which is plausible and wrong (issue 17).
/// An untrusted reading never dates a ride; the first trusted one dates it by the offset, and a
/// trusted anchor is never moved backwards (WallClockAnchor.updated).
public enum SystemWallClock {
    public static func now() -> WallClockTime {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        let ms = Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
        return WallClockTime(unixMs: ms, trusted: KernelClock.isSynchronised())
    }
}
