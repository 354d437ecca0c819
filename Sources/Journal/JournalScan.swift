import RideModel

/// One verified record found by a scan.
public struct ScannedRecord: Sendable, Hashable {
    public var sequence: UInt32
    public var segmentID: UInt32
    public var offset: Int
    public var type: RecordType
    public var entry: JournalEntry
}

/// The result of reading the journal from its first segment to its first bad record.
public struct JournalScan: Sendable {
    public var records: [ScannedRecord] = []
    /// Segments in the journal after the scan, ascending.
    public var segments: [UInt32] = []
    /// Where the writer continues: the last segment and the offset after its last good record.
    public var tailSegment: UInt32?
    public var tailOffset = 0
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
    public static func scan(_ storage: SegmentStorage, repair: Bool) -> JournalScan {
        var s = JournalScan()
        let ids: [UInt32]
        do { ids = try storage.list() } catch { s.storageErrors.append(error); return s }
        var expected: UInt32?
        var damaged = false
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
            if bytes.allSatisfy({ $0 == 0 }) {
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
                var offset = JournalFormat.segmentHeaderBytes
                var sequence = header.firstSequence
                var badReason: String?
                loop: while true {
                    switch FrameCodec.read(buf, at: offset, limit: buf.count) {
                    case .end:
                        // Nothing after a clean end may be non-zero (a write that reached the card
                        // out of order); if something is, cut there too.
                        if buf[offset...].contains(where: { $0 != 0 }) { badReason = "stray bytes after the last record" }
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
                        do {
                            let entry = try RecordDecoder.decode(type: f.type, version: header.version, buf, from: f.payloadStart, length: f.payloadLength)
                            s.records.append(ScannedRecord(sequence: sequence, segmentID: id, offset: offset, type: type, entry: entry))
                        } catch {
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
        }
        return s
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
    /// Its ride records in order, header first.
    public var records: [RideRecord] = []
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
    /// a ride whose start was compacted away) are counted in `orphans` and left out.
    public func rides() -> (rides: [JournaledRide], orphans: Int) {
        var rides: [JournaledRide] = []
        var orphans = 0
        var counts = Checkpoint(rideID: RideID(high: 0, low: 0), instant: .zero)
        for r in records {
            switch r.entry {
            case .records(let list):
                for rec in list {
                    if case .header(let h) = rec {
                        rides.append(JournaledRide(header: h))
                        counts = Checkpoint(rideID: h.rideID, instant: h.anchor.monotonic)
                    }
                    guard !rides.isEmpty else { orphans += 1; continue }
                    let i = rides.count - 1
                    rides[i].records.append(rec)
                    rides[i].segments.insert(r.segmentID)
                    counts.recordCount += 1
                    switch rec {
                    case .event(let e):
                        counts.eventCount += 1
                        if e.kind == .start { rides[i].started = true; counts.lapCount += 1 }
                        if e.kind == .lap { counts.lapCount += 1 }
                    case .sample: counts.sampleCount += 1
                    case .series: counts.seriesCount += 1
                    case .finished(let saved, _): rides[i].finished = saved
                    default: break
                    }
                }
            case .checkpoint(let c):
                guard let i = rides.indices.last, rides[i].rideID == c.rideID else { orphans += 1; continue }
                rides[i].checkpoints.append(c)
                if c.recordCount != counts.recordCount || c.eventCount != counts.eventCount
                    || c.sampleCount != counts.sampleCount || c.seriesCount != counts.seriesCount || c.lapCount != counts.lapCount {
                    rides[i].checkpointMismatches += 1
                }
            case .rideFileDurable(let id):
                if let i = rides.lastIndex(where: { $0.rideID == id }) { rides[i].fileDurable = true }
            }
        }
        return (rides, orphans)
    }
}
