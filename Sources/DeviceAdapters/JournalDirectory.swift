import AppCore
import BoardIO
import Device
import Glibc
import Journal
import RideModel

/// The board's segment directory as the journal's file system, with every system error
/// classified into what the rider should do about it.
extension SegmentDirectory: SegmentFileSystem {
    public func storageError(_ error: any Error, _ doing: String) -> StorageError {
        guard let e = error as? SystemError else { return StorageError(.other, "\(doing): \(error)") }
        if e.isNoSpace { return StorageError(.noSpace, "\(doing): \(e) — the card is full: delete old rides") }
        if e.isNotFound { return StorageError(.notFound, "\(doing): \(e)") }
        if e.isPermissionDenied || e.errno == EROFS {
            return StorageError(.permissionDenied, "\(doing): \(e) — make the data directory writable")
        }
        if e.errno == EIO { return StorageError(.io, "\(doing): \(e) — the card may be failing: copy your rides off it") }
        return StorageError(.other, "\(doing): \(e)")
    }
}

/// Where the journal lives under the data directory, and its segment size.
public enum RideJournalLocation {
    public static let subdirectory = "journal"
    public static let segmentBytes = JournalFormat.defaultSegmentBytes
}

/// Opens (creating if needed) the journal under `dataDirectory`, recovers the interrupted ride,
/// and returns the journal and an app core ready to continue. Drain the core's effects into the
/// journal (`FlashJournal.apply`) as for any input: recovery leaves a gap event and
/// "ride recovered" pending. Log `report.lines`; write the files of
/// `report.finishedRidesAwaitingFile` (from `journal.records(of:)`).
public func openRideJournal(dataDirectory: String, configuration: AppConfiguration, randomSeed: UInt64,
                     deviceNow: MonotonicInstant, wallNow: WallClockTime?,
                     policy: CommitPolicy = CommitPolicy()) throws(SystemError) -> (journal: FlashJournal, core: AppCore, report: RecoveryReport) {
    _ = try SegmentDirectory(path: dataDirectory, segmentBytes: RideJournalLocation.segmentBytes)
    let dir = try SegmentDirectory(path: dataDirectory + "/" + RideJournalLocation.subdirectory,
                                   segmentBytes: RideJournalLocation.segmentBytes, createIfMissing: true)
    return FlashJournal.open(storage: FileSystemSegmentStorage(dir), configuration: configuration, randomSeed: randomSeed,
                             deviceNow: deviceNow, wallNow: wallNow, policy: policy)
}

