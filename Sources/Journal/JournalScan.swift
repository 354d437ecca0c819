import RideModel

/// One verified record found by a scan: where it is and its type. Its contents are decoded on
/// demand (`JournalScan.entry(_:)`, `forEachRecord`), so a scan of a 10-hour ride does not hold
/// hundreds of thousands of decoded values.
public struct ScannedRecord: Sendable, Hashable {
    public var sequence: UInt32
    public var segmentID: UInt32
    public var offset: Int
    public var type: RecordType
    var version: UInt16
    var payloadStart: Int
    var payloadLength: Int
    /// For a group record: how many 1 Hz samples and series values it holds.
    public var samples: UInt16 = 0
    public var series: UInt16 = 0
}

/// The result of reading the journal from its first segment to its first bad record.
public struct JournalScan: Sendable {
    public var records: [ScannedRecord] = []
    /// The bytes of the segments read (records are decoded from them on demand).
    var data: [UInt32: [UInt8]] = [:]
    /// Segments in the journal after the scan, ascending.
    public var segments: [UInt32] = []
    /// Where the writer continues: the last segment and the offset after its last good record.
    public var tailSegment: UInt32?
    public var tailOffset = 0
    /// The group-coding state after the last good record of the tail segment (the writer goes
    /// on coding against it).
    public var tailState = GroupDecoderState()
    public var nextSequence: UInt32 = 1
    /// Where the journal was (or, read-only, would be) cut: a torn or corrupt record.
    public var truncation: (segment: UInt32, offset: Int, reason: String)?
    /// Segments renamed out of the journal (or that would be), with why.
    public var setAside: [(name: String, reason: String)] = []
    /// Segments that held no data at all (created, never written) and were removed.
    public var emptySegmentsRemoved: [UInt32] = []
    /// Frames whose checksum verified but whose payload did not decode.
    public var undecodable = 0
    /// Bytes of all segments read.
    public var bytesRead = 0
    /// Operations on storage that failed during the scan.
    public var storageErrors: [StorageError] = []

    /// A sentence per repair, for logs and `journal inspect`.
    public var repairs: [String] {
        var out: [String] = []
        if let t = truncation { out.append("\(SegmentName.name(t.segment)) cut at byte \(t.offset): \(t.reason)") }
        for a in setAside { out.append("kept aside as \(a.name): \(a.reason)") }
        for e in emptySegmentsRemoved { out.append("\(SegmentName.name(e)) held no data and was removed") }
        for e in storageErrors { out.append("storage error during recovery: \(e)") }
        return out
    }

    /// Reads every segment, verifies every record, stops at the first bad one. With `repair`,
    /// cuts the journal there (zeroing the rest of that segment), sets aside segments that cannot
    /// be understood or that follow a damaged point (a damaged segment that is not the last is
    /// first copied aside), so that appending can continue safely. Never throws: storage errors
    /// are recorded and the scan keeps what it could read.
    /// Whether `buf[from...]` holds only zeros: a segment's preallocated tail (most of a 1 MiB
    /// segment). Eight bytes at a time without a closure per byte: a per-byte `allSatisfy` made
    /// the scan at the end of every ride cost ~90 ms in a debug build (seconds under emulation),
    /// a single loop turn on the board (issue 17 item 6).
    public static func isZero(_ buf: UnsafeRawBufferPointer, from: Int) -> Bool {
        var i = from
        let n = buf.count
        while i < n && i & 7 != 0 {
            if buf[i] != 0 { return false }
            i += 1
        }
        guard let base = buf.baseAddress else { return true }
        while i + 64 <= n {
            let p = base + i
            var acc = p.loadUnaligned(as: UInt64.self) | p.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
            acc |= p.loadUnaligned(fromByteOffset: 16, as: UInt64.self) | p.loadUnaligned(fromByteOffset: 24, as: UInt64.self)
            acc |= p.loadUnaligned(fromByteOffset: 32, as: UInt64.self) | p.loadUnaligned(fromByteOffset: 40, as: UInt64.self)
            acc |= p.loadUnaligned(fromByteOffset: 48, as: UInt64.self) | p.loadUnaligned(fromByteOffset: 56, as: UInt64.self)
            if acc != 0 { return false }
            i += 64
        }
        while i < n {
            if buf[i] != 0 { return false }
            i += 1
        }
        return true
    }

    public static func scan(_ storage: SegmentStorage, repair: Bool) -> JournalScan {
        var s = JournalScan()
        let ids: [UInt32]
        do { ids = try storage.list() } catch { s.storageErrors.append(error); return s }
        var expected: UInt32?
        var damaged = false
        var groupState = GroupDecoderState()
        for (index, id) in ids.enumerated() {
            let isLast = index == ids.count - 1
            if damaged {
                s.aside(storage, id, "follows a damaged point in the journal", repair)
                continue
            }
            let bytes: [UInt8]
            do { bytes = try storage.read(id) } catch {
                s.storageErrors.append(error)
                s.aside(storage, id, "could not be read: \(error)", repair)
                damaged = true
                continue
            }
            s.bytesRead += bytes.count
            if bytes.withUnsafeBytes({ Self.isZero($0, from: 0) }) {
                if repair {
                    do { try storage.remove(id); s.emptySegmentsRemoved.append(id) } catch { s.storageErrors.append(error) }
                } else {
                    s.emptySegmentsRemoved.append(id)
                }
                continue
            }
            let result: Bool = bytes.withUnsafeBytes { buf in
                let header: SegmentHeader
                switch SegmentHeader.decode(buf) {
                case .failure(let p):
                    s.aside(storage, id, p.description, repair)
                    return false
                case .success(let h): header = h
                }
                if let e = expected, header.firstSequence != e {
                    s.aside(storage, id, "starts at record \(header.firstSequence), expected \(e) (a segment is missing)", repair)
                    return false
                }
                if header.segmentID != id {
                    s.aside(storage, id, "header names segment \(header.segmentID)", repair)
                    return false
                }
                s.segments.append(id)
                groupState.reset()
                var offset = JournalFormat.segmentHeaderBytes
                var sequence = header.firstSequence
                var badReason: String?
                loop: while true {
                    switch FrameCodec.read(buf, at: offset, limit: buf.count) {
                    case .end:
                        // Nothing after a clean end may be non-zero (a write that reached the card
                        // out of order); if something is, cut there too.
                        if !Self.isZero(buf, from: offset) { badReason = "stray bytes after the last record" }
                        break loop
                    case .bad(let why):
                        badReason = why
                        break loop
                    case .frame(let f):
                        guard f.sequence == sequence else {
                            badReason = "record \(f.sequence) where \(sequence) was expected (stale record)"
                            break loop
                        }
                        guard let type = RecordType(rawValue: f.type) else {
                            badReason = "unknown record type \(f.type) in a version \(header.version) journal"
                            break loop
                        }
                        let stateBefore = groupState
                        do {
                            let (samples, series) = try RecordDecoder.validate(type: type, version: header.version, buf, from: f.payloadStart,
                                                                               length: f.payloadLength, state: &groupState)
                            s.records.append(ScannedRecord(sequence: sequence, segmentID: id, offset: offset, type: type,
                                                           version: header.version, payloadStart: f.payloadStart, payloadLength: f.payloadLength,
                                                           samples: samples, series: series))
                        } catch {
                            groupState = stateBefore
                            s.undecodable += 1
                            badReason = "record \(sequence) does not decode: \(error)"
                            break loop
                        }
                        offset += f.totalBytes
                        sequence &+= 1
                    }
                }
                s.tailSegment = id
                s.tailOffset = offset
                s.tailState = groupState
                expected = sequence
                s.nextSequence = sequence
                if let why = badReason {
                    s.truncation = (id, offset, why)
                    if repair {
                        if !isLast {
                            do throws(StorageError) {
                                let name = try storage.copyAside(id)
                                s.setAside.append((name, "copy of \(SegmentName.name(id)) before it was cut at byte \(offset)"))
                            } catch { s.storageErrors.append(error) }
                        }
                        do throws(StorageError) { try storage.truncate(id, at: offset) } catch { s.storageErrors.append(error) }
                    }
                    if !isLast { return false }
                }
                return true
            }
            if !result { damaged = true }
            if s.segments.last == id { s.data[id] = bytes }
        }
        return s
    }

    /// The decoded contents of a scanned record that is not a group record (group records are
    /// coded against the ones before them: read them with `forEachRecord`).
    public func entry(_ r: ScannedRecord) -> JournalEntry {
        precondition(r.type != .group, "group records decode in sequence: use forEachRecord")
        guard let bytes = data[r.segmentID] else { return .records([]) }
        return bytes.withUnsafeBytes { b in
            (try? RecordDecoder.decode(type: r.type.rawValue, version: r.version, b, from: r.payloadStart, length: r.payloadLength)) ?? .records([])
        }
    }

    /// Calls `body` with every ride record of `records[range]` in order, decoding group records
    /// value by value (no per-record allocation). Checkpoints and durable marks are skipped.
    public func forEachRecord(in range: Range<Int>, _ body: (RideRecord) -> Void) {
        forEachRecordWithIndex(in: range) { _, r in body(r) }
    }

    /// `forEachRecord` that also says which of `records` each value came from.
    public func forEachRecordWithIndex(in range: Range<Int>, _ body: (Int, RideRecord) -> Void) {
        guard !range.isEmpty else { return }
        var state = GroupDecoderState()
        var segment: UInt32?
        var bytes: [UInt8] = []
        // Group records are coded against the earlier ones of their segment: start there.
        var first = range.lowerBound
        while first > 0 && records[first - 1].segmentID == records[range.lowerBound].segmentID { first -= 1 }
        for i in first..<range.upperBound {
            let r = records[i]
            if r.segmentID != segment {
                segment = r.segmentID
                bytes = data[r.segmentID] ?? []
                state.reset()
            }
            guard !bytes.isEmpty else { continue }
            if i < range.lowerBound {
                guard r.type == .group else { continue }
                bytes.withUnsafeBytes { b in
                    var reader = ByteReader(b, from: r.payloadStart, to: r.payloadStart + r.payloadLength)
                    try? RecordDecoder.readGroup(&reader, state: &state) { _ in }
                }
                continue
            }
            bytes.withUnsafeBytes { b in
                var reader = ByteReader(b, from: r.payloadStart, to: r.payloadStart + r.payloadLength)
                if r.type == .group {
                    try? RecordDecoder.readGroup(&reader, state: &state) { body(i, $0) }
                } else if r.type != .checkpoint && r.type != .rideFileDurable,
                          case .records(let list)? = try? RecordDecoder.decode(type: r.type.rawValue, version: r.version, b,
                                                                             from: r.payloadStart, length: r.payloadLength) {
                    for x in list { body(i, x) }
                }
            }
        }
    }

    /// The ride records of `ride`, in order (allocates them all: for ride files and tools).
    public func records(of ride: JournaledRide) -> [RideRecord] {
        var out: [RideRecord] = []
        out.reserveCapacity(Int(ride.counts.recordCount))
        forEachRecord(in: ride.frames) { out.append($0) }
        return out
    }

    mutating func aside(_ storage: SegmentStorage, _ id: UInt32, _ reason: String, _ repair: Bool) {
        guard repair else { setAside.append((SegmentName.name(id) + ".aside", reason)); return }
        do {
            let name = try storage.setAside(id)
            setAside.append((name, reason))
        } catch {
            storageErrors.append(error)
        }
    }
}

/// One ride as the journal holds it.
public struct JournaledRide: Sendable {
    public var header: RideHeader
    public var rideID: RideID { header.rideID }
    /// Its frames in `JournalScan.records` (header first; checkpoints included).
    public var frames: Range<Int>
    /// Its ride records in order, header first (only when `rides(withRecords: true)`).
    public var records: [RideRecord] = []
    /// Running counts over its records (what its next checkpoint would say).
    public var counts: Checkpoint
    public var started = false
    public var finished: Bool? = nil
    public var fileDurable = false
    public var checkpoints: [Checkpoint] = []
    /// Checkpoints whose counts did not match the records before them.
    public var checkpointMismatches = 0
    public var segments: Set<UInt32> = []

    public var isUnfinished: Bool { finished == nil }
}

extension JournalScan {
    /// Groups the records by ride (a header starts one). Records before any header (the tail of
    /// a ride whose start was compacted away) are counted in `orphans` and left out. Only
    /// headers, events, checkpoints and marks are decoded; samples are counted from their group
    /// records without decoding values unless `withRecords`.
    public func rides(withRecords: Bool = true) -> (rides: [JournaledRide], orphans: Int) {
        var rides: [JournaledRide] = []
        var orphans = 0
        var current: JournaledRide?
        var state = GroupDecoderState()
        var segment: UInt32?
        for (index, r) in records.enumerated() {
            guard let bytes = data[r.segmentID] else { continue }
            if r.segmentID != segment { segment = r.segmentID; state.reset() }
            switch r.type {
            case .group:
                guard current != nil else {
                    orphans += Int(r.samples) + Int(r.series)
                    if withRecords {
                        bytes.withUnsafeBytes { b in
                            var reader = ByteReader(b, from: r.payloadStart, to: r.payloadStart + r.payloadLength)
                            try? RecordDecoder.readGroup(&reader, state: &state) { _ in }
                        }
                    }
                    continue
                }
                current!.counts.recordCount += UInt64(r.samples) + UInt64(r.series)
                current!.counts.sampleCount += UInt64(r.samples)
                current!.counts.seriesCount += UInt64(r.series)
                if withRecords { bytes.withUnsafeBytes { b in
                    var reader = ByteReader(b, from: r.payloadStart, to: r.payloadStart + r.payloadLength)
                    try? RecordDecoder.readGroup(&reader, state: &state) { current!.records.append($0) }
                } }
                current!.segments.insert(r.segmentID)
                current!.frames = current!.frames.lowerBound..<(index + 1)
            default:
                switch entry(r) {
                case .records(let list):
                    for rec in list {
                        if case .header(let h) = rec {
                            if let c = current { rides.append(c) }
                            current = JournaledRide(header: h, frames: index..<(index + 1),
                                                    counts: Checkpoint(rideID: h.rideID, instant: h.anchor.monotonic))
                        }
                        guard current != nil else { orphans += 1; continue }
                        current!.counts.recordCount += 1
                        switch rec {
                        case .event(let e):
                            current!.counts.eventCount += 1
                            current!.counts.instant = e.instant
                            if e.kind == .start { current!.started = true; current!.counts.lapCount += 1 }
                            if e.kind == .lap { current!.counts.lapCount += 1 }
                        case .finished(let saved, let at):
                            current!.finished = saved
                            current!.counts.instant = at
                        case .elapsed(let at):
                            current!.counts.instant = at
                        default: break
                        }
                        if withRecords { current!.records.append(rec) }
                    }
                    if current != nil {
                        current!.segments.insert(r.segmentID)
                        current!.frames = current!.frames.lowerBound..<(index + 1)
                    }
                case .checkpoint(let c):
                    guard current?.rideID == c.rideID else { orphans += 1; continue }
                    current!.checkpoints.append(c)
                    let k = current!.counts
                    if c.recordCount != k.recordCount || c.eventCount != k.eventCount || c.sampleCount != k.sampleCount
                        || c.seriesCount != k.seriesCount || c.lapCount != k.lapCount {
                        current!.checkpointMismatches += 1
                    }
                    current!.frames = current!.frames.lowerBound..<(index + 1)
                case .rideFileDurable(let id):
                    if current?.rideID == id {
                        current!.fileDurable = true
                    } else if let i = rides.lastIndex(where: { $0.rideID == id }) {
                        rides[i].fileDurable = true
                    }
                }
            }
        }
        if let c = current { rides.append(c) }
        return (rides, orphans)
    }
}
