import Glibc

/// A directory of fixed-size, preallocated files written in place: the journal's segments on
/// the SD card. Thin wrappers over open/pwrite/pread/fdatasync/fsync/posix_fallocate/rename,
/// each retried on EINTR; operating errors (ENOSPC, EIO, EACCES, EROFS) are thrown as
/// `SystemError` for the caller to report and retry. Knows nothing about rides: the journal's
/// storage adapter maps segment numbers to names.
///
/// Durability: `create` preallocates the whole file (posix_fallocate) and fsyncs it and the
/// directory, so later appends change no metadata and `sync` can be fdatasync.
///
/// Descriptors: the segments being written (at most `openFilesMax`) and the directory itself
/// stay open between calls; everything else is opened and closed per call. After a failure the
/// owner calls `releaseDescriptors()`: a card whose file system went read-only (ext4
/// errors=remount-ro) or failed with EIO is only healed by unmounting it, fsck and mounting it
/// again, and a descriptor held on the old mount keeps its aborted superblock alive, so the new
/// mount would get the same read-only file system back (issue 17). Released, the next call opens
/// by path and so reaches whatever is mounted there now.
public final class SegmentDirectory {
    public let path: String
    public let segmentBytes: Int
    /// Open descriptors kept at most (the journal writes one segment at a time).
    public static let openFilesMax = 4

    public private(set) var writeCount = 0
    public private(set) var syncCount = 0
    public private(set) var bytesWritten = 0
    /// The slowest single write and sync so far, ns (how long the loop could be blocked).
    public private(set) var slowestWriteNs: Int64 = 0
    public private(set) var slowestSyncNs: Int64 = 0

    var open: [(name: String, fd: FileDescriptor)] = []

    /// Opens `path`, which must be a directory, writable unless `readOnly` (created when
    /// `createIfMissing`).
    public init(path: String, segmentBytes: Int, createIfMissing: Bool = false, readOnly: Bool = false) throws(SystemError) {
        self.path = path
        self.segmentBytes = segmentBytes
        if createIfMissing && access(path, F_OK) != 0 {
            if mkdir(path, 0o755) != 0 && Glibc.errno != EEXIST {
                throw SystemError.current("mkdir", "\(path): create the data directory or fix its parent's permissions")
            }
        }
        var st = stat()
        guard stat(path, &st) == 0 else {
            throw SystemError.current("stat", "\(path): the journal directory does not exist; create it or pass --data-dir")
        }
        guard (st.st_mode & S_IFMT) == S_IFDIR else {
            throw SystemError(errno: ENOTDIR, call: "stat", context: "\(path) is not a directory")
        }
        guard readOnly || access(path, W_OK | X_OK) == 0 else {
            throw SystemError.current("access", "\(path) is not writable: remount it read-write or fix its permissions")
        }
    }

    /// Descriptors closed by `releaseDescriptors()` so far, and the calls that closed any.
    public private(set) var descriptorsReleased: UInt64 = 0
    public private(set) var releases: UInt64 = 0

    deinit {
        releaseDescriptors()
        for p in pins where p.released { p.fd.close() }
    }

    /// Descriptors held open on the directory now (segments and the directory itself).
    public var descriptorsHeld: Int { open.count + (directoryFD == nil ? 0 : 1) }

    /// Closes every descriptor held on the directory (segments and the directory itself; syncs
    /// already submitted to io_uring hold their own reference and complete as before, and a
    /// descriptor a linked chain still names is closed once the chain is reaped: `pin`). The
    /// next operation opens by path again. Returns how many were let go.
    @discardableResult
    public func releaseDescriptors() -> Int {
        let n = descriptorsHeld
        guard n > 0 else { return 0 }
        for f in open { closeDescriptor(f.fd) }
        open.removeAll(keepingCapacity: true)
        if let d = directoryFD { closeDescriptor(d) }
        directoryFD = nil
        descriptorsReleased &+= UInt64(n)
        releases &+= 1
        return n
    }

    func full(_ name: String) -> String { path + "/" + name }

    static func nowNs() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }

    func descriptor(_ name: String) throws(SystemError) -> FileDescriptor {
        if let i = open.firstIndex(where: { $0.name == name }) { return open[i].fd }
        let fd = try FileDescriptor.open(full(name), O_RDWR)
        if open.count >= Self.openFilesMax { closeDescriptor(open.removeFirst().fd) }
        open.append((name, fd))
        return fd
    }

    func forget(_ name: String) {
        if let i = open.firstIndex(where: { $0.name == name }) { closeDescriptor(open.remove(at: i).fd) }
    }

    // MARK: Descriptors in flight

    /// Descriptors that operations in flight still name, with how many name each and whether the
    /// directory has let go of it (then it is closed at the last `unpin`). A linked io_uring
    /// step (IOSQE_IO_LINK) looks its descriptor up only when it runs (Linux 5.18 and later), so
    /// a descriptor closed while its chain is in flight, and its number reused by the next open,
    /// would have the chain fsync another file (issue 27).
    var pins: [(fd: FileDescriptor, count: Int, released: Bool)] = []
    /// Descriptors pinned at most (a segment's creation pins two; the journal runs one at a time).
    public static let pinsMax = 8

    /// Keeps `fd` open until as many `unpin(fd)` as `pin(fd)`, whatever the directory lets go of
    /// meanwhile (a failure's `releaseDescriptors`, the open-file bound, a removal).
    public func pin(_ fd: FileDescriptor) {
        if let i = pins.firstIndex(where: { $0.fd == fd }) {
            pins[i].count += 1
            return
        }
        precondition(pins.count < Self.pinsMax, "more than \(Self.pinsMax) descriptors pinned: a chain's completions were never reaped")
        pins.append((fd, 1, false))
    }

    /// The operation that named `fd` completed: closes it now if the directory let go of it.
    public func unpin(_ fd: FileDescriptor) {
        guard let i = pins.firstIndex(where: { $0.fd == fd }) else {
            preconditionFailure("\(fd) unpinned more often than pinned")
        }
        pins[i].count -= 1
        guard pins[i].count == 0 else { return }
        let p = pins.remove(at: i)
        if p.released { p.fd.close() }
    }

    /// Descriptors the directory let go of that stay open until their operations complete.
    public var descriptorsAwaitingCompletion: Int { pins.reduce(0) { $0 + ($1.released ? 1 : 0) } }

    /// Closes `fd` unless an operation in flight names it (then at its last `unpin`).
    func closeDescriptor(_ fd: FileDescriptor) {
        if let i = pins.firstIndex(where: { $0.fd == fd }) {
            pins[i].released = true
        } else {
            fd.close()
        }
    }

    /// The names of the directory's regular entries.
    /// (AtomicFiles.list: without touching the directory's access time.)
    public func list() throws(SystemError) -> [String] {
        try AtomicFiles.list(path).sorted()
    }

    public func exists(_ name: String) -> Bool { access(full(name), F_OK) == 0 }

    /// fsync(2) on the directory, so created, renamed and removed entries are durable.
    public func syncDirectory() throws(SystemError) {
        let fd = try FileDescriptor.open(path, O_RDONLY | O_DIRECTORY)
        defer { fd.close() }
        _ = try retryingOnInterrupt("fsync", path) { fsync(fd.rawValue) }
    }

    /// Creates `name` (it must not exist), preallocated to `segmentBytes` of zeros, durably.
    public func create(_ name: String) throws(SystemError) {
        try createWithoutSync(name)
        do throws(SystemError) {
            let fd = try descriptor(name)
            _ = try retryingOnInterrupt("fsync", full(name)) { fsync(fd.rawValue) }
        } catch {
            forget(name)
            throw error
        }
        try syncDirectory()
    }

    /// Creates `name` (it must not exist) preallocated to `segmentBytes` of zeros, but does not
    /// wait for it to be durable: the caller syncs the file and the directory
    /// (`descriptorFor(_:)`, `directoryDescriptor()`) without blocking, through a `SyncRing`.
    public func createWithoutSync(_ name: String) throws(SystemError) {
        let fd = try FileDescriptor.open(full(name), O_RDWR | O_CREAT | O_EXCL, mode: 0o644)
        var r: Int32
        repeat { r = posix_fallocate(fd.rawValue, 0, off_t(segmentBytes)) } while r == EINTR
        if r != 0 {
            fd.close()
            _ = unlink(full(name))
            throw SystemError(errno: r, call: "posix_fallocate", context: "\(full(name)) (\(segmentBytes) bytes): free space on the card")
        }
        adopt(name, fd)
    }

    /// Takes `fd`, a descriptor of `name` opened elsewhere (a `SyncRing` openat), as the one the
    /// directory uses and closes for `name`.
    public func adopt(_ name: String, _ fd: FileDescriptor) {
        forget(name)
        if open.count >= Self.openFilesMax { closeDescriptor(open.removeFirst().fd) }
        open.append((name, fd))
    }

    /// Closes the descriptor kept for `name`, if any (before it is unlinked elsewhere).
    public func release(_ name: String) { forget(name) }

    /// The open descriptor of `name` (opened if needed; the directory owns and closes it).
    public func descriptorFor(_ name: String) throws(SystemError) -> FileDescriptor { try descriptor(name) }

    var directoryFD: FileDescriptor?

    /// A descriptor of the directory itself, kept open (to fsync its entries without blocking).
    public func directoryDescriptor() throws(SystemError) -> FileDescriptor {
        if let fd = directoryFD { return fd }
        let fd = try FileDescriptor.open(path, O_RDONLY | O_DIRECTORY)
        directoryFD = fd
        return fd
    }

    /// pwrite(2) of all of `bytes` at `offset`, looping over partial writes.
    public func write(_ name: String, at offset: Int, _ bytes: UnsafeRawBufferPointer) throws(SystemError) {
        precondition(offset >= 0 && offset + bytes.count <= segmentBytes, "write outside the preallocated segment")
        let fd = try descriptor(name)
        let start = Self.nowNs()
        var done = 0
        while done < bytes.count {
            let n = try retryingOnInterrupt("pwrite", full(name)) {
                pwrite(fd.rawValue, bytes.baseAddress! + done, bytes.count - done, off_t(offset + done))
            }
            guard n > 0 else { throw SystemError(errno: EIO, call: "pwrite", context: "\(full(name)): wrote nothing") }
            done += n
        }
        writeCount += 1
        bytesWritten += bytes.count
        slowestWriteNs = max(slowestWriteNs, Self.nowNs() - start)
    }

    /// fdatasync(2): the data written to `name` is on the card.
    public func sync(_ name: String) throws(SystemError) {
        let fd = try descriptor(name)
        let start = Self.nowNs()
        _ = try retryingOnInterrupt("fdatasync", full(name)) { fdatasync(fd.rawValue) }
        syncCount += 1
        slowestSyncNs = max(slowestSyncNs, Self.nowNs() - start)
    }

    /// The whole file (pread(2) until its end).
    public func read(_ name: String) throws(SystemError) -> [UInt8] {
        let fd = try FileDescriptor.open(full(name), O_RDONLY)
        defer { fd.close() }
        var st = stat()
        _ = try retryingOnInterrupt("fstat", full(name)) { fstat(fd.rawValue, &st) }
        var bytes = [UInt8](repeating: 0, count: Int(st.st_size))
        var done = 0
        let result: Result<Void, SystemError> = bytes.withUnsafeMutableBytes { b in
            while done < b.count {
                let n = pread(fd.rawValue, b.baseAddress! + done, b.count - done, off_t(done))
                if n < 0 {
                    if Glibc.errno == EINTR { continue }
                    return .failure(.current("pread", full(name)))
                }
                if n == 0 { break }
                done += n
            }
            return .success(())
        }
        try result.get()
        return done == bytes.count ? bytes : Array(bytes[0..<done])
    }

    /// Zeros `name` from `offset` to `segmentBytes` (ftruncate then posix_fallocate), durably.
    public func zero(_ name: String, from offset: Int) throws(SystemError) {
        let fd = try descriptor(name)
        _ = try retryingOnInterrupt("ftruncate", full(name)) { ftruncate(fd.rawValue, off_t(offset)) }
        var r: Int32
        repeat { r = posix_fallocate(fd.rawValue, off_t(offset), off_t(segmentBytes - offset)) } while r == EINTR
        if r != 0 { throw SystemError(errno: r, call: "posix_fallocate", context: full(name)) }
        _ = try retryingOnInterrupt("fsync", full(name)) { fsync(fd.rawValue) }
    }

    /// unlink(2), durably.
    public func remove(_ name: String) throws(SystemError) {
        forget(name)
        _ = try retryingOnInterrupt("unlink", full(name)) { unlink(full(name)) }
        try syncDirectory()
    }

    /// Renames `name` to the first free of `newBase`, `newBase-2`, ... durably; returns the name.
    public func rename(_ name: String, toFreeNameLike newBase: String) throws(SystemError) -> String {
        forget(name)
        let target = freeName(newBase)
        _ = try retryingOnInterrupt("rename", "\(full(name)) → \(target)") { Glibc.rename(full(name), full(target)) }
        try syncDirectory()
        return target
    }

    /// Copies `name` to the first free of `newBase`, `newBase-2`, ... durably; returns the name.
    public func copy(_ name: String, toFreeNameLike newBase: String) throws(SystemError) -> String {
        let bytes = try read(name)
        let target = freeName(newBase)
        let fd = try FileDescriptor.open(full(target), O_WRONLY | O_CREAT | O_EXCL, mode: 0o644)
        defer { fd.close() }
        try fd.writeAll(bytes)
        _ = try retryingOnInterrupt("fsync", full(target)) { fsync(fd.rawValue) }
        try syncDirectory()
        return target
    }

    func freeName(_ base: String) -> String {
        var name = base
        var k = 1
        while exists(name) { k += 1; name = base + "-\(k)" }
        return name
    }

    /// statvfs(3): bytes available to this user.
    public func availableBytes() -> Int? {
        var s = statvfs()
        guard statvfs(path, &s) == 0 else { return nil }
        return Int(s.f_bavail) * Int(s.f_frsize)
    }
}
