/// Why a storage operation failed. Operating errors are values, handled and retried by the
/// journal writer; none is dropped silently.
public struct StorageError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: UInt8, Sendable, Hashable {
        /// ENOSPC / EDQUOT: free some space (delete old rides) or use a bigger card.
        case noSpace
        /// EIO and other device errors: the card may be failing.
        case io
        case notFound
        case permissionDenied
        /// Simulated power loss: nothing more reaches the medium until power returns.
        case powerLost
        case other
    }

    public var kind: Kind
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}

/// Where journal segments live: fixed-size, preallocated files identified by a number. The
/// journal calls these in a strict order (write, then sync; create and header before records),
/// so the same journal code runs over the simulated flash or a real directory.
public protocol SegmentStorage: AnyObject {
    /// Size every segment is preallocated to.
    var segmentBytes: Int { get }
    /// Segment numbers present, ascending.
    func list() throws(StorageError) -> [UInt32]
    /// Creates segment `id`, zero-filled and preallocated to `segmentBytes`, durably (the
    /// directory entry included). Fails if it exists.
    func create(_ id: UInt32) throws(StorageError)
    /// Writes `bytes` at `offset` of segment `id` (inside its preallocated size).
    func write(_ id: UInt32, at offset: Int, _ bytes: UnsafeRawBufferPointer) throws(StorageError)
    /// Makes the writes to segment `id` durable (fdatasync).
    func sync(_ id: UInt32) throws(StorageError)
    /// The whole segment.
    func read(_ id: UInt32) throws(StorageError) -> [UInt8]
    /// Zeros segment `id` from `offset` to its end, durably (after a torn write).
    func truncate(_ id: UInt32, at offset: Int) throws(StorageError)
    /// Deletes segment `id` (compaction of rides whose files are durable).
    func remove(_ id: UInt32) throws(StorageError)
    /// Renames segment `id` out of the journal (kept for inspection, never deleted); returns
    /// the new name.
    func setAside(_ id: UInt32) throws(StorageError) -> String
    /// Stores a copy of segment `id` beside the journal before it is repaired; returns its name.
    func copyAside(_ id: UInt32) throws(StorageError) -> String
    /// Bytes still free on the medium (nil if unknown).
    func availableBytes() -> Int?
}

public enum SegmentName {
    /// "seg-00000001.jnl"
    public static func name(_ id: UInt32) -> String {
        let s = String(id)
        return "seg-" + String(repeating: "0", count: max(0, 8 - s.count)) + s + ".jnl"
    }

    /// The segment number of a name made by `name(_:)`, else nil.
    public static func parse(_ name: String) -> UInt32? {
        guard name.hasPrefix("seg-"), name.hasSuffix(".jnl"), name.utf8.count == 16 else { return nil }
        return UInt32(name.dropFirst(4).dropLast(4))
    }
}

/// A background sync that finished (see `DeferredSyncStorage`).
public struct SyncCompletion: Sendable, Hashable {
    /// The token `beginSync`/`beginCreate` was given.
    public var token: UInt64
    /// nil: durable. Else why not (EIO: the card may have lost the data; the journal rewrites it).
    public var error: StorageError?

    public init(token: UInt64, error: StorageError? = nil) {
        self.token = token
        self.error = error
    }
}

/// Storage whose syncs finish later, so that the caller never waits for the card: `beginSync`
/// and `beginCreate` return at once and each operation's completion comes back, with its token,
/// from `nextCompletion()` (io_uring with an eventfd on the board, `DeferredSyncFlash` in tests).
/// Writes may go on while a sync is in flight; a completed sync makes durable at least what was
/// written before it began.
public protocol DeferredSyncStorage: SegmentStorage {
    /// Whether syncs are deferred now. False where the board fell back to blocking syncs (no
    /// io_uring): the journal then commits as a plain `SegmentStorage`.
    var defersSyncs: Bool { get }
    /// Starts making the writes to segment `id` so far durable (fdatasync).
    func beginSync(_ id: UInt32, token: UInt64) throws(StorageError)
    /// Creates segment `id` (zero-filled, preallocated; fails if it exists) and starts making it
    /// and its directory entry durable. Nothing may rely on it before the completion.
    func beginCreate(_ id: UInt32, token: UInt64) throws(StorageError)
    /// The next finished operation, or nil when none has finished since the last call.
    func nextCompletion() -> SyncCompletion?
    /// Blocks until an operation in flight finishes and returns it; nil if none is in flight.
    /// Only for shutdown: never on a run-loop turn.
    func waitForCompletion() -> SyncCompletion?
}
