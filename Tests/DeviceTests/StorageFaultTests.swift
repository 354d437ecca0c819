import AppCore
import Device
import Journal
import RideFiles
import RideModel
import Testing

/// Ride files the way a failing SD card takes them (issue 17 item 5): full (ENOSPC), an I/O
/// error (EIO), read-only (EROFS after ext4 gave up), or writes that "succeed" and never land
/// (a card that lies). The mode can change at any time: the card heals.
final class FaultyFiles: RideFileOperations {
    enum Mode: Equatable { case healthy, full, io, readOnly, dropped }
    struct Fault: Error, CustomStringConvertible {
        var kind: RideFileFault
        var description: String
    }

    var mode = Mode.healthy
    var files: [String: [UInt8]] = [:]
    var writeAttempts = 0

    func fail() throws {
        switch mode {
        case .full: throw Fault(kind: .full, description: "No space left on device")
        case .io: throw Fault(kind: .io, description: "Input/output error")
        case .readOnly: throw Fault(kind: .readOnly, description: "Read-only file system")
        case .healthy, .dropped: return
        }
    }

    func list(_ directory: String) throws -> [String] {
        if mode == .io { try fail() }
        return files.keys.filter { $0.hasPrefix(directory + "/") }.map { String($0.dropFirst(directory.count + 1)) }
    }
    func read(_ path: String) throws -> [UInt8] {
        if mode == .io { try fail() }
        guard let b = files[path] else { throw Fault(kind: .other, description: "\(path): no such file") }
        return b
    }
    func writeAtomically(_ path: String, _ bytes: [UInt8]) throws {
        writeAttempts += 1
        try fail()
        if mode == .dropped { return } // the card said yes and kept nothing
        files[path] = bytes
    }
    func remove(_ path: String) throws {
        try fail()
        files[path] = nil
    }
    func makeDirectories(_ path: String) throws {
        if mode == .readOnly { try fail() }
    }
    func size(_ path: String) throws -> Int64 { Int64(try read(path).count) }
    func fault(of error: any Error) -> RideFileFault { (error as? Fault)?.kind ?? .other }

    var fitFiles: [String] { files.keys.filter { $0.hasSuffix(".fit") }.sorted() }
}

/// Simulated flash whose reads can fail (EIO on read-back), writes untouched.
final class ReadFailingFlash: SegmentStorage {
    let base = SimulatedFlash()
    var failReads = false
    var segmentBytes: Int { base.segmentBytes }
    func list() throws(StorageError) -> [UInt32] { try base.list() }
    func create(_ id: UInt32) throws(StorageError) { try base.create(id) }
    func write(_ id: UInt32, at offset: Int, _ bytes: UnsafeRawBufferPointer) throws(StorageError) { try base.write(id, at: offset, bytes) }
    func sync(_ id: UInt32) throws(StorageError) { try base.sync(id) }
    func read(_ id: UInt32) throws(StorageError) -> [UInt8] {
        if failReads { throw StorageError(.io, "Input/output error") }
        return try base.read(id)
    }
    func truncate(_ id: UInt32, at offset: Int) throws(StorageError) { try base.truncate(id, at: offset) }
    func remove(_ id: UInt32) throws(StorageError) { try base.remove(id) }
    func setAside(_ id: UInt32) throws(StorageError) -> String { try base.setAside(id) }
    func copyAside(_ id: UInt32) throws(StorageError) -> String { try base.copyAside(id) }
    func availableBytes() -> Int? { base.availableBytes() }
}

/// A device on simulated flash with a ride library on `FaultyFiles`, ridden second by second.
final class FaultRig {
    let storage = ReadFailingFlash()
    var flash: SimulatedFlash { storage.base }
    let files = FaultyFiles()
    let log = MemoryLog(capacity: 4096)
    let journal: FlashJournal
    let device: DeviceRuntime
    var nowMs: Int64 = 0

    init(steps: Bool = false, disabled: Bool = false) {
        let opened = disabled
            ? FlashJournal.disabled(reason: "/data/journal: Read-only file system", randomSeed: 5, deviceNow: .zero)
            : FlashJournal.open(storage: storage, randomSeed: 5, deviceNow: .zero)
        journal = opened.journal
        device = DeviceRuntime.boot((opened.journal, opened.core, opened.report), archive: RideLibrary(dataDirectory: "/data", ops: files),
                                    log: log, stepsRideFiles: steps,
                                    wall: WallClockTime(unixMs: 1_790_000_000_000, trusted: true), at: .zero)
    }

    var now: MonotonicInstant { MonotonicInstant(milliseconds: nowMs) }

    /// `seconds` of riding: a power and a heart-rate value, then the tick, every second.
    func ride(seconds: Int) {
        for _ in 0..<seconds {
            nowMs += 1000
            device.handle(.sample(Sample(.power, 180 + Double(nowMs / 1000 % 40), at: now)))
            device.handle(.sample(Sample(.heartRate, 130, at: now)))
            device.tick(at: now)
        }
    }

    func start() {
        _ = device.control("start", at: now, status: { "{}" })
        ride(seconds: 4) // the countdown
        #expect(device.state == .running)
    }

    func end() {
        nowMs += 100
        let a = device.control("end", at: now, status: { "{}" })
        #expect(!a.isError, "\(a)")
    }

    /// Ticks without riding (the summary shown) for `seconds`.
    func wait(seconds: Int) {
        for _ in 0..<seconds {
            nowMs += 1000
            device.tick(at: now)
        }
    }

    var lines: [String] { log.lines.elements }
    func logged(_ s: String) -> Bool { lines.contains { $0.contains(s) } }
    func alerts() -> [String] { lines.compactMap { l in l.range(of: "alert: ").map { String(l[$0.upperBound...]) } } }

    /// The FIT file's 1 Hz records (nil: no file).
    func fitRecords() throws -> Int? {
        guard let path = files.fitFiles.last else { return nil }
        return FITActivity(try FITFile(bytes: files.files[path]!)).records.count
    }
}

struct StorageFaultTests {
    /// The same ride with nothing failing: how many records its file holds.
    static func healthyRecords(seconds: Int) throws -> Int {
        let rig = FaultRig()
        rig.start()
        rig.ride(seconds: seconds)
        rig.end()
        return try #require(try rig.fitRecords())
    }

    /// The journal's card fails mid-ride (EIO on every write): the ride goes on, and the file
    /// holds every second, durable or only in memory. Before issue 17 the file was written from
    /// the durable records only: the last 20 s were missing, and the journal was compacted.
    @Test func aJournalThatFailsMidRideLosesNothingFromTheFile() throws {
        let healthy = try Self.healthyRecords(seconds: 30)
        let rig = FaultRig()
        rig.start()
        rig.ride(seconds: 10)
        rig.flash.injectedError = StorageError(.io, "Input/output error")
        rig.flash.failWrites = Int.max
        rig.ride(seconds: 20)
        #expect(rig.device.state == .running)
        #expect(rig.device.storageCondition == .failing)
        #expect(rig.alerts().contains("STORAGE ERROR"))
        #expect(rig.journal.writer.pendingCount > 20, "the last 20 s wait in memory")
        rig.end()
        #expect(try rig.fitRecords() == healthy, "the file holds the whole ride")
        #expect(rig.alerts().last == "RIDE SAVED")
        // The journal cannot record the file's durability: the ride stays in it until it can.
        #expect(rig.journal.writer.segmentCount > 0)
        rig.flash.failWrites = 0
        rig.wait(seconds: 3)
        #expect(rig.journal.writer.pendingCount == 0)
        #expect(rig.journal.writer.segmentCount == 0, "compacted once the mark is durable")
    }

    /// A full card at the end of the ride: no "RIDE SAVED", STORAGE FULL and RIDE NOT SAVED, the
    /// journal keeps the ride, retries are bounded; the card is freed and the file is written
    /// without a restart, "RIDE SAVED" only then.
    @Test(arguments: [(FaultyFiles.Mode.full, "STORAGE FULL"), (.readOnly, "STORAGE ERROR"), (.io, "STORAGE ERROR"),
                      (.dropped, "STORAGE ERROR")])
    func aFailedRideFileIsAlertedKeptAndRetriedUntilTheCardHeals(mode: FaultyFiles.Mode, alert: String) throws {
        let healthy = try Self.healthyRecords(seconds: 20)
        let rig = FaultRig()
        rig.start()
        rig.ride(seconds: 20)
        rig.files.mode = mode
        rig.end()
        #expect(!rig.alerts().contains("RIDE SAVED"), "\(rig.alerts())")
        #expect(rig.alerts().contains(alert), "\(rig.alerts())")
        #expect(rig.alerts().contains("RIDE NOT SAVED"), "\(rig.alerts())")
        #expect(rig.alerts().first { $0 == "SAVING RIDE" } != nil)
        #expect(rig.device.rideFilesPending == 1)
        #expect(rig.device.storageCondition == (mode == .full ? .full : .failing))
        if mode != .dropped { #expect(rig.files.fitFiles.isEmpty) }
        let id = try #require(rig.device.lastFinishedRide)
        #expect(!rig.journal.records(of: id).isEmpty, "the journal keeps the ride")
        // Retried with a bounded back-off: 1, 2, 4, 8, 8 s...
        var attempts: [Int64] = []
        func failures() -> Int { rig.lines.filter { $0.contains("not written") }.count }
        var last = failures()
        #expect(last == 1)
        for _ in 0..<40 {
            rig.wait(seconds: 1)
            if failures() != last { attempts.append(rig.nowMs); last = failures() }
        }
        let gaps = zip(attempts.dropFirst(), attempts).map { $0 - $1 }
        #expect(gaps.count >= 3 && gaps.allSatisfy { $0 <= DeviceRuntime.rideFileRetryMsMax }, "\(gaps)")
        #expect(gaps.suffix(2).allSatisfy { $0 == DeviceRuntime.rideFileRetryMsMax }, "\(gaps)")
        #expect(rig.alerts().filter { $0 == "RIDE NOT SAVED" }.count == 1, "told once, not at every retry")
        #expect(!rig.alerts().contains("RIDE SAVED"))
        // The card heals: within the longest back-off the file is there, and only then saved.
        rig.files.mode = .healthy
        rig.wait(seconds: Int(DeviceRuntime.rideFileRetryMsMax / 1000) + 1)
        #expect(try rig.fitRecords() == healthy)
        #expect(rig.alerts().last == "RIDE SAVED")
        #expect(rig.device.rideFilesPending == 0)
        #expect(rig.device.storageCondition == .ok)
        #expect(rig.journal.records(of: id).isEmpty, "compacted only once the file is durable")
    }

    /// The data directory cannot be used at start: the device runs on a disabled journal, says
    /// so (STORAGE ERROR), and writes the ride's file from memory when the directory can take it.
    @Test func aDisabledJournalStillRidesAndWritesTheFileFromMemory() throws {
        let healthy = try Self.healthyRecords(seconds: 15)
        let rig = FaultRig(disabled: true)
        #expect(rig.device.storageCondition == .failing)
        #expect(rig.alerts().contains("STORAGE ERROR"), "told at start: \(rig.alerts())")
        #expect(rig.logged("journal disabled"))
        rig.files.mode = .readOnly
        rig.start()
        rig.ride(seconds: 15)
        rig.end()
        #expect(!rig.alerts().contains("RIDE SAVED"))
        rig.files.mode = .healthy
        rig.wait(seconds: 3)
        #expect(try rig.fitRecords() == healthy)
        #expect(rig.alerts().last == "RIDE SAVED")
        #expect(rig.journal.writer.pendingCount == 0, "memory is given back once the file holds the ride")
        // The next ride starts from scratch and is written as well.
        _ = rig.device.control("dismiss", at: rig.now, status: { "{}" })
        rig.start()
        rig.ride(seconds: 5)
        rig.end()
        #expect(rig.files.fitFiles.count == 2)
    }

    /// The journal cannot be read back when the ride ends: no file from part of it (the journal
    /// would then let the rest go); the gather is retried and the whole ride written later.
    @Test func aJournalThatCannotBeReadBackIsNotWrittenFromPartOfIt() throws {
        let healthy = try Self.healthyRecords(seconds: 12)
        let rig = FaultRig()
        rig.start()
        rig.ride(seconds: 12)
        rig.storage.failReads = true
        rig.end()
        #expect(rig.files.fitFiles.isEmpty)
        #expect(!rig.alerts().contains("RIDE SAVED"))
        #expect(rig.alerts().contains("RIDE NOT SAVED"))
        rig.storage.failReads = false
        rig.wait(seconds: 3)
        #expect(try rig.fitRecords() == healthy)
        #expect(rig.alerts().last == "RIDE SAVED")
    }

    /// On the board the end of a ride is written in steps, one per loop turn: a button between
    /// two steps is served at once, and "RIDE SAVED" comes with the last step.
    @Test func theEndOfARideIsWrittenInStepsBetweenInputs() throws {
        let rig = FaultRig(steps: true)
        rig.start()
        rig.ride(seconds: 10)
        rig.end()
        #expect(rig.files.fitFiles.isEmpty, "nothing written inside the input that ended the ride")
        #expect(rig.device.rideFileDeadline == rig.now)
        var steps = 0
        var pageServed = false
        while rig.device.rideFileDeadline != nil && steps < 100 {
            rig.device.workOnRideFiles(at: rig.now)
            steps += 1
            #expect(!rig.alerts().contains("RIDE SAVED") || rig.device.rideFilesPending == 0)
            if steps == 3 {
                let before = rig.device.core.screen.mode
                rig.device.buttonEdge(.page, pressed: true, at: rig.now)
                rig.device.buttonEdge(.page, pressed: false, at: rig.now.advanced(byMs: 80))
                pageServed = rig.device.core.screen.mode != before
            }
        }
        #expect(pageServed, "a button between two steps changes the page at once")
        #expect(steps == 1 + RideFileWrite.stepsPerWrite, "gather, then the writer's steps: \(steps)")
        #expect(rig.files.fitFiles.count == 1)
        #expect(rig.alerts().last == "RIDE SAVED")
    }

    /// A ride deleted from the summary before its file could be written: nothing is written
    /// later, and the journal lets it go.
    @Test func aRideDeletedBeforeItsFileIsWrittenIsNotWrittenLater() throws {
        let rig = FaultRig()
        rig.start()
        rig.ride(seconds: 5)
        rig.files.mode = .full
        rig.end()
        #expect(rig.device.rideFilesPending == 1)
        rig.device.command(.discard, at: rig.now)
        #expect(rig.device.rideFilesPending == 0)
        rig.files.mode = .healthy
        rig.wait(seconds: 10)
        #expect(rig.files.fitFiles.isEmpty)
    }
}
