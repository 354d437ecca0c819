import BoardIO
import Glibc
import RideFiles

/// The ride library's file operations on a real directory: atomic writes (temporary file,
/// fsync, rename, fsync of the directory) through BoardIO. Used by `bikecomputer` on the board
/// and by `bikesim --data-dir`, so both store rides the same way.
///
/// With `backgroundSyncs` (the board's loop) `beginWriteAtomically` does not wait for the card:
/// the temporary file is written (into the page cache), its fsync goes to an io_uring of its
/// own (`SyncRing`, a sibling of the journal's), and each `poll` looks for the completion:
/// then the rename, then the directory's fsync the same way. "RIDE SAVED" still waits for both
/// (and for the FIT's read-back); only the loop no longer does (issue 17 item 6). Where io_uring
/// is refused the write blocks as before (`syncMode` says so).
public final class BoardRideFiles: RideFileOperations {
    let backgroundSyncs: Bool
    var ring: SyncRing?
    var ringRefused: String?
    var nextToken: UInt64 = 0
    /// Completions reaped and not yet claimed by their write, by token (a write given up after
    /// a failure never claims its own: bounded by `unclaimedMax`).
    var completions: [UInt64: Int32] = [:]
    static let unclaimedMax = 32
    /// Writes whose syncs went through the ring, and those that blocked (no ring, ring full).
    public private(set) var backgroundWrites: UInt64 = 0
    public private(set) var blockingWrites: UInt64 = 0
    /// What a background write still costs a loop turn (status: `ride_files.slowest_*_us`):
    /// beginning it (the temporary file's creation and write into the page cache, the fsync's
    /// submission) and one poll (a completion's reap, the rename, the directory's open and its
    /// fsync's submission). Neither waits for the card's writes; a metadata change can wait for
    /// the file system's journal.
    public internal(set) var slowestBeginNs: UInt64 = 0
    public internal(set) var slowestPollNs: UInt64 = 0

    public init(backgroundSyncs: Bool = false) { self.backgroundSyncs = backgroundSyncs }

    /// How ride files are synced ("io_uring", "blocking (why)").
    public var syncMode: String {
        guard backgroundSyncs else { return "blocking (in the write)" }
        if let r = ringRefused { return "blocking (\(r))" }
        return "io_uring"
    }

    public func list(_ directory: String) throws -> [String] {
        // Not `catch where`: Swift 6.2.3 (Debian's, the aarch64 release) aborts compiling a
        // `catch` with a pattern or `where` after a typed-throws call.
        do { return try AtomicFiles.list(directory) } catch {
            if error.isNotFound { return [] }
            throw error
        }
    }
    public func read(_ path: String) throws -> [UInt8] { try AtomicFiles.readAll(path) }
    public func writeAtomically(_ path: String, _ bytes: [UInt8]) throws { try AtomicFiles.write(path, bytes) }
    public func remove(_ path: String) throws { try AtomicFiles.remove(path) }
    public func makeDirectories(_ path: String) throws { try AtomicFiles.makeDirectories(path) }
    public func size(_ path: String) throws -> Int64 { try AtomicFiles.size(path) }
    public func fault(of error: any Error) -> RideFileFault {
        guard let e = error as? SystemError else { return .other }
        if e.isNoSpace { return .full }
        if e.isPermissionDenied || e.errno == EROFS { return .readOnly }
        if e.errno == EIO { return .io }
        return .other
    }

    public func beginWriteAtomically(_ path: String, _ bytes: [UInt8]) throws -> RideFilePendingWrite? {
        guard backgroundSyncs, let ring = openRing(), ring.inFlight + 1 < Int(SyncRing.entriesMax) else {
            blockingWrites &+= 1
            try AtomicFiles.write(path, bytes)
            return nil
        }
        let started = MonotonicClock.nowNs
        defer { slowestBeginNs = max(slowestBeginNs, MonotonicClock.nowNs &- started) }
        let write = try BackgroundWrite(self, path: path, bytes: bytes)
        backgroundWrites &+= 1
        return write
    }

    /// Removes `paths` (one directory) at once and fsyncs their directory through the ring.
    public func beginRemove(_ paths: [String]) throws -> RideFilePendingWrite? {
        guard let first = paths.first else { return nil }
        guard backgroundSyncs, let ring = openRing(), ring.inFlight + 1 < Int(SyncRing.entriesMax) else {
            blockingWrites &+= 1
            for p in paths { try AtomicFiles.remove(p) }
            return nil
        }
        let started = MonotonicClock.nowNs
        defer { slowestBeginNs = max(slowestBeginNs, MonotonicClock.nowNs &- started) }
        var removed = 0
        for p in paths {
            if unlink(p) == 0 { removed += 1 } else if errno != ENOENT { throw SystemError.current("unlink", p) }
        }
        guard removed > 0 else { return nil }  // nothing changed in the directory
        backgroundWrites &+= 1
        return try BackgroundWrite(self, syncingDirectoryOf: first)
    }

    /// The ring's completion eventfd, for the board's epoll set (opens the ring; nil without
    /// background syncs or where io_uring is refused). When it is readable, call
    /// `collectCompletions` and then poll the pending writes.
    public var completionDescriptor: FileDescriptor? {
        guard backgroundSyncs else { return nil }
        return openRing()?.completionDescriptor
    }

    /// Takes every completion the ring holds (clearing its eventfd) for the writes to claim.
    public func collectCompletions() {
        guard let ring else { return }
        for _ in 0..<Int(SyncRing.entriesMax) {
            guard let c = ring.reap() else { return }
            if completions.count >= Self.unclaimedMax, let oldest = completions.keys.min() { completions.removeValue(forKey: oldest) }
            completions[c.token] = c.errno ?? 0
        }
    }

    func openRing() -> SyncRing? {
        if let ring { return ring }
        guard ringRefused == nil else { return nil }
        do { ring = try SyncRing() } catch { ringRefused = "\(error)" }
        return ring
    }

    func token() -> UInt64 {
        nextToken &+= 1
        return nextToken
    }

    /// Submits an fsync of `fd`; false when the ring would not take it (the caller syncs itself).
    func submit(_ fd: FileDescriptor, token: UInt64) -> Bool {
        guard let ring else { return false }
        do { try ring.sync(fd, dataOnly: false, token: token) } catch { return false }
        return true
    }

    /// The result of `token`'s sync once completed: 0 or an errno; nil while it runs.
    func result(of token: UInt64) -> Int32? {
        if let r = completions.removeValue(forKey: token) { return r }
        guard let ring else { return nil }
        while let c = ring.reap() {
            if c.token == token { return c.errno ?? 0 }
            if completions.count >= Self.unclaimedMax, let oldest = completions.keys.min() { completions.removeValue(forKey: oldest) }
            completions[c.token] = c.errno ?? 0
        }
        return nil
    }
}

/// One atomic write whose fsyncs run on the ring: temporary file written → its fsync →
/// rename → the directory's fsync. `poll` never waits.
final class BackgroundWrite: RideFilePendingWrite {
    enum Stage { case fileSync, directorySync, done }
    let files: BoardRideFiles
    let path: String
    let temporary: String
    var fd: FileDescriptor?
    var stage = Stage.fileSync
    var token: UInt64

    init(_ files: BoardRideFiles, path: String, bytes: [UInt8]) throws(SystemError) {
        self.files = files
        self.path = path
        let (f, temporary) = try AtomicFiles.createTemporary(for: path, mode: 0o644)
        self.temporary = temporary
        do { try f.writeAll(bytes) } catch {
            f.close()
            unlink(temporary)
            throw error
        }
        fd = f
        token = files.token()
        if !files.submit(f, token: token) { try syncNow(f, temporary) }
    }

    /// Only the fsync of `path`'s directory (after removals there).
    init(_ files: BoardRideFiles, syncingDirectoryOf path: String) throws(SystemError) {
        self.files = files
        self.path = path
        temporary = path
        token = 0
        try beginDirectorySync()
    }

    /// Submits the fsync of the directory of `path` (blocking where the ring refuses it).
    func beginDirectorySync() throws(SystemError) {
        stage = .directorySync
        let dir = AtomicFiles.directoryName(of: path)
        let d = try FileDescriptor.open(dir, O_RDONLY | O_DIRECTORY)
        fd = d
        token = files.token()
        if !files.submit(d, token: token) { try syncNow(d, dir) }
    }

    deinit {
        // Given up before done (a failed step, a retry): the ring keeps its own reference to a
        // file still being synced; the temporary is not wanted.
        fd?.close()
        if stage == .fileSync { unlink(temporary) }
    }

    /// The blocking fallback (the ring would not take the submission): marks it done at once.
    func syncNow(_ f: FileDescriptor, _ what: String) throws(SystemError) {
        _ = try retryingOnInterrupt("fsync", what) { fsync(f.rawValue) }
        token = 0
    }

    func poll() throws -> Bool {
        let started = MonotonicClock.nowNs
        defer { files.slowestPollNs = max(files.slowestPollNs, MonotonicClock.nowNs &- started) }
        switch stage {
        case .done:
            return true
        case .fileSync:
            if token != 0 {
                guard let r = files.result(of: token) else { return false }
                if r != 0 { throw SystemError(errno: r, call: "fsync", context: temporary) }
            }
            fd?.close()
            fd = nil
            guard rename(temporary, path) == 0 else {
                let e = SystemError.current("rename", "\(temporary) → \(path)")
                unlink(temporary)
                stage = .done
                throw e
            }
            try beginDirectorySync()
            return false
        case .directorySync:
            if token != 0 {
                guard let r = files.result(of: token) else { return false }
                if r != 0 { throw SystemError(errno: r, call: "fsync", context: AtomicFiles.directoryName(of: path)) }
            }
            fd?.close()
            fd = nil
            stage = .done
            return true
        }
    }
}
