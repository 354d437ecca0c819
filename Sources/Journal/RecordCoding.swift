import RideModel

// MARK: Frames

/// One framed record found in a segment.
public struct Frame: Sendable, Hashable {
    public var type: UInt8
    public var sequence: UInt32
    /// Byte range of the payload within the segment.
    public var payloadStart: Int
    public var payloadLength: Int
    /// Bytes the whole frame takes.
    public var totalBytes: Int { payloadLength + JournalFormat.frameOverheadBytes }
}

/// What is at a position in a segment.
public enum FrameRead: Sendable, Hashable {
    /// Zeros: no record was ever written here.
    case end
    case frame(Frame)
    /// A record that does not verify (torn write or corruption), with the reason.
    case bad(String)
}

public enum FrameCodec {
    /// Appends `u16 length | u32 sequence | u8 type | payload | u32 crc32c` to `out`.
    public static func append(type: RecordType, sequence: UInt32, payload: [UInt8], to out: inout [UInt8]) {
        precondition(payload.count <= JournalFormat.payloadBytesMax, "payload over the limit: encoders bound their records")
        let start = out.count
        out.append(UInt8(payload.count & 0xFF)); out.append(UInt8(payload.count >> 8))
        for i in 0..<4 { out.append(UInt8((sequence >> (8 * UInt32(i))) & 0xFF)) }
        out.append(type.rawValue)
        out.append(contentsOf: payload)
        let crc = out.withUnsafeBytes { CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[start...])) }
        for i in 0..<4 { out.append(UInt8((crc >> (8 * UInt32(i))) & 0xFF)) }
    }

    /// Reads the frame at `offset` of a segment whose records end at `limit`; verifies length and
    /// checksum (not the sequence: the caller knows which one it expects).
    public static func read(_ bytes: UnsafeRawBufferPointer, at offset: Int, limit: Int) -> FrameRead {
        let headerEnd = offset + JournalFormat.frameHeaderBytes
        if headerEnd > limit {
            for i in offset..<limit where bytes[i] != 0 { return .bad("partial record header at the end of the segment") }
            return .end
        }
        var allZero = true
        for i in offset..<headerEnd where bytes[i] != 0 { allZero = false; break }
        if allZero { return .end }
        let length = Int(bytes[offset]) | Int(bytes[offset + 1]) << 8
        guard length <= JournalFormat.payloadBytesMax else { return .bad("record length \(length) over the limit \(JournalFormat.payloadBytesMax)") }
        let crcAt = headerEnd + length
        guard crcAt + 4 <= limit else { return .bad("record of \(length) bytes runs past the end of the segment") }
        var sequence: UInt32 = 0
        for i in 0..<4 { sequence |= UInt32(bytes[offset + 2 + i]) << (8 * UInt32(i)) }
        var stored: UInt32 = 0
        for i in 0..<4 { stored |= UInt32(bytes[crcAt + i]) << (8 * UInt32(i)) }
        let crc = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[offset..<crcAt]))
        guard crc == stored else { return .bad("checksum mismatch in record \(sequence) (torn write or corruption)") }
        return .frame(Frame(type: bytes[offset + 6], sequence: sequence, payloadStart: headerEnd, payloadLength: length))
    }
}

// MARK: Payloads

/// Encodes ride records into payloads. Samples and series values are packed into group records:
/// each entry is a tag byte (quantity, series/sample, origin, same-instant flag), an instant delta
/// (zigzag varint, ms) and a value. Values are stored losslessly: as integers, as k/10, k/100,
/// k/1000 or k/1024 when that reproduces the exact double (delta against the previous value of the
/// same stream in the record), as a repeat of the previous value, or as the raw 8 bytes.
public struct RecordEncoder: Sendable {
    var payload = ByteWriter(capacity: JournalFormat.payloadBytesMax)
    /// Per-stream state carried from group record to group record within a segment.
    public var state = GroupDecoderState()

    public init() {}

    /// A new segment starts: values are no longer coded against the previous segment's.
    public mutating func resetStreams() { state.reset() }

    static let scales: [Double] = [1, 10, 100, 1000, 1024]
    static let modeRaw: UInt64 = 5
    static let modeRepeat: UInt64 = 6
    /// XOR with the stream's previous value; the header says how many high bytes are zero.
    static let modeXor: UInt64 = 7

    /// Whether `record` goes into a group record.
    public static func isGroupable(_ record: RideRecord) -> Bool {
        switch record {
        case .sample, .series: true
        default: false
        }
    }

    /// The payload of a single (non-group) record and its type.
    public mutating func encode(_ record: RideRecord) -> (RecordType, [UInt8]) {
        payload.reset()
        let type: RecordType
        switch record {
        case .header(let h):
            type = .header
            Self.writeHeader(h, &payload)
        case .event(let e):
            type = .event
            Self.writeEvent(e, &payload)
        case .wallClock(let a):
            type = .wallClock
            Self.writeAnchor(a, &payload)
        case .finished(let saved, let at):
            type = .finished
            payload.bool(saved)
            payload.svarint(at.milliseconds)
        case .metadata(let k, let v):
            type = .metadata
            payload.string(k)
            payload.string(v)
        case .elapsed(let at):
            type = .elapsed
            payload.svarint(at.milliseconds)
        case .timeline(let t):
            type = .timeline
            payload.u64(t.boot.high)
            payload.u64(t.boot.low)
            payload.svarint(t.offsetMs)
        case .sample, .series:
            return encodeGroup([record][...])
        }
        return (type, payload.bytes)
    }

    public mutating func encode(_ checkpoint: Checkpoint) -> [UInt8] {
        payload.reset()
        Self.writeRideID(checkpoint.rideID, &payload)
        payload.svarint(checkpoint.instant.milliseconds)
        payload.varint(checkpoint.recordCount)
        payload.varint(checkpoint.eventCount)
        payload.varint(checkpoint.sampleCount)
        payload.varint(checkpoint.seriesCount)
        payload.varint(checkpoint.lapCount)
        return payload.bytes
    }

    public mutating func encodeRideFileDurable(_ id: RideID) -> [UInt8] {
        payload.reset()
        Self.writeRideID(id, &payload)
        return payload.bytes
    }

    /// Packs up to `JournalFormat.groupEntriesMax` samples/series values (all groupable).
    public mutating func encodeGroup(_ records: ArraySlice<RideRecord>) -> (RecordType, [UInt8]) {
        precondition(records.count <= JournalFormat.groupEntriesMax && !records.isEmpty)
        payload.reset()
        var base: Int64 = 0
        if case .sample(let s) = records.first! { base = s.instant.milliseconds }
        if case .series(let s) = records.first! { base = s.instant.milliseconds }
        payload.svarint(base &- state.lastInstant)
        payload.varint(UInt64(records.count))
        var previous = base
        for r in records {
            let s: Sample, series: Bool
            switch r {
            case .sample(let x): s = x; series = false
            case .series(let x): s = x; series = true
            default: preconditionFailure("only samples and series values are grouped")
            }
            let same = s.instant.milliseconds == previous
            var tag = s.quantity.rawValue
            if series { tag |= 0x20 }
            if s.origin == .generated { tag |= 0x40 }
            if same { tag |= 0x80 }
            payload.u8(tag)
            let stream = s.quantity.index * 2 + (series ? 1 : 0)
            let t = s.instant.milliseconds
            if !same { payload.svarint(t &- state.predictedInstant(stream, previous: previous)) }
            state.noteInstant(t, stream: stream)
            previous = t
            writeValue(s.value, stream: stream)
        }
        state.lastInstant = previous
        return (.group, payload.bytes)
    }

    mutating func writeValue(_ v: Double, stream: Int) {
        let bits = v.bitPattern
        defer { state.lastBits[stream] = bits; state.lastBitsValid[stream] = true }
        if state.lastBitsValid[stream] && state.lastBits[stream] == bits {
            payload.varint(Self.modeRepeat)
            return
        }
        if v.isFinite && abs(v) < 1e15 {
            for (mode, scale) in Self.scales.enumerated() {
                let x = (v * scale).rounded()
                guard abs(x) < 9e15 else { continue }
                let k = Int64(x)
                guard (Double(k) / scale).bitPattern == bits else { continue }
                let m = UInt8(mode)
                let delta = state.lastMode[stream] == m ? k &- state.lastK[stream] : k
                state.lastMode[stream] = m
                state.lastK[stream] = k
                payload.varint(zigzag(delta) << 3 | UInt64(mode))
                return
            }
        }
        if state.lastBitsValid[stream] {
            let x = bits ^ state.lastBits[stream]
            let lead = min(7, x.leadingZeroBitCount / 8)
            if lead >= 1 {
                payload.varint(UInt64(lead) << 3 | Self.modeXor)
                for i in 0..<(8 - lead) { payload.u8(UInt8((x >> (8 * UInt64(i))) & 0xFF)) }
                return
            }
        }
        payload.varint(Self.modeRaw)
        payload.u64(bits)
    }

    static func writeRideID(_ id: RideID, _ w: inout ByteWriter) { w.u64(id.high); w.u64(id.low) }

    static func writeAnchor(_ a: WallClockAnchor, _ w: inout ByteWriter) {
        w.svarint(a.monotonic.milliseconds)
        w.svarint(a.wall.unixMs)
        w.bool(a.wall.trusted)
    }

    static func writeEvent(_ e: RideEvent, _ w: inout ByteWriter) {
        w.u8(e.kind.rawValue)
        w.svarint(e.instant.milliseconds)
        w.u8(e.trigger.rawValue)
        w.u8(e.markerKind.rawValue)
        w.svarint(e.value)
    }

    static func writeZones(_ z: ZoneConfiguration?, _ w: inout ByteWriter) {
        guard let z else { w.u8(0); return }
        w.u8(1)
        w.u8(z.quantity.rawValue)
        w.varint(UInt64(z.boundaries.count))
        for b in z.boundaries { w.double(b) }
        if let names = z.names {
            w.u8(1)
            for n in names { w.string(n, max: 64) }
        } else {
            w.u8(0)
        }
    }

    static func writeHeader(_ h: RideHeader, _ w: inout ByteWriter) {
        writeRideID(h.rideID, &w)
        writeAnchor(h.anchor, &w)
        let s = h.settings
        if let ftp = s.ftpW { w.u8(1); w.double(ftp) } else { w.u8(0) }
        writeZones(s.heartRateZones, &w)
        writeZones(s.powerZones, &w)
        w.svarint(s.intervalMs)
        w.varint(UInt64(max(0, s.intervalBucketsMax)))
        w.svarint(s.sampleHoldLimitMs)
        w.varint(UInt64(max(0, s.lapsMax)))
        w.varint(UInt64(max(0, s.eventsMax)))
        w.string(h.activity, max: 128)
    }
}

/// Decodes payloads. Every field is checked; a bad payload throws and is never half-accepted.
public enum RecordDecoder {
    /// Largest lap/event reservations a header may ask for (a corrupt header must not make the
    /// recovering app reserve gigabytes).
    public static let lapsMaxLimit = 100_000
    public static let eventsMaxLimit = 1_000_000
    public static let intervalBucketsLimit = 1_000_000

    public static func decode(type rawType: UInt8, version: UInt16, _ bytes: UnsafeRawBufferPointer,
                              from: Int, length: Int) throws(DecodeError) -> JournalEntry {
        guard let type = RecordType(rawValue: rawType) else { throw .badValue("unknown record type \(rawType)") }
        guard type != .elapsed || version >= 2 else { throw .badValue("an elapsed record in a version \(version) journal (they came with version 2)") }
        guard type != .timeline || version >= 3 else { throw .badValue("a timeline record in a version \(version) journal (they came with version 3)") }
        var r = ByteReader(bytes, from: from, to: from + length)
        let entry: JournalEntry
        switch type {
        case .header: entry = .records([.header(try readHeader(&r))])
        case .event: entry = .records([.event(try readEvent(&r))])
        case .group: entry = .records(try readGroup(&r))
        case .wallClock: entry = .records([.wallClock(try readAnchor(&r))])
        case .finished:
            let saved = try r.bool()
            entry = .records([.finished(saved: saved, at: MonotonicInstant(milliseconds: try r.svarint()))])
        case .metadata:
            let k = try r.string()
            entry = .records([.metadata(key: k, value: try r.string())])
        case .checkpoint:
            let id = try readRideID(&r)
            entry = .checkpoint(Checkpoint(rideID: id, instant: MonotonicInstant(milliseconds: try r.svarint()),
                                           recordCount: try r.varint(), eventCount: try r.varint(),
                                           sampleCount: try r.varint(), seriesCount: try r.varint(), lapCount: try r.varint()))
        case .rideFileDurable:
            entry = .rideFileDurable(try readRideID(&r))
        case .elapsed:
            entry = .records([.elapsed(MonotonicInstant(milliseconds: try r.svarint()))])
        case .timeline:
            let high = try r.u64()
            let boot = BootIdentity(high: high, low: try r.u64())
            entry = .records([.timeline(RideTimeline(boot: boot, offsetMs: try r.svarint()))])
        }
        guard r.isAtEnd else { throw .badValue("\(r.remaining) unexpected bytes after a \(type) record") }
        return entry
    }

    static func readRideID(_ r: inout ByteReader) throws(DecodeError) -> RideID {
        let h = try r.u64()
        return RideID(high: h, low: try r.u64())
    }

    static func readAnchor(_ r: inout ByteReader) throws(DecodeError) -> WallClockAnchor {
        let m = try r.svarint()
        let w = try r.svarint()
        return WallClockAnchor(monotonic: MonotonicInstant(milliseconds: m), wall: WallClockTime(unixMs: w, trusted: try r.bool()))
    }

    static func readEvent(_ r: inout ByteReader) throws(DecodeError) -> RideEvent {
        let k = try r.u8()
        guard let kind = RideEvent.Kind(rawValue: k) else { throw .badValue("event kind \(k)") }
        let instant = try r.svarint()
        let t = try r.u8()
        guard let trigger = Trigger(rawValue: t) else { throw .badValue("trigger \(t)") }
        let m = try r.u8()
        guard let marker = RideEvent.MarkerKind(rawValue: m) else { throw .badValue("marker kind \(m)") }
        return RideEvent(kind, at: MonotonicInstant(milliseconds: instant), trigger: trigger, markerKind: marker, value: try r.svarint())
    }

    static func readZones(_ r: inout ByteReader) throws(DecodeError) -> ZoneConfiguration? {
        let present = try r.u8()
        guard present != 0 else { return nil }
        guard present == 1 else { throw .badValue("zone presence byte \(present)") }
        let q = try r.u8()
        guard let quantity = Quantity(rawValue: q) else { throw .badValue("zone quantity \(q)") }
        let n = try r.count(max: ZoneConfiguration.boundariesMax, "zone boundaries")
        var boundaries: [Double] = []
        for _ in 0..<n { boundaries.append(try r.double()) }
        var names: [String]?
        if try r.bool() {
            var list: [String] = []
            for _ in 0..<(n + 1) { list.append(try r.string(max: 64)) }
            names = list
        }
        do {
            return try ZoneConfiguration(quantity: quantity, boundaries: boundaries, names: names)
        } catch {
            throw .badValue("zones: \(error)")
        }
    }

    static func readHeader(_ r: inout ByteReader) throws(DecodeError) -> RideHeader {
        let id = try readRideID(&r)
        let anchor = try readAnchor(&r)
        var s = RideSettings()
        let ftpPresent = try r.bool()
        s.ftpW = ftpPresent ? try r.double() : nil
        s.heartRateZones = try readZones(&r)
        s.powerZones = try readZones(&r)
        s.intervalMs = try r.svarint()
        guard s.intervalMs > 0 else { throw .badValue("interval \(s.intervalMs) ms") }
        s.intervalBucketsMax = try r.count(max: intervalBucketsLimit, "interval buckets")
        s.sampleHoldLimitMs = try r.svarint()
        s.lapsMax = try r.count(max: lapsMaxLimit, "laps")
        s.eventsMax = try r.count(max: eventsMaxLimit, "events")
        let activity = try r.string(max: 128)
        return RideHeader(rideID: id, anchor: anchor, settings: s, activity: activity)
    }

    /// Checks that a payload decodes, without keeping what it holds (the scan).
    /// Returns the numbers of samples and series values (group records).
    public static func validate(type: RecordType, version: UInt16, _ bytes: UnsafeRawBufferPointer, from: Int, length: Int,
                                state: inout GroupDecoderState) throws(DecodeError) -> (UInt16, UInt16) {
        if type == .group {
            var r = ByteReader(bytes, from: from, to: from + length)
            var samples: UInt16 = 0, series: UInt16 = 0
            try readGroup(&r, state: &state) { if case .sample = $0 { samples += 1 } else { series += 1 } }
            guard r.isAtEnd else { throw .badValue("\(r.remaining) unexpected bytes after a group record") }
            return (samples, series)
        }
        _ = try decode(type: type.rawValue, version: version, bytes, from: from, length: length)
        return (0, 0)
    }

    /// A group record decoded on its own: right only for the first group of a segment (the
    /// others are coded against the records before them: use `JournalScan.forEachRecord`).
    static func readGroup(_ r: inout ByteReader) throws(DecodeError) -> [RideRecord] {
        var out: [RideRecord] = []
        var state = GroupDecoderState()
        try readGroup(&r, state: &state) { out.append($0) }
        return out
    }

    /// Decodes a group record value by value into `sink`. Throws (after possibly calling `sink`
    /// for the entries before the bad one) if anything is wrong: callers that keep values call
    /// this only on records the scan validated.
    static func readGroup(_ r: inout ByteReader, state: inout GroupDecoderState, _ sink: (RideRecord) -> Void) throws(DecodeError) {
        let base = state.lastInstant &+ (try r.svarint())
        let n = try r.count(max: JournalFormat.groupEntriesMax, "group entries")
        guard n > 0 else { throw .badValue("empty group") }
        var previous = base
        for _ in 0..<n {
            let tag = try r.u8()
            guard let q = Quantity(rawValue: tag & 0x1F) else { throw .badValue("quantity \(tag & 0x1F)") }
            let series = tag & 0x20 != 0
            let origin: SampleOrigin = tag & 0x40 != 0 ? .generated : .measured
            let stream = q.index * 2 + (series ? 1 : 0)
            if tag & 0x80 == 0 { previous = state.predictedInstant(stream, previous: previous) &+ (try r.svarint()) }
            state.noteInstant(previous, stream: stream)
            let h = try r.varint()
            let mode = h & 7
            let bits: UInt64
            switch mode {
            case RecordEncoder.modeRepeat:
                guard h >> 3 == 0, state.lastBitsValid[stream] else { throw .badValue("repeat without a previous value") }
                bits = state.lastBits[stream]
            case RecordEncoder.modeRaw:
                guard h >> 3 == 0 else { throw .badValue("raw value header") }
                bits = try r.u64()
            case RecordEncoder.modeXor:
                let lead = Int(h >> 3)
                guard lead >= 1 && lead <= 7, state.lastBitsValid[stream] else { throw .badValue("xor value header") }
                var x: UInt64 = 0
                for i in 0..<(8 - lead) { x |= UInt64(try r.u8()) << (8 * UInt64(i)) }
                bits = state.lastBits[stream] ^ x
            case 0..<UInt64(RecordEncoder.scales.count):
                let m = UInt8(mode)
                let delta = unzigzag(h >> 3)
                let k = state.lastMode[stream] == m ? state.lastK[stream] &+ delta : delta
                state.lastMode[stream] = m
                state.lastK[stream] = k
                bits = (Double(k) / RecordEncoder.scales[Int(mode)]).bitPattern
            default:
                throw .badValue("value mode \(mode)")
            }
            state.lastBits[stream] = bits
            state.lastBitsValid[stream] = true
            let s = Sample(q, Double(bitPattern: bits), at: MonotonicInstant(milliseconds: previous), origin: origin)
            sink(series ? .series(s) : .sample(s))
        }
        state.lastInstant = previous
    }
}

/// Per-stream (quantity × sample/series) state of the group value coding: the previous value of
/// each stream and the previous group's last instant. Carried from group record to group record
/// and reset at the start of every segment, so a segment decodes on its own. Allocated once.
public struct GroupDecoderState: Sendable, Hashable {
    var lastInstant: Int64 = 0
    // Per stream: its last instant and the step before it, so a steady series (4 Hz power)
    // costs one byte per instant (the difference from the predicted instant).
    var streamInstant = [Int64](repeating: 0, count: Quantity.countMax * 2)
    var streamStepMs = [Int64](repeating: 0, count: Quantity.countMax * 2)
    var streamSeen = [UInt8](repeating: 0, count: Quantity.countMax * 2)

    /// Where the next value of `stream` is expected: one step after its last one once two have
    /// been seen, else at the previous entry's instant.
    @inline(__always) func predictedInstant(_ stream: Int, previous: Int64) -> Int64 {
        streamSeen[stream] >= 2 ? streamInstant[stream] &+ streamStepMs[stream] : previous
    }

    @inline(__always) mutating func noteInstant(_ t: Int64, stream: Int) {
        if streamSeen[stream] >= 1 { streamStepMs[stream] = t &- streamInstant[stream] }
        if streamSeen[stream] < 2 { streamSeen[stream] += 1 }
        streamInstant[stream] = t
    }
    var lastMode = [UInt8](repeating: 0xFF, count: Quantity.countMax * 2)
    var lastK = [Int64](repeating: 0, count: Quantity.countMax * 2)
    var lastBits = [UInt64](repeating: 0, count: Quantity.countMax * 2)
    var lastBitsValid = [Bool](repeating: false, count: Quantity.countMax * 2)

    public init() {}

    /// Becomes a copy of `other` by copying its elements into this value's own buffers: no
    /// allocation when this value's arrays are not shared (the writer keeps its snapshots this
    /// way, so saving and restoring the encoder's state costs no heap allocation per commit).
    mutating func copy(from other: GroupDecoderState) {
        lastInstant = other.lastInstant
        Self.copy(&streamInstant, other.streamInstant)
        Self.copy(&streamStepMs, other.streamStepMs)
        Self.copy(&streamSeen, other.streamSeen)
        Self.copy(&lastMode, other.lastMode)
        Self.copy(&lastK, other.lastK)
        Self.copy(&lastBits, other.lastBits)
        Self.copy(&lastBitsValid, other.lastBitsValid)
    }

    @inline(__always) static func copy<T>(_ into: inout [T], _ from: [T]) {
        precondition(into.count == from.count, "decoder state arrays have a fixed size")
        for i in 0..<from.count { into[i] = from[i] }
    }

    mutating func reset() {
        lastInstant = 0
        for i in 0..<streamSeen.count { streamSeen[i] = 0 }
        for i in 0..<lastMode.count {
            lastMode[i] = 0xFF
            lastBitsValid[i] = false
        }
    }
}
