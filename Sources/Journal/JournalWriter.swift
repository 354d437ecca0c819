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
        default: break
        }
    }

    func enqueue(_ item: Item) {
        guard pending.count < policy.pendingRecordsMax else {
            counters.recordsDropped &+= 1
            return
        }
        pending.append(item)
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
        if case .sample = record {
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
        if commit(at: now) { compact() }
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
        if let oldest = pending.first?.appendedAt, now.milliseconds(since: oldest) >= policy.commitIntervalMs - 1 {
            _ = commit(at: now)
        }
    }

    /// Writes and syncs everything pending. Returns whether all of it is durable.
    ///
    /// Frames are encoded one by one into a chunk for the current segment; a frame that does not
    /// fit ends the chunk (written and synced), the next segment starts and the frame is encoded
    /// again there (group records are coded against the earlier ones of their segment).
    @discardableResult
    public func commit(at now: MonotonicInstant) -> Bool {
        guard !pending.isEmpty else { return true }
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
