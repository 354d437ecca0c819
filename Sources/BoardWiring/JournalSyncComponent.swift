import BoardIO
import Control
import Device
import DeviceAdapters
import Journal

/// The journal's background syncs on the run loop: watches the io_uring completion eventfd of
/// the board's journal storage (`BoardSegmentStorage`) and hands each wake-up to the runtime
/// (`DeviceRuntime.syncProgress`: the durable prefix advances, a held state change appears on
/// screen, a failed sync becomes the storage condition). Without a ring (the simulated flash in
/// tests, or io_uring refused) it has nothing to watch: syncs then happen inside the commit and
/// `state` says why.
public final class JournalSyncComponent: BoardComponent {
    let journal: FlashJournal
    weak var board: BoardWiring?
    var registration: IORegistration?
    /// Wake-ups of the completion eventfd handled.
    public private(set) var wakeups: UInt64 = 0
    public private(set) var state: String
    public var hardwareErrors: UInt64 { 0 }

    public init(journal: FlashJournal) {
        self.journal = journal
        if let s = journal.storage as? BoardSegmentStorage {
            state = s.ring == nil ? "blocking (\(s.fallbackReason ?? "no ring"))"
                : s.fileOperationsBlock ? "ok (io_uring; segment creation and removal block: the kernel lacks io_uring openat/fallocate/unlinkat)"
                : "ok (io_uring)"
        } else {
            state = "in-commit (\(journal.writer.defersSyncs ? "deferred" : "blocking") storage)"
        }
    }

    public func start(_ board: BoardWiring) throws {
        self.board = board
        guard let s = journal.storage as? BoardSegmentStorage else { return }
        // A failure closes every descriptor the journal holds on the card (so a card unmounted,
        // checked and mounted again is reached by path). Said at the first failure after the
        // journal last worked; the retries' closes (each retry may open, write and fail its
        // sync again) are only counted (`descriptors_released`).
        s.onDescriptorsReleased = { [weak board, unowned journal] n, error in
            guard journal.writer.lastError == nil else { return }
            board?.log.log(.warning, "journal: \(error); closed the \(n) file(s) it held on the card, the next try opens them again")
        }
        guard let ring = s.ring else {
            board.log.log(.warning, "journal: \(s.fallbackReason ?? "io_uring unavailable"); buttons may wait for a slow card")
            return
        }
        registration = try board.loop.register(ring.completionDescriptor, "journal.sync", interest: .read) { [unowned self] _ in
            self.completionsArrived()
        }
    }

    func completionsArrived() {
        guard let board else { return }
        wakeups &+= 1
        board.runtime.syncProgress(at: board.now)
        board.afterInputs()
    }

    public func writeStatus(into w: inout JSONWriter) {
        let c = journal.writer.counters
        w.beginObject("journal_sync")
        w.string("mode", state)
        w.bool("in_flight", journal.writer.syncInFlight)
        w.bool("confirmation_waiting", journal.awaitingDurable)
        w.int("syncs_begun", Int64(clamping: c.syncsBegun))
        w.int("sync_failures", Int64(clamping: c.syncFailures))
        w.int("sync_wait_max_ms", c.syncWaitMaxMs)
        w.int("records_queued_during_sync", Int64(clamping: c.recordsQueuedDuringSync))
        w.int("wakeups", Int64(clamping: wakeups))
        if let s = journal.storage as? BoardSegmentStorage {
            // What the journal still costs a loop turn: a write, a submission, a segment's creation
            // (submitting its openat and its fallocate/fsync chain), a compaction's removal.
            w.int("slowest_write_us", s.directory.slowestWriteNs / 1000)
            // Writes through the ring (linked before their sync), in the loop, and failed.
            w.bool("writes_through_ring", s.writesThroughRing)
            w.int("ring_writes", Int64(clamping: s.ringWrites))
            w.int("loop_writes", Int64(clamping: s.loopWrites))
            w.int("failed_writes", Int64(clamping: s.failedWrites))
            w.int("slowest_write_offset", Int64(s.slowestWriteOffset))
            w.int("slowest_submit_us", s.slowestSubmitNs / 1000)
            w.int("slowest_create_us", s.slowestCreateNs / 1000)
            w.int("slowest_remove_us", s.slowestRemoveNs / 1000)
            w.int("removals_begun", Int64(clamping: s.removalsBegun))
            w.int("removal_failures", Int64(clamping: s.removalFailures))
            if let e = s.lastRemovalError { w.string("last_removal_error", e) }
            w.int("slowest_blocking_sync_us", s.directory.slowestSyncNs / 1000)
            // Descriptors held on the card now, and those closed after failures (issue 17).
            w.int("descriptors_held", Int64(s.directory.descriptorsHeld))
            w.int("descriptors_awaiting_completion", Int64(s.directory.descriptorsAwaitingCompletion))
            w.int("descriptors_released", Int64(clamping: s.directory.descriptorsReleased))
        }
        w.endObject()
    }

    public func close() {
        if let r = registration, let board { board.loop.deregister(r) }
        registration = nil
    }
}
