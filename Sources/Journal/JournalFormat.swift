import RideModel

/// Constants and fixed layouts of the journal on flash (docs/journal.md).
///
/// A journal is a sequence of segment files, each preallocated to a fixed size. A segment starts
/// with a 32-byte header; records follow back to back; the unused rest is zeros. Every record is
///
///     u16 payloadLength | u32 sequence | u8 type | payload | u32 crc32c(all previous bytes)
///
/// Sequence numbers increase by one from record to record across segments, so a reader can tell a
/// stale record from a fresh one and notice a missing segment.
public enum JournalFormat {
    /// The format this code writes. Readers accept every version from 1 up to this one.
    /// 2: adds the `elapsed` record (type 9). An older app sets a version 2 segment aside (kept,
    /// not read) instead of cutting it at the first record it does not know.
    /// 3: adds the `timeline` record (type 10).
    public static let version: UInt16 = 3
    public static let versionsReadable: ClosedRange<UInt16> = 1...version
    /// "BKJL" little-endian.
    public static let segmentMagic: UInt32 = 0x4C4A_4B42
    public static let segmentHeaderBytes = 32
    public static let frameHeaderBytes = 7
    public static let frameTrailerBytes = 4
    public static let frameOverheadBytes = frameHeaderBytes + frameTrailerBytes
    /// Largest payload a record may have (a ride header with zone names is well below).
    public static let payloadBytesMax = 4_096
    public static let stringBytesMax = 1_024
    /// Samples and series values packed into one group record at most.
    public static let groupEntriesMax = 96
    public static let defaultSegmentBytes = 1 << 20
    public static let segmentBytesMin = 8_192
}

/// Record types on flash. Values are never reused: a newer format only adds types.
public enum RecordType: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case header = 1
    case event = 2
    /// 1 Hz samples and quantity-series values, packed and delta-encoded.
    case group = 3
    case wallClock = 4
    case finished = 5
    case metadata = 6
    case checkpoint = 7
    /// The ride's file is durable: its records may be compacted away.
    case rideFileDurable = 8
    /// A running ride's 1 Hz record instant with no sample (RideRecord.elapsed): the instant only.
    case elapsed = 9
    /// The ride's instants against the device's monotonic clock in one boot (RideRecord.timeline).
    case timeline = 10

    public var description: String {
        switch self {
        case .header: "header"
        case .event: "event"
        case .group: "group"
        case .wallClock: "wall_clock"
        case .finished: "finished"
        case .metadata: "metadata"
        case .checkpoint: "checkpoint"
        case .rideFileDurable: "ride_file_durable"
        case .elapsed: "elapsed"
        case .timeline: "timeline"
        }
    }
}

/// Counts written periodically during a ride. Recovery replays every record (the builder's
/// internal state is not serialisable from outside RideModel), and checks at each checkpoint that
/// what it has replayed so far matches what the writer had journaled: a missing or extra record
/// is detected and reported instead of silently changing the ride.
public struct Checkpoint: Sendable, Hashable {
    public var rideID: RideID
    /// Instant of the newest ride record before the checkpoint.
    public var instant: MonotonicInstant
    /// Ride records of this ride before the checkpoint (header included).
    public var recordCount: UInt64
    public var eventCount: UInt64
    public var sampleCount: UInt64
    public var seriesCount: UInt64
    public var lapCount: UInt64

    public init(rideID: RideID, instant: MonotonicInstant, recordCount: UInt64 = 0, eventCount: UInt64 = 0,
                sampleCount: UInt64 = 0, seriesCount: UInt64 = 0, lapCount: UInt64 = 0) {
        self.rideID = rideID
        self.instant = instant
        self.recordCount = recordCount
        self.eventCount = eventCount
        self.sampleCount = sampleCount
        self.seriesCount = seriesCount
        self.lapCount = lapCount
    }
}

/// What one record on flash holds.
public enum JournalEntry: Sendable, Hashable {
    /// Ride records: one for header/event/wall clock/finished/metadata; one or more samples and
    /// series values for a group.
    case records([RideRecord])
    case checkpoint(Checkpoint)
    case rideFileDurable(RideID)
}

/// The fixed header at the start of every segment.
public struct SegmentHeader: Sendable, Hashable {
    public var version: UInt16
    public var segmentID: UInt32
    /// Sequence number of the segment's first record.
    public var firstSequence: UInt32
    public var segmentBytes: UInt32

    public init(version: UInt16 = JournalFormat.version, segmentID: UInt32, firstSequence: UInt32, segmentBytes: UInt32) {
        self.version = version
        self.segmentID = segmentID
        self.firstSequence = firstSequence
        self.segmentBytes = segmentBytes
    }

    public func encoded() -> [UInt8] {
        var w = ByteWriter(capacity: JournalFormat.segmentHeaderBytes)
        w.u32(JournalFormat.segmentMagic)
        w.u16(version)
        w.u16(UInt16(JournalFormat.segmentHeaderBytes))
        w.u32(segmentID)
        w.u32(firstSequence)
        w.u32(segmentBytes)
        w.u64(0)
        w.u32(CRC32C.checksum(w.bytes))
        return w.bytes
    }

    public enum Problem: Error, Sendable, Hashable, CustomStringConvertible {
        case tooShort
        case badMagic
        case badChecksum
        case newerVersion(UInt16)
        case badLayout(String)

        public var description: String {
            switch self {
            case .tooShort: "segment shorter than its header"
            case .badMagic: "not a journal segment (bad magic)"
            case .badChecksum: "segment header checksum mismatch (torn or corrupt)"
            case .newerVersion(let v): "written by a newer app (format \(v), this app reads up to \(JournalFormat.version)): update the app"
            case .badLayout(let s): "segment header: \(s)"
            }
        }
    }

    public static func decode(_ bytes: UnsafeRawBufferPointer) -> Result<SegmentHeader, Problem> {
        guard bytes.count >= JournalFormat.segmentHeaderBytes else { return .failure(.tooShort) }
        var r = ByteReader(bytes, from: 0, to: JournalFormat.segmentHeaderBytes)
        do throws(DecodeError) {
            guard try r.u32() == JournalFormat.segmentMagic else { return .failure(.badMagic) }
            let version = try r.u16()
            let headerBytes = try r.u16()
            let id = try r.u32()
            let first = try r.u32()
            let size = try r.u32()
            _ = try r.u64()
            let crc = try r.u32()
            guard CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[0..<28])) == crc else { return .failure(.badChecksum) }
            guard version >= 1 else { return .failure(.badLayout("version 0")) }
            guard version <= JournalFormat.version else { return .failure(.newerVersion(version)) }
            guard Int(headerBytes) == JournalFormat.segmentHeaderBytes else { return .failure(.badLayout("header size \(headerBytes)")) }
            return .success(SegmentHeader(version: version, segmentID: id, firstSequence: first, segmentBytes: size))
        } catch {
            return .failure(.tooShort)
        }
    }
}
