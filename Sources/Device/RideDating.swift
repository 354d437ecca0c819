import Journal
import RideFiles
import RideModel

/// Where the wall clock stood for the rides of this start: the kernel's boot (its random boot
/// id) and a reading of the wall clock against the device's monotonic clock (CLOCK_MONOTONIC on
/// the board, which counts from the boot and never jumps).
public struct ClockReference: Sendable, Hashable {
    public var bootID: String
    public var anchor: WallClockAnchor

    public init(bootID: String, anchor: WallClockAnchor) {
        self.bootID = bootID
        self.anchor = anchor
    }
}

/// Saves rides through the ride library and dates those saved on an untrusted clock once the
/// clock is trusted (docs/journal.md, "The clock"; issue 17).
///
/// A Pi without a real-time clock boots at a saved, stale time. A ride that ends before NTP or
/// GPS has set the clock is saved at once, named and timestamped by that stale clock, and a
/// copy of its records is kept in `<data dir>/undated/<ride id>.rec` with the boot it was
/// recorded in and the untrusted clock's reading against the monotonic clock at this start.
/// When the clock becomes trusted in the same boot (`clockTrusted`: the app core's one decision,
/// from the kernel's sync state or from GPS time) the offset between the untrusted and the
/// trusted clock is known: it is written first to `<ride id>.offset` (so a power cut from then
/// on still dates the ride at the next start), then the ride is stored again with every time
/// moved by the offset (a new version of its FIT, GPX and TCX files, named by the corrected
/// start; the old version removed, so the ride list shows it once, dated), and its copy and
/// offset are removed. A ride whose records hold a trusted anchor (trust came during the ride)
/// is never re-dated. A ride from an earlier boot cannot be dated (how long the board was off is
/// unknown): it keeps its date, and that is logged and counted.
///
/// The dating itself is ride-file work in steps (issue 27): `clockTrusted` only notes the rides
/// to date, and `nextRedating` hands them out one at a time as jobs that the runtime runs like a
/// ride file's, one bounded step per loop turn, every fsync in the background. A ride whose
/// file was being written when the clock became trusted joins them once its records are kept.
public final class DatingRideArchive: RideArchivePort {
    public static let directoryName = "undated"
    /// Rides kept waiting for a date at most (beyond that, one of them is given up, logged).
    public static let pendingRidesMax = 64
    /// Samples and series values per frame of a `.rec` file.
    static let groupRecordsMax = 64
    static let magic: [UInt8] = Array("BIKEUND1".utf8)

    public let library: RideLibrary
    let ops: RideFileOperations
    public let directory: String
    /// This start's clock: nil when the boot id could not be read (rides are then never dated
    /// later; logged).
    public let reference: ClockReference?
    let log: LogPort?
    /// The trusted anchor learnt in this start (device instants), once the clock is trusted.
    public private(set) var trustedAnchor: WallClockAnchor?
    public internal(set) var ridesRedated: UInt64 = 0
    public internal(set) var ridesUndatable: UInt64 = 0
    public internal(set) var datingFailures: UInt64 = 0
    /// Rides to date, in order (`nextRedating` takes them): those waiting when the clock became
    /// trusted, those whose dating a power cut interrupted, and those kept since.
    var due: [RideID] = []
    /// Rides waiting to be dated now (handed out or not).
    public var redatingsWaiting: Int { due.count }

    /// `reference` is the wall clock read at this start (`wall`, at device instant `now`) in
    /// boot `bootID`. Finishes the dating a power cut interrupted (an `.offset` file) and gives up
    /// the rides of earlier boots that never got one.
    public init(library: RideLibrary, ops: RideFileOperations, dataDirectory: String, bootID: String?,
                wall: WallClockTime, at now: MonotonicInstant, log: LogPort?) {
        self.library = library
        self.ops = ops
        directory = (dataDirectory.hasSuffix("/") ? String(dataDirectory.dropLast()) : dataDirectory) + "/" + Self.directoryName
        reference = bootID.flatMap { $0.isEmpty ? nil : ClockReference(bootID: $0, anchor: WallClockAnchor(monotonic: now, wall: wall)) }
        self.log = log
        for id in pendingRides() {
            if readOffset(id) != nil {
                due.append(id)  // dated by the runtime's jobs, off the start
            } else if let p = readPending(id), p.reference.bootID != reference?.bootID {
                giveUp(id, "the board restarted before its clock was set; it keeps the date the board guessed, \(Self.dateText(p.startMs))")
            }
        }
    }

    // MARK: RideArchivePort

    public func store(rideID: RideID, records: [RideRecord]) throws -> String {
        let plan = storing(rideID: rideID, records: records)
        return finish(plan, try library.store(rideID: rideID, records: plan.records))
    }

    /// The same in the library's bounded steps (the board's loop takes one per turn).
    public func beginStore(rideID: RideID, records: [RideRecord]) -> RideArchiveJob {
        let plan = storing(rideID: rideID, records: records)
        return DatingArchiveJob(self, plan, library.beginStore(rideID: rideID, records: plan.records))
    }

    /// What to write for a ride, decided before its files are written.
    struct Plan {
        var rideID: RideID
        var records: [RideRecord]
        /// The records hold a trusted anchor, or were dated already: nothing more to do.
        var dated: Bool
        var note: String
    }

    func storing(rideID: RideID, records: [RideRecord]) -> Plan {
        guard !Self.hasTrustedTime(records) else { return Plan(rideID: rideID, records: records, dated: true, note: "") }
        // Recorded on an untrusted clock, and the clock became trusted in this start before the
        // file could be written (a retried write): dated at once.
        if let t = trustedAnchor, let r = reference, !r.anchor.wall.trusted {
            let offset = Self.offset(trusted: t, untrusted: r.anchor)
            return Plan(rideID: rideID, records: Self.redated(records, offsetMs: offset), dated: true,
                        note: ", dated by the clock set since (\(Self.offsetText(offset)))")
        }
        return Plan(rideID: rideID, records: records, dated: false, note: "")
    }

    /// After the files are durable: keeps an undated ride's records for its dating.
    func finish(_ plan: Plan, _ what: String) -> String {
        let (summary, keeping) = beginFinish(plan, what, background: false)
        guard let keeping else { return summary }
        return completeFinish(plan, what, summary, keeping, blocking: true) ?? what
    }

    /// `finish`, with the records' file written through `beginWriteAtomically` when
    /// `background` (the board's loop: its fsyncs do not hold a turn). A pending write is then
    /// polled by `completeFinish` until durable.
    func beginFinish(_ plan: Plan, _ what: String, background: Bool) -> (String, RideFilePendingWrite?) {
        if plan.dated {
            if !plan.note.isEmpty { ridesRedated &+= 1 }
            return (what + plan.note, nil)
        }
        guard let r = reference, !r.anchor.wall.trusted else {
            ridesUndatable &+= 1
            log?.log(.warning, "ride \(plan.rideID) recorded on an unset clock and this start cannot tell by how much (boot unknown or clock set before): it keeps its date")
            return (what, nil)
        }
        let pending: RideFilePendingWrite?
        do {
            pending = try keepForDating(plan.rideID, plan.records, r, background: background)
        } catch {
            keepingFailed(plan, error)
            return (what, nil)
        }
        if pending == nil { kept(plan) }
        return (what + ", dated by an unset clock: re-dated once the clock is set", pending)
    }

    /// The records' file `beginFinish` began: the summary once durable, nil while it waits
    /// (never waits unless `blocking`).
    func completeFinish(_ plan: Plan, _ what: String, _ summary: String, _ keeping: RideFilePendingWrite, blocking: Bool) -> String? {
        do {
            var budget = 1_000_000
            while try !keeping.poll() {
                guard blocking, budget > 0 else { return nil }
                budget -= 1
            }
        } catch {
            keepingFailed(plan, error)
            return what
        }
        kept(plan)
        return summary
    }

    /// The ride's records are kept for dating (durably). If the clock became trusted while its
    /// file was written (after `clockTrusted` listed the rides to date), it is dated now like them.
    func kept(_ plan: Plan) {
        if trustedAnchor != nil, !due.contains(plan.rideID) { due.append(plan.rideID) }
    }

    func keepingFailed(_ plan: Plan, _ error: any Error) {
        datingFailures &+= 1
        log?.log(.error, "ride \(plan.rideID): cannot keep its records for dating (\(error)); it keeps the date the board guessed")
    }

    public func delete(rideID: RideID) throws {
        try library.delete(rideID: rideID)
        removePending(rideID)
    }

    /// The clock is trusted from now on (`anchor`: a trusted reading at a device instant): every
    /// ride of this start waiting for it is to be dated. Lists them, no more (the dating is
    /// `nextRedating`'s jobs).
    public func clockTrusted(_ anchor: WallClockAnchor) {
        guard trustedAnchor == nil else { return }
        trustedAnchor = anchor
        for id in pendingRides() where !due.contains(id) { due.append(id) }
    }

    public func nextRedating() -> (RideID, RideArchiveJob)? {
        guard !due.isEmpty else { return nil }
        let id = due.removeFirst()
        return (id, RedatingJob(self, id))
    }

    // MARK: Dating

    /// The trusted clock's reading minus the untrusted clock's at the same instant.
    public static func offset(trusted: WallClockAnchor, untrusted: WallClockAnchor) -> Int64 {
        trusted.wall.unixMs - untrusted.wallTime(at: trusted.monotonic).unixMs
    }

    /// Whether any of the ride's anchors (its header's, re-anchors) is trusted.
    public static func hasTrustedTime(_ records: [RideRecord]) -> Bool {
        var headers = 0
        for r in records {
            switch r {
            case .header(let h):
                headers += 1
                if headers > 1 { return false }
                if h.anchor.wall.trusted { return true }
            case .wallClock(let a): if a.wall.trusted { return true }
            default: break
            }
        }
        return false
    }

    /// The ride's records with its header's anchor moved by `offsetMs` and trusted: every time of
    /// the ride (RideExport dates by the first trusted anchor) moves by the offset.
    public static func redated(_ records: [RideRecord], offsetMs: Int64) -> [RideRecord] {
        var out = records
        if let i = out.firstIndex(where: { if case .header = $0 { true } else { false } }), case .header(var h) = out[i] {
            h.anchor = WallClockAnchor(monotonic: h.anchor.monotonic, wall: WallClockTime(unixMs: h.anchor.wall.unixMs + offsetMs, trusted: true))
            out[i] = .header(h)
        }
        return out
    }

    func giveUp(_ id: RideID, _ why: String) {
        ridesUndatable &+= 1
        log?.log(.warning, "ride \(id) cannot be dated: \(why)")
        removePending(id)
    }

    static func offsetText(_ ms: Int64) -> String {
        let s = (ms >= 0 ? ms : -ms) / 1000
        return "\(ms >= 0 ? "+" : "-")\(s / 86_400) d \(s / 3600 % 24) h \(s / 60 % 60) min \(s % 60) s"
    }

    static func dateText(_ ms: Int64?) -> String { ms.map { UTCDateTime(unixMs: $0).iso8601 } ?? "unknown" }

    // MARK: Files

    func path(_ id: RideID, _ ext: String) -> String { directory + "/" + id.description + "." + ext }

    /// Rides with records kept for dating, or an offset waiting to be applied.
    func pendingRides() -> [RideID] {
        guard let names = try? ops.list(directory) else { return [] }
        var ids: [RideID] = []
        for n in names.sorted() {
            guard let dot = n.lastIndex(of: "."), n[n.index(after: dot)...] == "rec", let id = RideID(String(n[..<dot])) else { continue }
            ids.append(id)
        }
        return ids
    }

    func removePending(_ id: RideID) {
        try? ops.remove(path(id, "offset"))
        try? ops.remove(path(id, "rec"))
    }

    func readOffset(_ id: RideID) -> Int64? {
        guard let bytes = try? ops.read(path(id, "offset")) else { return nil }
        let text = String(decoding: bytes, as: UTF8.self)
        guard text.hasPrefix("offset_ms ") else { return nil }
        return Int64(text.dropFirst("offset_ms ".count).prefix { $0 != "\n" })
    }

    func keepForDating(_ id: RideID, _ records: [RideRecord], _ r: ClockReference, background: Bool) throws -> RideFilePendingWrite? {
        try ops.makeDirectories(directory)
        let pending = pendingRides()
        if pending.count >= Self.pendingRidesMax, let oldest = pending.first {
            giveUp(oldest, "more than \(Self.pendingRidesMax) rides wait for the clock to be set")
        }
        guard background else {
            try ops.writeAtomically(path(id, "rec"), Self.encode(records, r))
            return nil
        }
        return try ops.beginWriteAtomically(path(id, "rec"), Self.encode(records, r))
    }

    // `.rec`: "BIKEUND1", the boot id (u8 length, bytes), the reference anchor (i64 monotonic
    // ms, i64 wall ms, u8 trusted), then the records as journal frames (docs/journal.md).
    static func encode(_ records: [RideRecord], _ r: ClockReference) -> [UInt8] {
        var out = magic
        let boot = Array(r.bootID.utf8.prefix(255))
        out.append(UInt8(boot.count))
        out += boot
        for v in [r.anchor.monotonic.milliseconds, r.anchor.wall.unixMs] { for i in 0..<8 { out.append(UInt8(truncatingIfNeeded: v >> (8 * Int64(i)))) } }
        out.append(r.anchor.wall.trusted ? 1 : 0)
        var encoder = RecordEncoder()
        var sequence: UInt32 = 0
        var i = 0
        while i < records.count {
            let type: RecordType
            let payload: [UInt8]
            if RecordEncoder.isGroupable(records[i]) {
                var end = i
                while end < records.count, end - i < groupRecordsMax, RecordEncoder.isGroupable(records[end]) { end += 1 }
                encoder.resetStreams() // every frame decodes on its own
                (type, payload) = encoder.encodeGroup(records[i..<end])
                i = end
            } else {
                (type, payload) = encoder.encode(records[i])
                i += 1
            }
            FrameCodec.append(type: type, sequence: sequence, payload: payload, to: &out)
            sequence &+= 1
        }
        return out
    }

    /// The records of a `.rec` file (nil: not one, or damaged).
    public static func decodeRecords(_ bytes: [UInt8]) -> [RideRecord]? { decode(bytes)?.records }

    struct Pending {
        var reference: ClockReference
        var records: [RideRecord]
        var startMs: Int64? {
            for r in records { if case .header(let h) = r { return h.anchor.wall.unixMs } }
            return nil
        }
    }

    func readPending(_ id: RideID) -> Pending? {
        guard let bytes = try? ops.read(path(id, "rec")) else { return nil }
        return Self.decode(bytes)
    }

    static func decode(_ bytes: [UInt8]) -> Pending? {
        guard bytes.count > magic.count + 1, Array(bytes[0..<magic.count]) == magic else { return nil }
        var at = magic.count
        let bootCount = Int(bytes[at]); at += 1
        guard bytes.count >= at + bootCount + 17 else { return nil }
        let boot = String(decoding: bytes[at..<(at + bootCount)], as: UTF8.self); at += bootCount
        func i64() -> Int64 {
            var v: UInt64 = 0
            for i in 0..<8 { v |= UInt64(bytes[at + i]) << (8 * UInt64(i)) }
            at += 8
            return Int64(bitPattern: v)
        }
        let mono = i64(), wall = i64()
        let trusted = bytes[at] != 0; at += 1
        var records: [RideRecord] = []
        let ok: Bool = bytes.withUnsafeBytes { p in
            while at < bytes.count {
                guard case .frame(let f) = FrameCodec.read(p, at: at, limit: bytes.count),
                      let entry = try? RecordDecoder.decode(type: f.type, version: JournalFormat.version, p, from: f.payloadStart, length: f.payloadLength),
                      case .records(let rs) = entry else { return false }
                records += rs
                at += f.totalBytes
            }
            return true
        }
        guard ok else { return nil }
        return Pending(reference: ClockReference(bootID: boot, anchor: WallClockAnchor(monotonic: MonotonicInstant(milliseconds: mono),
                                                                                       wall: WallClockTime(unixMs: wall, trusted: trusted))),
                       records: records)
    }
}

/// `DatingRideArchive.beginStore`: the library's steps, then the dating bookkeeping once durable.
final class DatingArchiveJob: RideArchiveJob {
    let archive: DatingRideArchive
    let plan: DatingRideArchive.Plan
    let inner: RideArchiveJob
    private(set) var summary = ""

    init(_ archive: DatingRideArchive, _ plan: DatingRideArchive.Plan, _ inner: RideArchiveJob) {
        self.archive = archive
        self.plan = plan
        self.inner = inner
    }

    /// The records' file kept for dating, while its fsyncs run (`beginFinish`).
    var keeping: (summary: String, write: RideFilePendingWrite)?

    func step() throws -> Bool {
        if let k = keeping {
            guard let s = archive.completeFinish(plan, inner.summary, k.summary, k.write, blocking: false) else { return false }
            keeping = nil
            summary = s
            return true
        }
        guard try inner.step() else { return false }
        let (s, pending) = archive.beginFinish(plan, inner.summary, background: true)
        if let pending {
            keeping = (s, pending)
            return false
        }
        summary = s
        return true
    }

    func retry() {
        keeping = nil
        inner.retry()
    }
    var waitsForStorage: Bool { keeping != nil || inner.waitsForStorage }
}

/// Dating one ride (`DatingRideArchive.nextRedating`), in the steps of a ride file: read its
/// kept records, write its offset (so a power cut from here on still dates it at the next
/// start), check it is still in the library, write its files again dated (the library's own
/// steps), remove what was kept for it. Every fsync runs in the background
/// (`beginWriteAtomically`, `beginRemove`): the step that began it returns and the runtime takes
/// the next when the card has answered. A failed step throws; `retry()` starts over.
final class RedatingJob: RideArchiveJob {
    enum Phase {
        case read
        case writeOffset
        case awaitOffset(RideFilePendingWrite)
        case check
        case write(RideFileWrite)
        case remove
        case awaitRemove(RideFilePendingWrite)
        case done
    }

    let archive: DatingRideArchive
    let rideID: RideID
    var phase = Phase.read
    var offsetMs: Int64 = 0
    var records: [RideRecord] = []
    private(set) var summary = ""
    private(set) var waitsForStorage = false

    init(_ archive: DatingRideArchive, _ rideID: RideID) {
        self.archive = archive
        self.rideID = rideID
    }

    func retry() {
        phase = .read
        records = []
        waitsForStorage = false
    }

    /// What `waitsForStorage` says after a pending operation's poll.
    func waiting(_ pending: RideFilePendingWrite, then next: Phase) throws -> Bool {
        guard try pending.poll() else {
            waitsForStorage = true
            return false
        }
        phase = next
        return false
    }

    func step() throws -> Bool {
        do { return try stepOnce() } catch {
            archive.datingFailures &+= 1  // the runtime logs it and retries
            throw error
        }
    }

    func stepOnce() throws -> Bool {
        waitsForStorage = false
        let a = archive
        switch phase {
        case .read:
            guard let p = a.readPending(rideID) else {
                a.noteFailure("ride \(rideID): its records kept for dating cannot be read; it keeps its date")
                summary = "its kept records cannot be read"
                phase = .remove
                return false
            }
            if Self.alreadyDated(p) {
                summary = "dated already"
                phase = .remove  // never re-dated twice
                return false
            }
            records = p.records
            if let o = a.readOffset(rideID) {
                // Learnt in the ride's own boot (a power cut came before the rewrite).
                offsetMs = o
                phase = .check
                return false
            }
            guard p.reference.bootID == a.reference?.bootID else {
                a.giveUpLater(rideID, "the board restarted before its clock was set; it keeps the date the board guessed, \(DatingRideArchive.dateText(p.startMs))")
                summary = "not dated (an earlier boot)"
                records = []
                phase = .remove
                return false
            }
            if let t = a.trustedAnchor {
                offsetMs = DatingRideArchive.offset(trusted: t, untrusted: p.reference.anchor)
                phase = .writeOffset
            } else {
                preconditionFailure("ride \(rideID) handed out for dating before the clock was trusted")
            }
        case .writeOffset:
            let pending = try a.ops.beginWriteAtomically(a.path(rideID, "offset"), Array("offset_ms \(offsetMs)\n".utf8))
            phase = pending.map { .awaitOffset($0) } ?? .check
            waitsForStorage = pending != nil
        case .awaitOffset(let pending):
            return try waiting(pending, then: .check)
        case .check:
            // Deleted meanwhile (`bikecomputer rides delete` goes to the library directly): not
            // brought back.
            guard try a.library.list().contains(where: { $0.rideID == rideID }) else {
                a.log?.log(.info, "ride \(rideID) was deleted before its clock was set; nothing to date")
                summary = "deleted before its clock was set"
                phase = .remove
                return false
            }
            phase = .write(a.library.writing(rideID: rideID, records: DatingRideArchive.redated(records, offsetMs: offsetMs)))
            records = []
        case .write(let w):
            guard try w.stepTyped() else {
                waitsForStorage = w.waitsForStorage
                return false
            }
            a.redated(rideID)
            summary = "dated now that the clock is set (\(DatingRideArchive.offsetText(offsetMs))): \(w.result ?? "")"
            a.log?.log(.info, "ride \(rideID) \(summary)")
            phase = .remove
        case .remove:
            let pending = try a.ops.beginRemove([a.path(rideID, "rec"), a.path(rideID, "offset")])
            phase = pending.map { .awaitRemove($0) } ?? .done
            waitsForStorage = pending != nil
            if pending == nil { return true }
        case .awaitRemove(let pending):
            guard try pending.poll() else {
                waitsForStorage = true
                return false
            }
            phase = .done
            return true
        case .done:
            return true
        }
        return false
    }

    static func alreadyDated(_ p: DatingRideArchive.Pending) -> Bool { DatingRideArchive.hasTrustedTime(p.records) }
}

extension DatingRideArchive {
    func redated(_ id: RideID) { ridesRedated &+= 1 }

    func noteFailure(_ message: String) {
        datingFailures &+= 1
        log?.log(.error, message)
    }

    /// Counted and logged; the kept files go with the job's removal step.
    func giveUpLater(_ id: RideID, _ why: String) {
        ridesUndatable &+= 1
        log?.log(.warning, "ride \(id) cannot be dated: \(why)")
    }
}
