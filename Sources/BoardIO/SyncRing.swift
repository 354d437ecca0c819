import CBoardShims
import Glibc

/// fsync/fdatasync that do not block the caller: submitted to an io_uring (IORING_OP_FSYNC,
/// IORING_FSYNC_DATASYNC for fdatasync), run by the kernel's own worker, and completed later:
/// the ring's eventfd (`completionDescriptor`) becomes readable, and `reap()` hands back each
/// completion with the token it was submitted with. Single-threaded, like the run loop.
///
/// Where io_uring is unavailable (an old kernel: ENOSYS; a seccomp filter or
/// `kernel.io_uring_disabled`: EPERM) `open` throws, and the caller falls back to plain,
/// blocking syncs (BoardJournal logs and counts it).
public final class SyncRing {
    let ring: OpaquePointer
    /// Submissions the ring holds at most (the journal keeps one or two in flight).
    public static let entriesMax: UInt32 = 8

    public private(set) var submitted: UInt64 = 0
    public private(set) var completed: UInt64 = 0
    public private(set) var failed: UInt64 = 0

    public struct Completion: Sendable, Hashable {
        public var token: UInt64
        /// nil when the sync succeeded, else the errno it failed with (EIO: the data may be lost).
        public var errno: Int32?
    }

    public init() throws(SystemError) {
        var error: Int32 = 0
        guard let r = cbs_uring_open(Self.entriesMax, &error) else {
            throw SystemError(errno: error, call: "io_uring_setup", context: "the journal's syncs will block the loop")
        }
        ring = r
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

    /// The next completion, or nil when none waits. Clears the eventfd's readiness first, so a
    /// completion posted while reaping makes it readable again.
    public func reap() -> Completion? {
        _ = cbs_uring_clear_eventfd(ring)
        var token: UInt64 = 0
        var result: Int32 = 0
        guard cbs_uring_reap(ring, &token, &result) == 1 else { return nil }
        completed &+= 1
        if result < 0 { failed &+= 1 }
        return Completion(token: token, errno: result < 0 ? -result : nil)
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
