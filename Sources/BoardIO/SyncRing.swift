import CBoardShims
import Glibc

/// File operations that do not block the caller: submitted to an io_uring (IORING_OP_FSYNC,
/// IORING_FSYNC_DATASYNC for fdatasync; OPENAT, FALLOCATE and UNLINKAT for the journal's segment
/// creation and compaction), run by the kernel's own worker, and completed later: the ring's
/// eventfd (`completionDescriptor`) becomes readable, and `reap()` hands back each completion
/// with the token it was submitted with. Single-threaded, like the run loop.
///
/// A name passed to `openFile`/`unlink` is copied at submission; a chain
/// (`allocateAndSync`) is linked (IOSQE_IO_LINK): its steps run in order, and a failed step
/// cancels the rest (their completions carry ECANCELED).
///
/// Where io_uring is unavailable (an old kernel: ENOSYS; a seccomp filter or
/// `kernel.io_uring_disabled`: EPERM) `open` throws, and the caller falls back to plain,
/// blocking syncs (BoardJournal logs and counts it).
public final class SyncRing {
    let ring: OpaquePointer
    /// Submissions the ring holds at most (the journal keeps one or two in flight).
    /// Submissions the ring holds at most: the journal keeps one operation in flight (a sync, or
    /// a segment's creation: three linked steps), compaction's unlinks use what is left.
    public static let entriesMax: UInt32 = 16
    /// Whether the kernel runs OPENAT, FALLOCATE and UNLINKAT (5.11 and later; Debian 12's 6.1
    /// does): without them a segment's creation and removal block, as before.
    public let runsFileOperations: Bool
    /// Flags a segment is created with through `openFile` (O_EXCL: it must not exist).
    public static let createFlags = O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC

    public private(set) var submitted: UInt64 = 0
    public private(set) var completed: UInt64 = 0
    public private(set) var failed: UInt64 = 0

    public struct Completion: Sendable, Hashable {
        public var token: UInt64
        /// nil when the operation succeeded, else the errno it failed with (EIO: the data may be
        /// lost; ECANCELED: an earlier step of its chain failed).
        public var errno: Int32?
        /// The kernel's result when it succeeded (OPENAT: the new descriptor; otherwise 0).
        public var result: Int32 = 0

        public init(token: UInt64, errno: Int32?, result: Int32 = 0) {
            self.token = token
            self.errno = errno
            self.result = result
        }
    }

    public init() throws(SystemError) {
        var error: Int32 = 0
        guard let r = cbs_uring_open(Self.entriesMax, &error) else {
            throw SystemError(errno: error, call: "io_uring_setup", context: "the journal's syncs will block the loop")
        }
        ring = r
        runsFileOperations = cbs_uring_supports_file_ops(r) == 1
    }

    deinit { cbs_uring_close(ring) }

    /// The non-blocking eventfd to watch for readability; `reap()` after it fires.
    public var completionDescriptor: FileDescriptor { FileDescriptor(rawValue: cbs_uring_eventfd(ring)) }

    /// Syncs submitted and not yet reaped.
    public var inFlight: Int { Int(cbs_uring_inflight(ring)) }

    /// Starts an fdatasync (`dataOnly`) or fsync of `fd`; its completion carries `token`.
    public func sync(_ fd: FileDescriptor, dataOnly: Bool, token: UInt64) throws(SystemError) {
        if cbs_uring_fsync(ring, fd.rawValue, dataOnly ? 1 : 0, token) != 0 {
            throw SystemError.current("io_uring_enter", dataOnly ? "fdatasync" : "fsync")
        }
        submitted &+= 1
    }

    /// Whether the kernel runs IORING_OP_WRITE (5.6 and later; Debian 12's 6.1 does): the
    /// journal's writes then go through the ring too, linked before their sync.
    public var runsWrites: Bool { cbs_uring_supports_write(ring) == 1 }

    /// Starts, linked in this order: pwrite(`fd`, `bytes`, `offset`) and fdatasync(`fd`). Two
    /// completions, `tokens` in that order; a failed or short write cancels the sync (ECANCELED).
    /// `bytes` must stay valid and unchanged until the write's completion.
    public func writeAndSync(_ fd: FileDescriptor, _ bytes: UnsafeRawBufferPointer, at offset: Int,
                             tokens: (write: UInt64, sync: UInt64)) throws(SystemError) {
        guard cbs_uring_prep_write(ring, fd.rawValue, bytes.baseAddress, UInt32(bytes.count), UInt64(offset), tokens.write, 1) == 0,
              cbs_uring_prep_fsync(ring, fd.rawValue, 1, tokens.sync, 0) == 0 else {
            let e = SystemError.current("io_uring_enter", "write and fdatasync")
            cbs_uring_discard(ring)
            throw e
        }
        try submit("write and fdatasync")
    }

    /// Starts openat(`directory`, `name`, `createFlags`, 0644): a new, empty file. Its completion's
    /// `result` is the descriptor (the caller owns it); EEXIST if the name is taken.
    public func openFile(in directory: FileDescriptor, _ name: String, token: UInt64) throws(SystemError) {
        let r = name.withCString { cbs_uring_prep_openat(ring, directory.rawValue, $0, Self.createFlags, 0o644, token) }
        if r != 0 { throw SystemError.current("io_uring_enter", "openat \(name)") }
        try submit("openat \(name)")
    }

    /// Starts, linked in this order: fallocate(`fd`, 0, 0, `bytes`) (the file's blocks, zeros),
    /// fsync(`fd`) (its size and blocks durable) and fsync(`directory`) (its entry durable).
    /// Three completions, with `tokens` in that order.
    public func allocateAndSync(_ fd: FileDescriptor, bytes: Int, directory: FileDescriptor,
                                tokens: (allocate: UInt64, file: UInt64, directory: UInt64)) throws(SystemError) {
        guard cbs_uring_prep_fallocate(ring, fd.rawValue, 0, 0, UInt64(bytes), tokens.allocate, 1) == 0,
              cbs_uring_prep_fsync(ring, fd.rawValue, 0, tokens.file, 1) == 0,
              cbs_uring_prep_fsync(ring, directory.rawValue, 0, tokens.directory, 0) == 0 else {
            let e = SystemError.current("io_uring_enter", "fallocate and fsync")
            cbs_uring_discard(ring)
            throw e
        }
        try submit("fallocate and fsync")
    }

    /// Starts unlinkat(`directory`, `name`, 0).
    public func unlink(in directory: FileDescriptor, _ name: String, token: UInt64) throws(SystemError) {
        let r = name.withCString { cbs_uring_prep_unlinkat(ring, directory.rawValue, $0, 0, token, 0) }
        if r != 0 { throw SystemError.current("io_uring_enter", "unlinkat \(name)") }
        try submit("unlinkat \(name)")
    }

    func submit(_ what: String) throws(SystemError) {
        let queued = cbs_uring_submit(ring)
        if queued < 0 { throw SystemError.current("io_uring_enter", what) }
        submitted &+= UInt64(queued)
    }

    /// The next completion, or nil when none waits. Clears the eventfd's readiness first, so a
    /// completion posted while reaping makes it readable again.
    public func reap() -> Completion? {
        _ = cbs_uring_clear_eventfd(ring)
        var token: UInt64 = 0
        var result: Int32 = 0
        guard cbs_uring_reap(ring, &token, &result) == 1 else { return nil }
        completed &+= 1
        if result < 0 { failed &+= 1 }
        return Completion(token: token, errno: result < 0 ? -result : nil, result: max(result, 0))
    }

    /// Blocks until a completion is there, then takes it (shutdown only, never on a loop turn);
    /// nil when nothing is in flight.
    public func waitForCompletion() -> Completion? {
        if let c = reap() { return c }
        guard inFlight > 0 else { return nil }
        guard cbs_uring_wait(ring) == 0 else { return nil }
        return reap()
    }
}
