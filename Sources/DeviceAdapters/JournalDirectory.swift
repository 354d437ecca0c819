import AppCore
import BoardIO
import Device
import Glibc
import Journal
import RideModel

/// The board's segment directory as the journal's file system, with every system error
/// classified into what the rider should do about it.
extension SegmentDirectory: SegmentFileSystem {
    /// As `JournalDirectoryFiles.storageError`: classified, and every descriptor held on the
    /// card released so that the next attempt opens by path (a card remounted after fsck).
    public func storageError(_ error: any Error, _ doing: String) -> StorageError {
        releaseDescriptors()
        return JournalDirectoryFiles.classify(error, doing)
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

