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

/// The journal's segments on the board with file operations that never wait for the card on the
/// run loop: fdatasync, a new segment's creation (openat, fallocate, fsync of the file and of
/// its directory) and compaction's unlinks (then one fsync of the directory) go through a
/// `SyncRing` (io_uring); their completions arrive on its eventfd, which BoardWiring watches in
/// the loop's epoll set (`JournalSyncComponent`) and hands to `DeviceRuntime.syncProgress`.
/// Writes and reads are the directory's, as before (page-cache copies); recovery's repairs at
/// start (truncate, set aside) block, before the loop runs.
///
/// A creation is two submissions: openat(O_CREAT|O_EXCL), and on its completion the linked
/// chain fallocate → fsync(file) → fsync(directory); its one `SyncCompletion` comes when all
/// are done, carrying the first failure (ENOSPC from fallocate: `.noSpace`). The files a crash
/// can leave are those a blocking creation could: none, an empty or a preallocated file, each
/// with no header, which the scan removes as empty (docs/journal.md).
///
/// A removal (compaction) closes the segment's descriptor and queues an unlinkat; once no
/// unlink is queued or in flight the directory is fsynced. The journal does not wait for them:
/// a removal lost in a crash leaves a segment of rides whose files are durable, compacted again
/// later. Failures are counted (`removalFailures`, `lastRemovalError`) and shown in `ctl status`.
///
/// Where io_uring is refused (no kernel support: ENOSYS; a seccomp filter or
/// `kernel.io_uring_disabled`: EPERM) `defersSyncs` is false and the journal falls back to
/// blocking fdatasync, creation and unlink on the loop; `fallbackReason` says why (logged once
/// and shown in `ctl status` as `journal_sync`). A kernel with io_uring but without OPENAT,
/// FALLOCATE or UNLINKAT (before 5.11) defers syncs only (`fileOperationsBlock`).
public final class BoardSegmentStorage: DeferredSyncStorage {
    public let directory: SegmentDirectory
    let files: JournalDirectoryFiles
    let base: FileSystemSegmentStorage
    public let ring: SyncRing?
    /// Why syncs block (nil: they go through io_uring).
    public let fallbackReason: String?

    /// What a ring completion is for: the low bits of its token (the journal's token, or for a
    /// removal the segment number, above them).
    enum Step: UInt64 {
        case dataSync = 0, open, allocate, fileSync, directorySync, unlink, removalDirectorySync, write
    }
    static let stepBits: UInt64 = 3
    static func ringToken(_ token: UInt64, _ step: Step) -> UInt64 { token << stepBits | step.rawValue }

    struct Creation {
        var token: UInt64
        var id: UInt32
        /// Ring completions still to come.
        var left: Int
        var error: StorageError?
        /// `error` is only a cancellation (a later completion may say why).
        var errorIsCancellation = false
        /// The descriptors its linked chain names, kept open until its completions are reaped
        /// (`SegmentDirectory.pin`: a linked step looks its descriptor up when it runs).
        var pinned: (file: FileDescriptor, directory: FileDescriptor)?
    }
    /// Creations begun and not yet complete.
    var creations: [Creation] = []
    var done: [SyncCompletion] = []
    /// A segment whose openat failed (EEXIST included): not ours, so the journal's `remove` of
    /// the half-made segment must leave it.
    var notCreated: UInt32?
    /// Segments waiting for their unlink to be submitted, those submitted, and whether the
    /// directory needs (or has in flight) its fsync after them.
    var removals: [UInt32] = []
    var unlinksInFlight = 0
    var removalSyncWanted = false
    var removalSyncInFlight = false
    /// Removals queued at most; beyond it one blocks (compaction removes a ride's worth at a time).
    public static let removalsQueuedMax = 256
    /// Ring entries kept free of removals for the journal's own operations (a creation's three).
    static let journalEntriesReserved = 4

    /// The journal's writes through the ring (deferred syncs, a kernel with IORING_OP_WRITE): a
    /// write is copied into `stage` and submitted, linked before the sync that follows it, so
    /// the pwrite runs in the kernel's worker. In the loop it waited for the card when the tail
    /// page was under writeback (stable pages: ext4 with journal checksums), whoever had
    /// started that writeback: 204 ms once on the 200 ms-per-write card (stop 42's CI), after
    /// the journal had stopped writing while its own sync was in flight.
    public let writesThroughRing: Bool
    /// A segment's worth, allocated at the first staged write, freed with the storage.
    var stage: UnsafeMutableRawBufferPointer?
    /// The write staged and not yet submitted: its segment, offset and length (the first
    /// `count` bytes of `stage`).
    var staged: (id: UInt32, offset: Int, count: Int)?
    /// The write submitted with a sync, until its completion (`stage` holds its bytes till then).
    var writeInFlight: (id: UInt32, offset: Int, count: Int, token: UInt64)?
    /// A failed write's error, reported with its sync's completion (which the failure cancels).
    var writeError: (token: UInt64, error: StorageError)?
    /// Writes submitted through the ring, those that failed, and writes done in the loop
    /// (pwrite: no ring, or a write the journal asked for while one was in flight).
    public private(set) var ringWrites: UInt64 = 0
    public private(set) var failedWrites: UInt64 = 0
    public private(set) var loopWrites: UInt64 = 0

    /// Background operations whose fsync failed (EIO on a failing card), counted for status.
    public private(set) var failedSyncs: UInt64 = 0
    /// Completions taken that matched nothing begun (ignored).
    public private(set) var strayCompletions: UInt64 = 0
    /// Segments removed in the background, removals (unlink or the directory's fsync) that
    /// failed, and the last failure.
    public private(set) var removalsBegun: UInt64 = 0
    public private(set) var removalFailures: UInt64 = 0
    public private(set) var lastRemovalError: String?
    /// The longest the loop spent submitting a sync, beginning a segment's creation (submitting
    /// its openat, later its chain), and removing a segment, ns: what the journal still costs a
    /// turn (a blocking creation or removal, without io_uring's file operations, counts here).
    public private(set) var slowestSubmitNs: Int64 = 0
    public private(set) var slowestCreateNs: Int64 = 0
    public private(set) var slowestRemoveNs: Int64 = 0
    /// The slowest write of a segment and its offset (0: a new segment's header), to tell which
    /// write waited.
    public private(set) var slowestWriteNs: Int64 = 0
    public private(set) var slowestWriteOffset = 0

    /// Opens a ring unless `blockingSyncs` (tests of the fallback, or the reason it was refused).
    /// `blockingFileOperations` keeps creation and removal blocking with syncs deferred (tests;
    /// a kernel without OPENAT/FALLOCATE/UNLINKAT in io_uring does so by itself).
    public init(_ directory: SegmentDirectory, blockingSyncs: String? = nil, blockingFileOperations: Bool = false) {
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
        fileOperationsBlock = blockingFileOperations || !(ring?.runsFileOperations ?? false)
        writesThroughRing = ring?.runsWrites ?? false
        creations.reserveCapacity(2)
        done.reserveCapacity(Int(SyncRing.entriesMax))
        removals.reserveCapacity(16)
    }

    deinit {
        // The kernel may still be reading the staged bytes: wait for that write before freeing them.
        while writeInFlight != nil, let c = ring?.waitForCompletion() { take(c) }
        stage?.deallocate()
    }

    public var defersSyncs: Bool { ring != nil }

    /// Told how many descriptors on the card a failure released (see
    /// `JournalDirectoryFiles.storageError`); the board logs it.
    public var onDescriptorsReleased: ((Int, StorageError) -> Void)? {
        get { files.onDescriptorsReleased }
        set { files.onDescriptorsReleased = newValue }
    }
    /// Creation and removal block on the loop (no ring, or one without file operations).
    public let fileOperationsBlock: Bool
    public var segmentBytes: Int { base.segmentBytes }
    /// Removals queued or in flight (the directory's fsync after them included).
    public var removalsOutstanding: Int { removals.count + unlinksInFlight + (removalSyncInFlight || removalSyncWanted ? 1 : 0) }

    func storageError(_ errno: Int32, _ call: String, _ doing: String) -> StorageError {
        files.storageError(SystemError(errno: errno, call: call), doing)
    }

    public func beginSync(_ id: UInt32, token: UInt64) throws(StorageError) {
        guard let ring else { return try sync(id) } // not reached: the journal syncs itself
        if let s = staged, s.id != id { try flushStaged() }
        let name = SegmentName.name(id)
        let start = MonotonicClock.nowNs
        defer { slowestSubmitNs = max(slowestSubmitNs, Int64(MonotonicClock.nowNs &- start)) }
        do throws(SystemError) {
            let fd = try directory.descriptorFor(name)
            if let s = staged, let stage {
                // What the journal wrote since the last sync, then its fdatasync, linked. Until
                // the write's completion `stage` is the kernel's: even when the submission failed
                // (the kernel may have taken the write and not the sync), so later writes go
                // through the loop until a completion with this token frees it.
                staged = nil // submitted, or (on failure) written again by the journal's retry
                writeInFlight = (s.id, s.offset, s.count, token)
                try ring.writeAndSync(fd, UnsafeRawBufferPointer(rebasing: stage[0..<s.count]), at: s.offset,
                                      tokens: (Self.ringToken(token, .write), Self.ringToken(token, .dataSync)))
                ringWrites &+= 1
            } else {
                try ring.sync(fd, dataOnly: true, token: Self.ringToken(token, .dataSync))
            }
        } catch {
            staged = nil // the journal writes it again when it retries
            if writeInFlight?.token == token, ring.inFlight == 0 { writeInFlight = nil }
            throw files.storageError(error, "syncing \(name)")
        }
    }

    /// Writes the staged bytes in the loop (pwrite): before a write elsewhere or an operation
    /// that must see them on the card's file.
    func flushStaged() throws(StorageError) {
        guard let s = staged, let stage else { return }
        staged = nil
        loopWrites &+= 1
        try base.write(s.id, at: s.offset, UnsafeRawBufferPointer(rebasing: stage[0..<s.count]))
    }

    /// Segment `id`'s writes are in its file: the staged one written, the one in flight complete
    /// (waited for: only operations outside a ride's commits come here).
    func settle(_ id: UInt32) throws(StorageError) {
        if staged?.id == id { try flushStaged() }
        while let w = writeInFlight, w.id == id, let c = ring?.waitForCompletion() { take(c) }
    }

    public func beginCreate(_ id: UInt32, token: UInt64) throws(StorageError) {
        guard let ring else { return try base.create(id) }
        let name = SegmentName.name(id)
        let start = MonotonicClock.nowNs
        defer { slowestCreateNs = max(slowestCreateNs, Int64(MonotonicClock.nowNs &- start)) }
        if fileOperationsBlock { return try beginBlockingCreate(id, name, token: token, ring) }
        do throws(SystemError) {
            try ring.openFile(in: try directory.directoryDescriptor(), name, token: Self.ringToken(token, .open))
        } catch {
            throw files.storageError(error, "creating \(name)")
        }
        creations.append(Creation(token: token, id: id, left: 1))
    }

    /// Open and posix_fallocate on the loop, the two fsyncs through the ring (before 5.11).
    func beginBlockingCreate(_ id: UInt32, _ name: String, token: UInt64, _ ring: SyncRing) throws(StorageError) {
        do throws(SystemError) {
            try directory.createWithoutSync(name)
            try ring.sync(try directory.descriptorFor(name), dataOnly: false, token: Self.ringToken(token, .fileSync))
        } catch {
            throw files.storageError(error, "creating \(name)")
        }
        creations.append(Creation(token: token, id: id, left: 2))
        do throws(SystemError) {
            try ring.sync(try directory.directoryDescriptor(), dataOnly: false, token: Self.ringToken(token, .directorySync))
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
        let token = c.token >> Self.stepBits
        guard let step = Step(rawValue: c.token & (1 << Self.stepBits - 1)) else {
            strayCompletions &+= 1
            return
        }
        switch step {
        case .write:
            guard let w = writeInFlight, w.token == token else {
                strayCompletions &+= 1
                return
            }
            writeInFlight = nil
            let name = SegmentName.name(w.id)
            if let e = c.errno {
                failedWrites &+= 1
                writeError = (token, storageError(e, "write", "writing \(name)"))
            } else if Int(c.result) != w.count {
                failedWrites &+= 1
                writeError = (token, storageError(EIO, "write", "writing \(name): \(c.result) of \(w.count) bytes"))
            }
        case .dataSync:
            // A failed write cancels its sync: the write's error is the one to report.
            var error = c.errno.map { storageError($0, "fdatasync", "syncing the journal") }
            if let w = writeError, w.token == token {
                error = w.error
                writeError = nil
            }
            if error != nil { failedSyncs &+= 1 }
            done.append(SyncCompletion(token: token, error: error))
        case .open, .allocate, .fileSync, .directorySync:
            creationStep(c, step, token)
        case .unlink, .removalDirectorySync:
            removalStep(c, step, segment: UInt32(truncatingIfNeeded: token))
        }
    }

    func creationStep(_ c: SyncRing.Completion, _ step: Step, _ token: UInt64) {
        guard let i = creations.firstIndex(where: { $0.token == token }) else {
            strayCompletions &+= 1
            return
        }
        let name = SegmentName.name(creations[i].id)
        if let e = c.errno {
            if step != .open { failedSyncs &+= 1 }
            if creations[i].error == nil || (creations[i].errorIsCancellation && e != ECANCELED) {
                creations[i].error = switch step {
                case .open: storageError(e, "openat", "creating \(name)")
                case .allocate: storageError(e, "fallocate", "preallocating \(name) (\(segmentBytes) bytes)")
                case .fileSync: storageError(e, "fsync", "creating \(name)")
                default: storageError(e, "fsync", "syncing the journal directory")
                }
                creations[i].errorIsCancellation = e == ECANCELED
            }
        }
        creations[i].left -= 1
        if step == .open, let ring {
            if c.errno != nil {
                notCreated = creations[i].id
            } else {
                // The file exists (empty): the directory keeps its descriptor for the journal's
                // writes; preallocate and make it and its entry durable, in the background.
                let fd = FileDescriptor(rawValue: c.result)
                directory.adopt(name, fd)
                let start = MonotonicClock.nowNs
                do throws(SystemError) {
                    let dfd = try directory.directoryDescriptor()
                    directory.pin(fd)
                    directory.pin(dfd)
                    do throws(SystemError) {
                        try ring.allocateAndSync(fd, bytes: segmentBytes, directory: dfd,
                                                 tokens: (Self.ringToken(token, .allocate), Self.ringToken(token, .fileSync),
                                                          Self.ringToken(token, .directorySync)))
                    } catch {
                        directory.unpin(fd)
                        directory.unpin(dfd)
                        throw error
                    }
                    creations[i].pinned = (fd, dfd)
                    creations[i].left += 3
                } catch {
                    creations[i].error = files.storageError(error, "creating \(name)")
                }
                slowestCreateNs = max(slowestCreateNs, Int64(MonotonicClock.nowNs &- start))
            }
        }
        if creations[i].left <= 0 {
            done.append(SyncCompletion(token: token, error: creations[i].error))
            if let p = creations[i].pinned {
                directory.unpin(p.file)
                directory.unpin(p.directory)
            }
            creations.remove(at: i)
        }
    }

    func removalStep(_ c: SyncRing.Completion, _ step: Step, segment: UInt32) {
        if step == .unlink {
            unlinksInFlight = max(0, unlinksInFlight - 1)
            if let e = c.errno, e != ENOENT {
                removalFailed(storageError(e, "unlinkat", "removing \(SegmentName.name(segment))"))
            } else {
                removalSyncWanted = true
            }
        } else {
            removalSyncInFlight = false
            if let e = c.errno { removalFailed(storageError(e, "fsync", "syncing the journal directory after compaction")) }
        }
        submitRemovals()
    }

    func removalFailed(_ e: StorageError) {
        removalFailures &+= 1
        lastRemovalError = e.message
    }

    /// Submits queued unlinks while the ring has room beside the journal's own operations, then
    /// the directory's fsync once none is left.
    func submitRemovals() {
        guard let ring else { return }
        let start = MonotonicClock.nowNs
        defer { slowestRemoveNs = max(slowestRemoveNs, Int64(MonotonicClock.nowNs &- start)) }
        while !removals.isEmpty, ring.inFlight + Self.journalEntriesReserved < Int(SyncRing.entriesMax) {
            let id = removals.removeFirst()
            do throws(SystemError) {
                try ring.unlink(in: try directory.directoryDescriptor(), SegmentName.name(id), token: Self.ringToken(UInt64(id), .unlink))
                unlinksInFlight += 1
            } catch {
                removalFailed(files.storageError(error, "removing \(SegmentName.name(id))"))
            }
        }
        guard removals.isEmpty, unlinksInFlight == 0, removalSyncWanted, !removalSyncInFlight,
              ring.inFlight + Self.journalEntriesReserved < Int(SyncRing.entriesMax) else { return }
        do throws(SystemError) {
            try ring.sync(try directory.directoryDescriptor(), dataOnly: false, token: Self.ringToken(0, .removalDirectorySync))
            removalSyncWanted = false
            removalSyncInFlight = true
        } catch {
            removalFailed(files.storageError(error, "syncing the journal directory after compaction"))
        }
    }

    /// Compaction (and giving up a half-made segment): in the background through the ring,
    /// blocking without it.
    public func remove(_ id: UInt32) throws(StorageError) {
        try settle(id)
        if notCreated == id {
            notCreated = nil
            return // its openat failed: the name is not ours
        }
        guard ring != nil, !fileOperationsBlock, removals.count < Self.removalsQueuedMax else {
            let start = MonotonicClock.nowNs
            defer { slowestRemoveNs = max(slowestRemoveNs, Int64(MonotonicClock.nowNs &- start)) }
            return try base.remove(id)
        }
        directory.release(SegmentName.name(id))
        removals.append(id)
        removalsBegun &+= 1
        submitRemovals()
    }

    // MARK: SegmentStorage (the directory's)

    public func list() throws(StorageError) -> [UInt32] { try base.list() }
    public func create(_ id: UInt32) throws(StorageError) { try base.create(id) }
    /// Staged for the sync that follows (`writesThroughRing`, nothing in flight, bytes that
    /// continue the staged ones), else written in the loop.
    public func write(_ id: UInt32, at offset: Int, _ bytes: UnsafeRawBufferPointer) throws(StorageError) {
        let start = MonotonicClock.nowNs
        defer {
            let ns = Int64(MonotonicClock.nowNs &- start)
            if ns > slowestWriteNs {
                slowestWriteNs = ns
                slowestWriteOffset = offset
            }
        }
        if writesThroughRing, writeInFlight == nil {
            if let s = staged, s.id != id || s.offset + s.count != offset || s.count + bytes.count > segmentBytes {
                try flushStaged()
            }
            if bytes.count <= segmentBytes {
                let buffer = stage ?? UnsafeMutableRawBufferPointer.allocate(byteCount: segmentBytes, alignment: 64)
                stage = buffer
                let at = staged?.count ?? 0
                UnsafeMutableRawBufferPointer(rebasing: buffer[at..<(at + bytes.count)]).copyMemory(from: bytes)
                staged = (id, staged?.offset ?? offset, at + bytes.count)
                return
            }
        }
        try flushStaged()
        loopWrites &+= 1
        try base.write(id, at: offset, bytes)
    }
    public func sync(_ id: UInt32) throws(StorageError) {
        try settle(id)
        try base.sync(id)
    }
    /// The file's bytes with the staged write, or the one in flight, laid over them (the
    /// ride's records read back for its file may not be in the file yet).
    public func read(_ id: UInt32) throws(StorageError) -> [UInt8] {
        var bytes = try base.read(id)
        guard let stage else { return bytes }
        let pending = staged ?? writeInFlight.map { (id: $0.id, offset: $0.offset, count: $0.count) }
        guard let w = pending, w.id == id else { return bytes }
        let end = w.offset + w.count
        if bytes.count < end { bytes.append(contentsOf: repeatElement(0, count: end - bytes.count)) }
        bytes.withUnsafeMutableBytes { b in
            UnsafeMutableRawBufferPointer(rebasing: b[w.offset..<end]).copyMemory(from: UnsafeRawBufferPointer(rebasing: stage[0..<w.count]))
        }
        return bytes
    }
    public func truncate(_ id: UInt32, at offset: Int) throws(StorageError) {
        try settle(id)
        try base.truncate(id, at: offset)
    }
    public func setAside(_ id: UInt32) throws(StorageError) -> String {
        try settle(id)
        return try base.setAside(id)
    }
    public func copyAside(_ id: UInt32) throws(StorageError) -> String {
        try settle(id)
        return try base.copyAside(id)
    }
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
                            deviceNow: MonotonicInstant, wallNow: WallClockTime?, boot: BootIdentity? = BootID.current().flatMap(BootIdentity.init),
                            policy: CommitPolicy, blockingSyncs: String? = nil) throws(SystemError) -> (journal: FlashJournal, core: AppCore, report: RecoveryReport) {
        try AtomicFiles.makeDirectories(directory)
        let dir = try SegmentDirectory(path: directory, segmentBytes: segmentBytes, createIfMissing: true)
        return FlashJournal.open(storage: BoardSegmentStorage(dir, blockingSyncs: blockingSyncs), configuration: configuration,
                                 randomSeed: randomSeed, deviceNow: deviceNow, wallNow: wallNow, boot: boot, policy: policy)
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
