/// Flash in memory for tests and the simulator, LittleFS-emubd style: counts writes, syncs and
/// bytes, and can lose power at write N — dropping that write, tearing it (keeping its first
/// bytes), or also losing every write not yet synced. After `powerCycle()` the contents are what
/// a real card could hold after such a cut.
public final class SimulatedFlash: SegmentStorage {
    public enum CutMode: Sendable, Hashable, CustomStringConvertible {
        /// Write N never reaches the medium; earlier writes all do (synced or not).
        case dropWrite
        /// The first `keepBytes` bytes of write N reach the medium.
        case tearWrite(keepBytes: Int)
        /// Only synced data survives; write N is lost.
        case loseUnsynced
        /// Only synced data survives, except the first `keepBytes` of write N (reordered cache).
        case loseUnsyncedAndTear(keepBytes: Int)

        public var description: String {
            switch self {
            case .dropWrite: "drop"
            case .tearWrite(let k): "tear(\(k))"
            case .loseUnsynced: "lose-unsynced"
            case .loseUnsyncedAndTear(let k): "lose-unsynced+tear(\(k))"
            }
        }
    }

    struct File {
        var bytes: [UInt8]
        /// (offset, previous bytes) of writes since the last sync, oldest first.
        var undo: [(Int, [UInt8])] = []
    }

    public let segmentBytes: Int
    var files: [UInt32: File] = [:]
    /// Segments set aside or copied aside, by name.
    public private(set) var asideFiles: [String: [UInt8]] = [:]

    /// Data writes and segment creations attempted (the unit power cuts count in).
    public private(set) var writeCount = 0
    public private(set) var syncCount = 0
    public private(set) var bytesWritten = 0
    public private(set) var powerIsOff = false
    public var freeBytes: Int?

    /// Lose power when write number `cutAtWrite` (1-based) is attempted.
    public var cutAtWrite: Int?
    public var cutMode: CutMode = .dropWrite
    /// Fail the next `failWrites` writes/syncs/creates with this error (disk full, I/O error).
    public var injectedError: StorageError?
    public var failWrites = 0
    var pendingTear: (UInt32, Int, [UInt8])?

    public init(segmentBytes: Int = JournalFormat.defaultSegmentBytes) {
        precondition(segmentBytes >= JournalFormat.segmentBytesMin)
        self.segmentBytes = segmentBytes
    }

    func checkPower() throws(StorageError) {
        if powerIsOff { throw StorageError(.powerLost, "power is off") }
    }

    func injected() throws(StorageError) {
        if failWrites > 0, let e = injectedError {
            failWrites -= 1
            throw e
        }
    }

    /// Counts a write; loses power if this is the one to cut at.
    func countWrite(_ id: UInt32, _ offset: Int, _ bytes: UnsafeRawBufferPointer?) throws(StorageError) {
        try checkPower()
        writeCount += 1
        if let n = cutAtWrite, writeCount >= n {
            powerIsOff = true
            if let bytes {
                switch cutMode {
                case .tearWrite(let k), .loseUnsyncedAndTear(let k):
                    pendingTear = (id, offset, Array(bytes.prefix(max(0, min(k, bytes.count - 1)))))
                default: break
                }
            }
            throw StorageError(.powerLost, "power cut at write \(writeCount)")
        }
    }

    /// Power returns: the medium keeps what the cut mode says.
    public func powerCycle() {
        switch cutMode {
        case .loseUnsynced, .loseUnsyncedAndTear:
            for (id, var f) in files {
                for (offset, old) in f.undo.reversed() { f.bytes.replaceSubrange(offset..<(offset + old.count), with: old) }
                f.undo = []
                files[id] = f
            }
        default:
            for id in files.keys { files[id]!.undo = [] }
        }
        if let (id, offset, bytes) = pendingTear, files[id] != nil {
            files[id]!.bytes.replaceSubrange(offset..<(offset + bytes.count), with: bytes)
        }
        pendingTear = nil
        powerIsOff = false
        cutAtWrite = nil
    }

    // MARK: SegmentStorage

    public func list() throws(StorageError) -> [UInt32] {
        try checkPower()
        return files.keys.sorted()
    }

    public func create(_ id: UInt32) throws(StorageError) {
        try countWrite(id, 0, nil)
        try injected()
        guard files[id] == nil else { throw StorageError(.other, "\(SegmentName.name(id)) already exists") }
        if let free = freeBytes {
            guard free >= segmentBytes else { throw StorageError(.noSpace, "no space left for \(SegmentName.name(id))") }
            freeBytes = free - segmentBytes
        }
        files[id] = File(bytes: [UInt8](repeating: 0, count: segmentBytes))
    }

    public func write(_ id: UInt32, at offset: Int, _ bytes: UnsafeRawBufferPointer) throws(StorageError) {
        guard files[id] != nil else { throw StorageError(.notFound, "\(SegmentName.name(id)) does not exist") }
        precondition(offset >= 0 && offset + bytes.count <= segmentBytes, "write outside the preallocated segment")
        try countWrite(id, offset, bytes)
        try injected()
        let old = Array(files[id]!.bytes[offset..<(offset + bytes.count)])
        files[id]!.undo.append((offset, old))
        files[id]!.bytes.replaceSubrange(offset..<(offset + bytes.count), with: bytes)
        bytesWritten += bytes.count
    }

    public func sync(_ id: UInt32) throws(StorageError) {
        try checkPower()
        try injected()
        guard files[id] != nil else { throw StorageError(.notFound, "\(SegmentName.name(id)) does not exist") }
        syncCount += 1
        files[id]!.undo.removeAll(keepingCapacity: true)
    }

    public func read(_ id: UInt32) throws(StorageError) -> [UInt8] {
        try checkPower()
        guard let f = files[id] else { throw StorageError(.notFound, "\(SegmentName.name(id)) does not exist") }
        return f.bytes
    }

    public func truncate(_ id: UInt32, at offset: Int) throws(StorageError) {
        try checkPower()
        guard files[id] != nil else { throw StorageError(.notFound, "\(SegmentName.name(id)) does not exist") }
        for i in offset..<segmentBytes { files[id]!.bytes[i] = 0 }
        files[id]!.undo = []
    }

    public func remove(_ id: UInt32) throws(StorageError) {
        try checkPower()
        guard files.removeValue(forKey: id) != nil else { throw StorageError(.notFound, "\(SegmentName.name(id)) does not exist") }
        if let free = freeBytes { freeBytes = free + segmentBytes }
    }

    func asideName(_ base: String) -> String {
        var name = base
        var k = 1
        while asideFiles[name] != nil { k += 1; name = base + "-\(k)" }
        return name
    }

    public func setAside(_ id: UInt32) throws(StorageError) -> String {
        try checkPower()
        guard let f = files.removeValue(forKey: id) else { throw StorageError(.notFound, "\(SegmentName.name(id)) does not exist") }
        let name = asideName(SegmentName.name(id) + ".aside")
        asideFiles[name] = f.bytes
        return name
    }

    public func copyAside(_ id: UInt32) throws(StorageError) -> String {
        try checkPower()
        guard let f = files[id] else { throw StorageError(.notFound, "\(SegmentName.name(id)) does not exist") }
        let name = asideName(SegmentName.name(id) + ".damaged")
        asideFiles[name] = f.bytes
        return name
    }

    public func availableBytes() -> Int? {
        freeSpaceReads += 1
        return freeBytes
    }

    /// How many times `availableBytes()` was asked (a statvfs each on a board).
    public private(set) var freeSpaceReads = 0

    // MARK: Test helpers

    /// The current bytes of a segment (what a reader would see now).
    public func contents(_ id: UInt32) -> [UInt8]? { files[id]?.bytes }

    /// Replaces a segment's bytes (corruption tests).
    public func overwrite(_ id: UInt32, with bytes: [UInt8]) {
        precondition(bytes.count == segmentBytes)
        files[id] = File(bytes: bytes)
    }

    /// A copy with the same contents and no faults armed (to try many cuts from one state).
    public func snapshot() -> SimulatedFlash {
        let s = SimulatedFlash(segmentBytes: segmentBytes)
        s.files = files.mapValues { File(bytes: $0.bytes) }
        s.asideFiles = asideFiles
        s.freeBytes = freeBytes
        return s
    }
}
