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

    /// Told how many descriptors a failure released, and the failure (the board logs it).
    public var onDescriptorsReleased: ((Int, StorageError) -> Void)?

    /// Classifies a failure of this directory (every failure of the journal's storage, blocking
    /// or through io_uring, comes through here) and releases every descriptor held on the card:
    /// a card that went read-only or failed with EIO heals only by a fresh mount (unmount, fsck,
    /// mount), which a held descriptor would defeat by keeping the old, aborted file system
    /// alive. The next attempt (the writer retries after `retryIntervalMs`) opens by path.
    public func storageError(_ error: any Error, _ doing: String) -> StorageError {
        let classified = Self.classify(error, doing)
        let released = directory.releaseDescriptors()
        if released > 0 { onDescriptorsReleased?(released, classified) }
        return classified
    }

    static func classify(_ error: any Error, _ doing: String) -> StorageError {
        guard let e = error as? SystemError else { return StorageError(.other, "\(doing): \(error)") }
        if e.isNoSpace { return StorageError(.noSpace, "\(doing): \(e) — the card is full: delete old rides") }
        if e.isNotFound { return StorageError(.notFound, "\(doing): \(e)") }
        if e.isPermissionDenied || e.errno == EROFS {
            return StorageError(.permissionDenied, "\(doing): \(e) — make the data directory writable, or remount the card (fsck first)")
        }
        if e.errno == EIO { return StorageError(.io, "\(doing): \(e) — the card may be failing: copy your rides off it") }
        return StorageError(.other, "\(doing): \(e)")
    }
}

/// The journal's segments on the board with syncs that never block the run loop: fdatasync
/// (and a new segment's fsync and its directory's) go through a `SyncRing` (io_uring), their
/// completions arrive on its eventfd, which BoardWiring watches in the loop's epoll set
/// (`JournalSyncComponent`) and hands to `DeviceRuntime.syncProgress`. Everything else
/// (writes, reads, compaction) is the directory's, as before.
///
/// Where io_uring is refused (no kernel support: ENOSYS; a seccomp filter or
/// `kernel.io_uring_disabled`: EPERM) `defersSyncs` is false and the journal falls back to
/// blocking fdatasync on the loop; `fallbackReason` says why (logged once and shown in
/// `ctl status` as `journal_sync`).
public final class BoardSegmentStorage: DeferredSyncStorage {
    public let directory: SegmentDirectory
    let files: JournalDirectoryFiles
    let base: FileSystemSegmentStorage
    public let ring: SyncRing?
    /// Why syncs block (nil: they go through io_uring).
    public let fallbackReason: String?
    /// Creations waiting for both of their fsyncs (the file's, then the directory's).
    var creations: [(token: UInt64, id: UInt32, left: Int, error: StorageError?)] = []
    var done: [SyncCompletion] = []
    /// Background operations whose fsync failed (EIO on a failing card), counted for status.
    public private(set) var failedSyncs: UInt64 = 0
    /// Completions taken that matched nothing begun (ignored).
    public private(set) var strayCompletions: UInt64 = 0
    /// The longest the loop spent submitting a sync, and creating a segment (open and
    /// posix_fallocate, then submitting its fsyncs), ns: what the journal still costs a turn.
    public private(set) var slowestSubmitNs: Int64 = 0
    public private(set) var slowestCreateNs: Int64 = 0

    /// Opens a ring unless `blockingSyncs` (tests of the fallback, or the reason it was refused).
    public init(_ directory: SegmentDirectory, blockingSyncs: String? = nil) {
        self.directory = directory
        files = JournalDirectoryFiles(directory)
        base = FileSystemSegmentStorage(files)
        if let reason = blockingSyncs {
            ring = nil
            fallbackReason = reason
        } else {
            do throws(SystemError) {
                ring = try SyncRing()
                fallbackReason = nil
            } catch {
                ring = nil
                fallbackReason = "io_uring unavailable (\(error)): fdatasync blocks the run loop"
            }
        }
        creations.reserveCapacity(2)
        done.reserveCapacity(Int(SyncRing.entriesMax))
    }

    public var defersSyncs: Bool { ring != nil }

    /// Told how many descriptors on the card a failure released (see
    /// `JournalDirectoryFiles.storageError`); the board logs it.
    public var onDescriptorsReleased: ((Int, StorageError) -> Void)? {
        get { files.onDescriptorsReleased }
        set { files.onDescriptorsReleased = newValue }
    }
    public var segmentBytes: Int { base.segmentBytes }

    func storageError(_ errno: Int32, _ call: String, _ doing: String) -> StorageError {
        files.storageError(SystemError(errno: errno, call: call), doing)
    }

    public func beginSync(_ id: UInt32, token: UInt64) throws(StorageError) {
        guard let ring else { return try base.sync(id) } // not reached: the journal syncs itself
        let name = SegmentName.name(id)
        let start = MonotonicClock.nowNs
        defer { slowestSubmitNs = max(slowestSubmitNs, Int64(MonotonicClock.nowNs &- start)) }
        do throws(SystemError) {
            try ring.sync(try directory.descriptorFor(name), dataOnly: true, token: token << 1)
        } catch {
            throw files.storageError(error, "syncing \(name)")
        }
    }

    public func beginCreate(_ id: UInt32, token: UInt64) throws(StorageError) {
        guard let ring else { return try base.create(id) }
        let name = SegmentName.name(id)
        let start = MonotonicClock.nowNs
        defer { slowestCreateNs = max(slowestCreateNs, Int64(MonotonicClock.nowNs &- start)) }
        do throws(SystemError) {
            try directory.createWithoutSync(name)
            try ring.sync(try directory.descriptorFor(name), dataOnly: false, token: token << 1)
        } catch {
            throw files.storageError(error, "creating \(name)")
        }
        creations.append((token, id, 2, nil))
        do throws(SystemError) {
            try ring.sync(try directory.directoryDescriptor(), dataOnly: false, token: token << 1 | 1)
        } catch {
            // The file's fsync is in flight: let its completion carry this failure.
            creations[creations.count - 1].left = 1
            creations[creations.count - 1].error = files.storageError(error, "syncing the journal directory")
        }
    }

    public func nextCompletion() -> SyncCompletion? {
        if done.isEmpty, let ring {
            for _ in 0..<Int(SyncRing.entriesMax) {
                guard let c = ring.reap() else { break }
                take(c)
            }
        }
        return done.isEmpty ? nil : done.removeFirst()
    }

    public func waitForCompletion() -> SyncCompletion? {
        guard let ring else { return nil }
        while done.isEmpty {
            guard let c = ring.waitForCompletion() else { return nil }
            take(c)
        }
        return done.removeFirst()
    }

    func take(_ c: SyncRing.Completion) {
        let token = c.token >> 1
        if c.errno != nil { failedSyncs &+= 1 }
        if let i = creations.firstIndex(where: { $0.token == token }) {
            if let e = c.errno, creations[i].error == nil {
                let what = c.token & 1 == 1 ? "syncing the journal directory" : "creating \(SegmentName.name(creations[i].id))"
                creations[i].error = storageError(e, "fsync", what)
            }
            creations[i].left -= 1
            if creations[i].left <= 0 {
                done.append(SyncCompletion(token: token, error: creations[i].error))
                creations.remove(at: i)
            }
            return
        }
        if c.token & 1 == 1 {
            strayCompletions &+= 1
            return
        }
        done.append(SyncCompletion(token: token, error: c.errno.map { storageError($0, "fdatasync", "syncing the journal") }))
    }

    // MARK: SegmentStorage (the directory's)

    public func list() throws(StorageError) -> [UInt32] { try base.list() }
    public func create(_ id: UInt32) throws(StorageError) { try base.create(id) }
    public func write(_ id: UInt32, at offset: Int, _ bytes: UnsafeRawBufferPointer) throws(StorageError) { try base.write(id, at: offset, bytes) }
    public func sync(_ id: UInt32) throws(StorageError) { try base.sync(id) }
    public func read(_ id: UInt32) throws(StorageError) -> [UInt8] { try base.read(id) }
    public func truncate(_ id: UInt32, at offset: Int) throws(StorageError) { try base.truncate(id, at: offset) }
    public func remove(_ id: UInt32) throws(StorageError) { try base.remove(id) }
    public func setAside(_ id: UInt32) throws(StorageError) -> String { try base.setAside(id) }
    public func copyAside(_ id: UInt32) throws(StorageError) -> String { try base.copyAside(id) }
    public func availableBytes() -> Int? { base.availableBytes() }
}

/// Opening the board's journal: the directory (created if missing), the scan, the repair and
/// the rebuild of an interrupted ride.
public enum BoardJournal {
    public static let segmentBytes = JournalFormat.defaultSegmentBytes

    /// Opens the journal in `directory` and recovers the interrupted ride into the returned core
    /// (`FlashJournal.open`). The core's pending effects (gap event, "ride recovered") are
    /// drained by the runtime's first input. Syncs go through io_uring (`BoardSegmentStorage`)
    /// unless `blockingSyncs` gives a reason to use plain fdatasync.
    public static func open(directory: String, configuration: AppConfiguration, randomSeed: UInt64,
                            deviceNow: MonotonicInstant, wallNow: WallClockTime?,
                            policy: CommitPolicy, blockingSyncs: String? = nil) throws(SystemError) -> (journal: FlashJournal, core: AppCore, report: RecoveryReport) {
        try AtomicFiles.makeDirectories(directory)
        let dir = try SegmentDirectory(path: directory, segmentBytes: segmentBytes, createIfMissing: true)
        return FlashJournal.open(storage: BoardSegmentStorage(dir, blockingSyncs: blockingSyncs), configuration: configuration,
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
