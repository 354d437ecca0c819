import RideModel

/// When the writer commits, and its bounds.
public struct CommitPolicy: Sendable, Hashable {
    /// No appended record waits longer than this before a group commit (the loss window).
    public var commitIntervalMs: Int64
    /// A 1 Hz sample record is committed at the tick that took it (so a power cut loses at most
    /// the second in progress), not a second later.
    public var commitSampleRecordsAtOnce: Bool
    public var checkpointIntervalMs: Int64
    /// After a failed write, wait this long before trying again.
    public var retryIntervalMs: Int64
    /// Records kept in memory while storage is failing; beyond this new ones are refused and
    /// counted (`recordsDropped`) and the condition is `.failing`.
    public var pendingRecordsMax: Int
    /// Free space under this is reported as `.low`.
    public var lowStorageBytes: Int
    /// Free space is read (a statvfs on the board) at most this often, at a commit, and after
    /// every new segment: the health is asked after every input, and free space moves slowly.
    public var freeSpaceCheckIntervalMs: Int64

    public init(commitIntervalMs: Int64 = 1_000, commitSampleRecordsAtOnce: Bool = true,
                checkpointIntervalMs: Int64 = 600_000, retryIntervalMs: Int64 = 1_000,
                pendingRecordsMax: Int = 65_536, lowStorageBytes: Int = 16 << 20,
                freeSpaceCheckIntervalMs: Int64 = 10_000) {
        self.commitIntervalMs = commitIntervalMs
        self.commitSampleRecordsAtOnce = commitSampleRecordsAtOnce
        self.checkpointIntervalMs = checkpointIntervalMs
        self.retryIntervalMs = retryIntervalMs
        self.pendingRecordsMax = pendingRecordsMax
        self.lowStorageBytes = lowStorageBytes
        self.freeSpaceCheckIntervalMs = freeSpaceCheckIntervalMs
    }
}

/// The storage's health as the journal sees it.
public enum JournalHealth: UInt8, Sendable, Hashable, CustomStringConvertible {
    case ok, low, full, failing
    public var description: String {
        switch self {
        case .ok: "ok"
        case .low: "low"
        case .full: "full"
        case .failing: "failing"
        }
    }
}

/// What the writer did, for the figures in docs/journal.md and the status screen.
public struct JournalCounters: Sendable, Hashable {
    public var recordsAppended: UInt64 = 0
    /// Ride records written and synced (the durable prefix of those appended).
    public var recordsDurable: UInt64 = 0
    public var framesWritten: UInt64 = 0
    public var commits: UInt64 = 0
    public var writes: UInt64 = 0
    public var bytesWritten: UInt64 = 0
    public var syncs: UInt64 = 0
    public var segmentsCreated: UInt64 = 0
    public var segmentsRemoved: UInt64 = 0
    public var checkpoints: UInt64 = 0
    public var failedCommits: UInt64 = 0
    public var recordsDropped: UInt64 = 0
    public var pendingHighWater = 0
    /// Deferred storage only: background syncs (and segment creations) begun, those that failed
    /// (EIO: the records are written again), and the longest wait from begin to completion.
    public var syncsBegun: UInt64 = 0
    public var syncFailures: UInt64 = 0
    public var syncWaitMaxMs: Int64 = 0
    /// Items appended while a sync was in flight (queued, written once it completed).
    public var recordsQueuedDuringSync: UInt64 = 0
    /// Completions whose token matched nothing in flight (ignored; a bug if ever non-zero).
    public var strayCompletions: UInt64 = 0
}

/// Appends ride records to the journal in group commits (pure: all I/O goes through
/// `SegmentStorage`, time comes in as values).
///
/// - State changes (`syncNow`) are written and synced at once.
/// - 1 Hz sample records are committed at the tick that took them; series values and metadata
///   ride along, or wait at most `commitIntervalMs`.
/// - Records are written as whole frames into the current preallocated segment; a frame that
///   does not fit starts the next segment (the old one is already synced).
/// - A failed write or sync keeps the records, reports the condition and retries later; a retry
///   rewrites the same bytes at the same place, so a half-done commit is harmless.
///
/// Over a `DeferredSyncStorage` (the board's io_uring) nothing waits for the card: a commit
/// writes its frames and begins a sync; at most one sync (or segment creation) is in flight, and
/// records committed meanwhile wait in memory (bounded by `pendingRecordsMax`) until it
/// completes, then are written and synced together. The durable
/// prefix (`counters.recordsDurable`, `awaitingConfirmation`) advances only on a completion
/// (`completed(_:at:)`); a failed completion rolls the write position back to the durable one
/// and writes the records again after `retryIntervalMs`.
public final class JournalWriter {
    public let storage: SegmentStorage
    public let policy: CommitPolicy
    public private(set) var counters = JournalCounters()
    public private(set) var lastError: StorageError?

    struct Item {
        enum Kind { case record(RideRecord), checkpoint(Checkpoint), durable(RideID) }
        var kind: Kind
        var ride: RideID?
        var appendedAt: MonotonicInstant
    }

    var pending: [Item] = []
    var pendingHasSampleRecord = false
    var retryAt: MonotonicInstant?

    // Deferred syncs (nil: every commit waits for its sync, as over the simulated flash).
    let deferred: DeferredSyncStorage?
    struct InFlight {
        enum Kind: Equatable { case create, header, data }
        var kind: Kind
        var token: UInt64
        var segment: UInt32
        /// pending[0..<items] (and `frames` frames) become durable with it.
        var items: Int
        var frames: Int
        var endOffset: Int
        var begunAt: MonotonicInstant
    }
    var inFlight: InFlight?
    /// Encoder state at the end of what `inFlight` covers, and before the write being made.
    var inFlightState = GroupDecoderState()
    var writeStartState = GroupDecoderState()
    /// pending[0..<writtenItems] are written (in `writtenFrames` frames) but not yet durable.
    var writtenItems = 0
    var writtenFrames = 0
    /// The durable end of the current segment (`offset` is where the next write goes).
    var durableOffset = 0
    /// The next frame does not fit the current segment: a new one follows once it is durable.
    var segmentFull = false
    /// A commit was asked for and not everything pending is written yet.
    var commitRequested = false
    /// A ride's file became durable while records were in flight: compact once they are durable.
    var compactWanted = false
    var nextToken: UInt64 = 1
    /// Items ever queued; those before `confirmSerial` must be durable before a confirmation.
    var enqueuedSerial: UInt64 = 0
    var confirmSerial: UInt64 = 0

    // Position.
    public private(set) var currentSegment: UInt32?
    /// 0 while the current segment was created but has no header yet.
    public private(set) var offset = 0
    public private(set) var nextSequence: UInt32
    var nextSegmentID: UInt32
    /// Segments in the journal, ascending, with the rides whose records they hold.
    var segmentRides: [(id: UInt32, rides: Set<RideID>)] = []
    var durableRides: Set<RideID> = []

    // The ride being appended and its running counts (for checkpoints).
    public private(set) var currentRide: RideID?
    var counts = Checkpoint(rideID: RideID(high: 0, low: 0), instant: .zero)
    var lastCheckpointAt: MonotonicInstant?

    var encoder = RecordEncoder()
    /// Snapshots of the encoder's state (the last durable one, and one before each frame), kept
    /// in their own buffers so that taking them allocates nothing.
    var durableState = GroupDecoderState()
    var savedState = GroupDecoderState()
    var out: [UInt8] = []
    var run: [RideRecord] = []
    /// The storage's free bytes at `freeBytesReadAt` (nil: unknown), see `freeSpaceCheckIntervalMs`.
    var freeBytes: Int?
    var freeBytesReadAt: MonotonicInstant?

    /// Continues the journal after `scan` (run it with `repair: true` first).
    public init(storage: SegmentStorage, after scan: JournalScan, rides: [JournaledRide]? = nil, policy: CommitPolicy = CommitPolicy()) {
        precondition(storage.segmentBytes >= JournalFormat.segmentBytesMin)
        self.storage = storage
        self.policy = policy
        nextSequence = scan.nextSequence
        currentSegment = scan.tailSegment
        offset = scan.tailOffset
        nextSegmentID = (scan.segments.last ?? 0) &+ 1
        for name in scan.setAside.map(\.name) {
            if let id = SegmentName.parse(String(name.prefix(16))), id >= nextSegmentID { nextSegmentID = id &+ 1 }
        }
        for id in scan.emptySegmentsRemoved where id >= nextSegmentID { nextSegmentID = id &+ 1 }
        var bySegment: [UInt32: Set<RideID>] = [:]
        for id in scan.segments { bySegment[id] = [] }
        let rides = rides ?? scan.rides(withRecords: false).rides
        for r in rides {
            for s in r.segments { bySegment[s, default: []].insert(r.rideID) }
            if r.fileDurable || !r.started && r.rideID != rides.last?.rideID { durableRides.insert(r.rideID) }
        }
        segmentRides = bySegment.keys.sorted().map { ($0, bySegment[$0]!) }
        if let last = rides.last, last.isUnfinished {
            currentRide = last.rideID
            counts = last.counts
        }
        encoder.state = scan.tailState
        durableState.copy(from: encoder.state)
        durableOffset = offset
        if let d = storage as? DeferredSyncStorage, d.defersSyncs { deferred = d } else { deferred = nil }
        out.reserveCapacity(16 * 1024)
        run.reserveCapacity(JournalFormat.groupEntriesMax)
        pending.reserveCapacity(1024)
        freeBytes = storage.availableBytes()
    }

    public var pendingCount: Int { pending.count }

    /// The records of `ride` appended but not yet durable, in order (a ride's file is written
    /// from its durable records and these, so a failing card loses nothing recorded).
    public func pendingRecords(of ride: RideID) -> [RideRecord] {
        var out: [RideRecord] = []
        for item in pending where item.ride == ride {
            if case .record(let r) = item.kind { out.append(r) }
        }
        return out
    }

    /// Forgets what waits to be written for `ride` (a journal that can never write, whose ride
    /// file holds all of it: memory is not kept for nothing).
    public func discardPending(of ride: RideID) {
        pending.removeAll { $0.ride == ride || { if case .durable(let id) = $0.kind { id == ride } else { false } }($0) }
        pendingHasSampleRecord = pending.contains { if case .record(.sample) = $0.kind { true } else { false } }
    }
    /// Appended records not yet durable are older than this (nil if none wait).
    public var oldestPendingInstant: MonotonicInstant? { pending.first?.appendedAt }
    /// Whether syncs run in the background (the board's io_uring) rather than in `commit`.
    public var defersSyncs: Bool { deferred != nil }
    /// A sync or segment creation is in flight.
    public var syncInFlight: Bool { inFlight != nil }
    /// Records (and bookkeeping items) queued since the journal was opened, and how many of them
    /// are durable: `durableSerial` reaching a serial means that item is on the card.
    public var enqueuedCount: UInt64 { enqueuedSerial }
    public var durableSerial: UInt64 { enqueuedSerial - UInt64(pending.count) }
    /// A state change was committed (`commit(at:confirm: true)`) and its records are not yet
    /// durable: the screen must not confirm it yet. False while storage is failing (the rider
    /// is told STORAGE ERROR/FULL instead; the ride goes on).
    public var awaitingConfirmation: Bool { durableSerial < confirmSerial && lastError == nil }
    public var segmentCount: Int { segmentRides.count }

    public var health: JournalHealth {
        if let e = lastError {
            return e.kind == .noSpace ? .full : .failing
        }
        if counters.recordsDropped > 0 && pending.count >= policy.pendingRecordsMax { return .failing }
        if let free = freeBytes, free < policy.lowStorageBytes { return .low }
        return .ok
    }

    /// Reads the storage's free space if it was never read, `force` is set, or the last reading
    /// is older than `policy.freeSpaceCheckIntervalMs`.
    func refreshFreeBytes(at now: MonotonicInstant, force: Bool = false) {
        if !force, let last = freeBytesReadAt, now.milliseconds(since: last) < policy.freeSpaceCheckIntervalMs { return }
        freeBytes = storage.availableBytes()
        freeBytesReadAt = now
    }

    // MARK: Appending

    func count(_ r: RideRecord) {
        counts.recordCount += 1
        switch r {
        case .event(let e):
            counts.eventCount += 1
            if e.kind == .start || e.kind == .lap { counts.lapCount += 1 }
            counts.instant = e.instant
        case .sample(let s): counts.sampleCount += 1; counts.instant = s.instant
        case .series: counts.seriesCount += 1
        case .finished(_, let at): counts.instant = at
        case .elapsed(let at): counts.instant = at
        default: break
        }
    }

    func enqueue(_ item: Item) {
        guard pending.count < policy.pendingRecordsMax else {
            counters.recordsDropped &+= 1
            return
        }
        pending.append(item)
        enqueuedSerial &+= 1
        if inFlight != nil { counters.recordsQueuedDuringSync &+= 1 }
        if pending.count > counters.pendingHighWater { counters.pendingHighWater = pending.count }
    }

    /// Buffers a ride record (in order). Records of a ride follow its header.
    public func append(_ record: RideRecord, at now: MonotonicInstant) {
        if case .header(let h) = record {
            currentRide = h.rideID
            counts = Checkpoint(rideID: h.rideID, instant: h.anchor.monotonic)
            lastCheckpointAt = now
        }
        count(record)
        counters.recordsAppended &+= 1
        enqueue(Item(kind: .record(record), ride: currentRide, appendedAt: now))
        if record.isRecordInstant {
            pendingHasSampleRecord = true
            if let last = lastCheckpointAt, now.milliseconds(since: last) >= policy.checkpointIntervalMs, currentRide != nil {
                enqueue(Item(kind: .checkpoint(counts), ride: currentRide, appendedAt: now))
                counters.checkpoints &+= 1
                lastCheckpointAt = now
            }
        }
        if case .finished = record { lastCheckpointAt = nil }
    }

    /// Records that `id`'s file is durable (or that the ride holds nothing to keep): commits the
    /// mark, then removes the segments that hold only such rides.
    public func markRideFileDurable(_ id: RideID, at now: MonotonicInstant) {
        enqueue(Item(kind: .durable(id), ride: nil, appendedAt: now))
        durableRides.insert(id)
        if commit(at: now) { compact() } else if deferred != nil { compactWanted = true }
    }

    // MARK: Committing

    /// Group commit when due: a 1 Hz sample record waits, anything waits `commitIntervalMs`, or a
    /// failed commit's retry time has come.
    public func tick(at now: MonotonicInstant) {
        guard !pending.isEmpty else { return }
        if let r = retryAt {
            if now >= r { _ = commit(at: now) }
            return
        }
        if policy.commitSampleRecordsAtOnce && pendingHasSampleRecord { _ = commit(at: now); return }
        let firstUnwritten = deferred == nil ? 0 : writtenItems
        if firstUnwritten < pending.count, now.milliseconds(since: pending[firstUnwritten].appendedAt) >= policy.commitIntervalMs - 1 {
            _ = commit(at: now)
        }
    }

    /// Commits everything appended so far, as `commit(at:)`, and marks it as a state change the
    /// screen confirms only once it is durable (`awaitingConfirmation`).
    @discardableResult
    public func commit(at now: MonotonicInstant, confirm: Bool) -> Bool {
        if confirm { confirmSerial = enqueuedSerial }
        return commit(at: now)
    }

    /// Writes and syncs everything pending. Returns whether all of it is durable.
    ///
    /// Frames are encoded one by one into a chunk for the current segment; a frame that does not
    /// fit ends the chunk (written and synced), the next segment starts and the frame is encoded
    /// again there (group records are coded against the earlier ones of their segment).
    @discardableResult
    public func commit(at now: MonotonicInstant) -> Bool {
        guard !pending.isEmpty else { return true }
        if deferred != nil {
            counters.commits &+= 1
            retryAt = nil
            commitRequested = true
            pump(at: now)
            return pending.isEmpty
        }
        counters.commits &+= 1
        out.removeAll(keepingCapacity: true)
        durableState.copy(from: encoder.state)
        var next = 0          // next pending item to encode
        var chunkItems = 0
        var chunkFrames = 0
        var rotateAfterFlush = false
        do throws(StorageError) {
            while next < pending.count || !out.isEmpty {
                if currentSegment == nil {
                    precondition(out.isEmpty)
                    try startSegment(firstSequence: nextSequence)
                }
                let seg = currentSegment!
                if offset == 0 {
                    precondition(out.isEmpty)
                    try writeHeader(seg, firstSequence: nextSequence)
                    encoder.resetStreams()
                    durableState.copy(from: encoder.state)
                }
                if next < pending.count {
                    savedState.copy(from: encoder.state)
                    let start = out.count
                    let n = encodeFrame(at: next, sequence: nextSequence &+ UInt32(chunkFrames))
                    if offset + out.count <= storage.segmentBytes {
                        next += n
                        chunkItems += n
                        chunkFrames += 1
                        continue
                    }
                    out.removeSubrange(start...)
                    encoder.state.copy(from: savedState)
                    if out.isEmpty {
                        precondition(offset > JournalFormat.segmentHeaderBytes, "a record larger than an empty segment")
                        currentSegment = nil // full: the next frame starts a new segment
                        continue
                    }
                    rotateAfterFlush = true
                }
                try Self.write(storage, seg, at: offset, out, 0..<out.count)
                counters.writes &+= 1
                counters.bytesWritten &+= UInt64(out.count)
                try storage.sync(seg)
                counters.syncs &+= 1
                offset += out.count
                // Note the chunk's rides in its segment without a temporary set (no allocation
                // per commit: a ride already noted is found, not inserted again).
                let segIndex = segmentRides.lastIndex(where: { $0.id == seg })
                for k in 0..<chunkItems {
                    if let r = pending[k].ride, let i = segIndex, !segmentRides[i].rides.contains(r) { segmentRides[i].rides.insert(r) }
                    if case .record = pending[k].kind { counters.recordsDurable &+= 1 }
                }
                counters.framesWritten &+= UInt64(chunkFrames)
                nextSequence &+= UInt32(chunkFrames)
                pending.removeFirst(chunkItems)
                next -= chunkItems
                chunkItems = 0
                chunkFrames = 0
                out.removeAll(keepingCapacity: true)
                durableState.copy(from: encoder.state)
                if rotateAfterFlush {
                    currentSegment = nil
                    rotateAfterFlush = false
                }
            }
        } catch {
            encoder.state.copy(from: durableState)
            pendingHasSampleRecord = pending.contains { if case .record(.sample) = $0.kind { true } else { false } }
            lastError = error
            counters.failedCommits &+= 1
            retryAt = now.advanced(byMs: policy.retryIntervalMs)
            refreshFreeBytes(at: now)
            return false
        }
        pendingHasSampleRecord = false
        lastError = nil
        retryAt = nil
        refreshFreeBytes(at: now)
        return true
    }

    /// Encodes one frame (a record, or a run of samples) from `pending[index...]` onto `out`;
    /// returns how many items it took.
    func encodeFrame(at index: Int, sequence: UInt32) -> Int {
        switch pending[index].kind {
        case .record(let r) where RecordEncoder.isGroupable(r):
            run.removeAll(keepingCapacity: true)
            let ride = pending[index].ride
            var j = index
            while j < pending.count, run.count < JournalFormat.groupEntriesMax, pending[j].ride == ride,
                  case .record(let x) = pending[j].kind, RecordEncoder.isGroupable(x) {
                run.append(x)
                j += 1
            }
            let (type, payload) = encoder.encodeGroup(run[...])
            FrameCodec.append(type: type, sequence: sequence, payload: payload, to: &out)
            return j - index
        case .record(let r):
            let (type, payload) = encoder.encode(r)
            FrameCodec.append(type: type, sequence: sequence, payload: payload, to: &out)
        case .checkpoint(let c):
            FrameCodec.append(type: .checkpoint, sequence: sequence, payload: encoder.encode(c), to: &out)
        case .durable(let id):
            FrameCodec.append(type: .rideFileDurable, sequence: sequence, payload: encoder.encodeRideFileDurable(id), to: &out)
        }
        return 1
    }

    static func write(_ storage: SegmentStorage, _ id: UInt32, at offset: Int, _ bytes: [UInt8], _ range: Range<Int>) throws(StorageError) {
        let r: Result<Void, StorageError> = bytes.withUnsafeBytes { b in
            do throws(StorageError) {
                try storage.write(id, at: offset, UnsafeRawBufferPointer(rebasing: b[range]))
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try r.get()
    }

    func startSegment(firstSequence: UInt32) throws(StorageError) {
        let id = nextSegmentID
        try storage.create(id)
        counters.segmentsCreated &+= 1
        nextSegmentID &+= 1
        currentSegment = id
        offset = 0
        segmentRides.append((id, []))
        freeBytesReadAt = nil // a segment's worth less: read again at the end of this commit
    }

    func writeHeader(_ id: UInt32, firstSequence: UInt32) throws(StorageError) {
        let h = SegmentHeader(segmentID: id, firstSequence: firstSequence, segmentBytes: UInt32(storage.segmentBytes)).encoded()
        try Self.write(storage, id, at: 0, h, 0..<h.count)
        counters.writes &+= 1
        counters.bytesWritten &+= UInt64(h.count)
        try storage.sync(id)
        counters.syncs &+= 1
        offset = JournalFormat.segmentHeaderBytes
    }

    // MARK: Deferred syncs

    /// Steps taken at most per `pump` (write, then begin the next operation; a header and its
    /// first records take two).
    static let pumpStepsMax = 4
    /// Completions waited for at most by `commitAndWait` (shutdown).
    public static let shutdownWaitsMax = 64

    /// Moves the deferred commit on as far as it can without waiting: writes what a commit asked
    /// for into the current segment, then begins the next operation if none is in flight (the
    /// sync of what is written, a new segment, or its header).
    func pump(at now: MonotonicInstant) {
        guard let storage = deferred, retryAt == nil else { return }
        for _ in 0..<Self.pumpStepsMax {
            // Nothing is written while a sync is in flight: on a file system with stable pages
            // (ext4 with journal checksums, the default) a write into the page being written
            // back waits for the card, on the loop. Records queue in `pending` meanwhile.
            guard inFlight == nil else { return }
            do throws(StorageError) {
                if commitRequested, currentSegment != nil, offset > 0, !segmentFull, writtenItems < pending.count {
                    try writeAvailable()
                }
                if writtenItems > 0 {
                    try begin(.data, storage, at: now)
                    return
                }
                guard commitRequested, !pending.isEmpty else { return }
                if currentSegment == nil || segmentFull {
                    segmentFull = false
                    let id = nextSegmentID
                    let token = takeToken()
                    try storage.beginCreate(id, token: token)
                    counters.segmentsCreated &+= 1
                    counters.syncsBegun &+= 1
                    nextSegmentID &+= 1
                    currentSegment = id
                    offset = 0
                    durableOffset = 0
                    segmentRides.append((id, []))
                    freeBytesReadAt = nil
                    inFlight = InFlight(kind: .create, token: token, segment: id, items: 0, frames: 0, endOffset: 0, begunAt: now)
                    return
                }
                if offset == 0 {
                    let seg = currentSegment!
                    let h = SegmentHeader(segmentID: seg, firstSequence: nextSequence, segmentBytes: UInt32(storage.segmentBytes)).encoded()
                    try Self.write(storage, seg, at: 0, h, 0..<h.count)
                    counters.writes &+= 1
                    counters.bytesWritten &+= UInt64(h.count)
                    offset = JournalFormat.segmentHeaderBytes
                    encoder.resetStreams()
                    try begin(.header, storage, at: now)
                    return // its records are written once it is durable
                }
                return
            } catch {
                fail(error, at: now)
                return
            }
        }
    }

    func takeToken() -> UInt64 {
        defer { nextToken &+= 1 }
        return nextToken
    }

    /// Begins the sync of everything written to the current segment.
    func begin(_ kind: InFlight.Kind, _ storage: DeferredSyncStorage, at now: MonotonicInstant) throws(StorageError) {
        let seg = currentSegment!
        let token = takeToken()
        try storage.beginSync(seg, token: token)
        counters.syncsBegun &+= 1
        inFlightState.copy(from: encoder.state)
        inFlight = InFlight(kind: kind, token: token, segment: seg, items: writtenItems, frames: writtenFrames, endOffset: offset, begunAt: now)
    }

    /// Encodes and writes the pending items not yet written, as many whole frames as fit the
    /// current segment (one write); a frame that does not fit marks the segment full.
    func writeAvailable() throws(StorageError) {
        let seg = currentSegment!
        out.removeAll(keepingCapacity: true)
        writeStartState.copy(from: encoder.state)
        var next = writtenItems
        var frames = 0
        while next < pending.count {
            savedState.copy(from: encoder.state)
            let start = out.count
            let n = encodeFrame(at: next, sequence: nextSequence &+ UInt32(writtenFrames + frames))
            if offset + out.count <= storage.segmentBytes {
                next += n
                frames += 1
                continue
            }
            out.removeSubrange(start...)
            encoder.state.copy(from: savedState)
            precondition(!(out.isEmpty && offset <= JournalFormat.segmentHeaderBytes), "a record larger than an empty segment")
            segmentFull = true
            break
        }
        guard !out.isEmpty else { return }
        do throws(StorageError) {
            try Self.write(storage, seg, at: offset, out, 0..<out.count)
        } catch {
            encoder.state.copy(from: writeStartState)
            out.removeAll(keepingCapacity: true)
            throw error
        }
        counters.writes &+= 1
        counters.bytesWritten &+= UInt64(out.count)
        offset += out.count
        writtenItems = next
        writtenFrames += frames
        out.removeAll(keepingCapacity: true)
        if writtenItems == pending.count {
            commitRequested = false
            pendingHasSampleRecord = false
        }
    }

    /// A deferred operation finished: on success the durable prefix advances (and the next
    /// operation begins); on failure the records are kept and written again later.
    public func completed(_ c: SyncCompletion, at now: MonotonicInstant) {
        guard let op = inFlight, op.token == c.token else {
            counters.strayCompletions &+= 1
            return
        }
        inFlight = nil
        counters.syncWaitMaxMs = max(counters.syncWaitMaxMs, now.milliseconds(since: op.begunAt))
        if let e = c.error {
            counters.syncFailures &+= 1
            if op.kind == .create {
                // Give the half-made segment up (a later scan drops an empty one anyway).
                try? deferred?.remove(op.segment)
                if let i = segmentRides.lastIndex(where: { $0.id == op.segment }) { segmentRides.remove(at: i) }
                currentSegment = nil
                offset = 0
                durableOffset = 0
                writtenItems = 0
                writtenFrames = 0
            }
            fail(e, at: now)
            return
        }
        counters.syncs &+= 1
        switch op.kind {
        case .create:
            break
        case .header, .data:
            durableOffset = op.endOffset
            durableState.copy(from: inFlightState)
            if op.items > 0 || op.frames > 0 {
                let segIndex = segmentRides.lastIndex(where: { $0.id == op.segment })
                for k in 0..<op.items {
                    if let r = pending[k].ride, let i = segIndex, !segmentRides[i].rides.contains(r) { segmentRides[i].rides.insert(r) }
                    if case .record = pending[k].kind { counters.recordsDurable &+= 1 }
                }
                counters.framesWritten &+= UInt64(op.frames)
                nextSequence &+= UInt32(op.frames)
                pending.removeFirst(op.items)
                writtenItems -= op.items
                writtenFrames -= op.frames
            }
        }
        lastError = nil
        pump(at: now)
        if pending.isEmpty, compactWanted {
            compactWanted = false
            compact()
        }
        refreshFreeBytes(at: now)
    }

    /// Takes the completions the storage has (the board calls this when its eventfd fires).
    /// Returns how many it took; at most `completionsPerPollMax`.
    @discardableResult
    public func pollCompletions(at now: MonotonicInstant) -> Int {
        guard let d = deferred else { return 0 }
        var n = 0
        while n < Self.completionsPerPollMax, let c = d.nextCompletion() {
            completed(c, at: now)
            n += 1
        }
        return n
    }

    public static let completionsPerPollMax = 16

    /// A write or a completion failed: keep the records, roll the write position back to what is
    /// durable (or in flight), report the condition and try again after `retryIntervalMs`.
    func fail(_ error: StorageError, at now: MonotonicInstant) {
        if let op = inFlight {
            offset = op.endOffset
            writtenItems = op.items
            writtenFrames = op.frames
            encoder.state.copy(from: inFlightState)
        } else {
            offset = durableOffset
            writtenItems = 0
            writtenFrames = 0
            encoder.state.copy(from: durableState)
        }
        segmentFull = false
        commitRequested = true
        pendingHasSampleRecord = pending.contains { if case .record(.sample) = $0.kind { true } else { false } }
        lastError = error
        counters.failedCommits &+= 1
        retryAt = now.advanced(byMs: policy.retryIntervalMs)
        refreshFreeBytes(at: now)
    }

    /// Commits and waits until everything is durable or a sync fails (shutdown: SIGTERM, a
    /// failed loop). Over storage that does not defer syncs this is `commit(at:)`.
    @discardableResult
    public func commitAndWait(at now: MonotonicInstant) -> Bool {
        guard let d = deferred else { return commit(at: now) }
        if !pending.isEmpty {
            retryAt = nil
            commitRequested = true
        }
        for _ in 0..<Self.shutdownWaitsMax {
            pump(at: now)
            guard inFlight != nil, let c = d.waitForCompletion() else { break }
            completed(c, at: now)
            if lastError != nil { break }
        }
        return pending.isEmpty
    }

    // MARK: Compaction

    /// Removes segments from the front of the journal while every ride they hold has a durable
    /// file (and nothing is waiting to be written). The segment being written is removed too
    /// when it holds only such rides; the next commit starts a new one.
    public func compact() {
        guard pending.isEmpty else { return }
        while let first = segmentRides.first {
            guard first.rides.isSubset(of: durableRides) else { return }
            if first.id == currentSegment, let ride = currentRide, !durableRides.contains(ride) { return }
            do {
                try storage.remove(first.id)
            } catch {
                lastError = error
                return
            }
            counters.segmentsRemoved &+= 1
            freeBytes = storage.availableBytes()
            segmentRides.removeFirst()
            if first.id == currentSegment { currentSegment = nil; offset = 0 }
        }
    }
}
