import AppCore
import BoardIO
import Device
@testable import DeviceAdapters
import Foundation
import Journal
import RideModel
import Testing

/// A segment's creation and compaction's removals through io_uring (issue 17 item 6): the ring's
/// openat, fallocate and unlinkat, and `BoardSegmentStorage` over them on a real directory,
/// failures included, and the blocking fallback.
struct SegmentRingTests {
    func temporaryDirectory() throws -> String {
        let d = FileManager.default.temporaryDirectory.appendingPathComponent("segring-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        return d
    }

    func waitReadable(_ fd: FileDescriptor, timeoutMs: Int32 = 5_000) -> Bool {
        var p = pollfd(fd: fd.rawValue, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, timeoutMs) == 1
    }

    /// Takes `count` completions from the ring, waiting for its eventfd.
    func reap(_ ring: SyncRing, _ count: Int) -> [SyncRing.Completion] {
        var out: [SyncRing.Completion] = []
        for _ in 0..<(count * 4) where out.count < count {
            if let c = ring.reap() { out.append(c); continue }
            guard waitReadable(ring.completionDescriptor) else { break }
        }
        return out
    }

    func size(_ path: String) -> Int? {
        var st = stat()
        return stat(path, &st) == 0 ? Int(st.st_size) : nil
    }

    /// A 64 KiB tmpfs on a new directory (a full card without filling the host's disk: tmpfs
    /// refuses a larger fallocate up front). Needs root (CI runs as root); fails saying so.
    func smallFileSystem() throws -> String {
        let dir = try temporaryDirectory()
        guard mount("tmpfs", dir, "tmpfs", 0, "size=64k") == 0 else {
            let e = errno
            try? FileManager.default.removeItem(atPath: dir)
            throw SystemError(errno: e, call: "mount", context: "a 64 KiB tmpfs for the full-card tests needs root (CI runs them as root)")
        }
        return dir
    }

    func removeFileSystem(_ dir: String) {
        _ = umount2(dir, Int32(MNT_DETACH))
        try? FileManager.default.removeItem(atPath: dir)
    }

    /// More than `smallFileSystem()` holds.
    let moreThanFree = 1 << 20

    func directoryFD(_ dir: String) -> FileDescriptor { FileDescriptor(rawValue: open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) }

    // MARK: The ring's file operations

    @Test func ringOpensAllocatesSyncsAndUnlinks() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let ring = try SyncRing()
        #expect(ring.runsFileOperations, "Debian 12's kernel (6.1) runs io_uring openat, fallocate and unlinkat")
        let dfd = directoryFD(dir)
        defer { dfd.close() }

        try ring.openFile(in: dfd, "a.jnl", token: 7)
        let opened = reap(ring, 1)
        #expect(opened.map(\.token) == [7])
        let fd = try #require(opened.first.flatMap { $0.errno == nil ? FileDescriptor(rawValue: $0.result) : nil }, "\(opened)")
        defer { fd.close() }
        #expect(fd.rawValue >= 0 && size(dir + "/a.jnl") == 0)
        #expect(fcntl(fd.rawValue, F_GETFD) & FD_CLOEXEC != 0)

        try ring.allocateAndSync(fd, bytes: 65_536, directory: dfd, tokens: (1, 2, 3))
        let chain = reap(ring, 3)
        #expect(Set(chain.map(\.token)) == [1, 2, 3])
        #expect(chain.allSatisfy { $0.errno == nil }, "\(chain)")
        #expect(size(dir + "/a.jnl") == 65_536)
        #expect(ring.inFlight == 0)

        // The name is taken: EEXIST, nothing touched.
        try ring.openFile(in: dfd, "a.jnl", token: 8)
        #expect(reap(ring, 1).first?.errno == EEXIST)
        #expect(size(dir + "/a.jnl") == 65_536)

        try ring.unlink(in: dfd, "a.jnl", token: 9)
        #expect(reap(ring, 1).first.map { $0.token == 9 && $0.errno == nil } == true)
        #expect(size(dir + "/a.jnl") == nil)
        try ring.unlink(in: dfd, "a.jnl", token: 10)
        #expect(reap(ring, 1).first?.errno == ENOENT)
        #expect(ring.submitted == 7 && ring.completed == 7)
    }

    @Test func aFailedStepCancelsTheRestOfItsChain() throws {
        let dir = try smallFileSystem()
        defer { removeFileSystem(dir) }
        let ring = try SyncRing()
        let dfd = directoryFD(dir)
        defer { dfd.close() }
        try ring.openFile(in: dfd, "big.jnl", token: 1)
        let fd = FileDescriptor(rawValue: try #require(reap(ring, 1).first).result)
        defer { fd.close() }
        try ring.allocateAndSync(fd, bytes: moreThanFree, directory: dfd, tokens: (11, 12, 13))
        let chain = reap(ring, 3).sorted { $0.token < $1.token }
        #expect(chain.map(\.token) == [11, 12, 13])
        #expect(chain.first?.errno == ENOSPC, "\(chain)")
        // Whether the kernel cancels the rest of the chain after a failed fallocate differs by
        // version (6.1 does; later ones run them): either way they ran after it, or not at all.
        #expect(chain.dropFirst().allSatisfy { $0.errno == nil || $0.errno == ECANCELED }, "\(chain)")
    }

    @Test func aNameTooLongForTheRingIsRefusedBeforeSubmission() throws {
        let ring = try SyncRing()
        let dfd = directoryFD(FileManager.default.temporaryDirectory.path)
        defer { dfd.close() }
        #expect(throws: SystemError.self) { try ring.openFile(in: dfd, String(repeating: "x", count: 200), token: 1) }
        #expect(ring.inFlight == 0 && ring.submitted == 0)
    }

    @Test func aFullRingRefusesAndStaysUsable() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let ring = try SyncRing()
        let dfd = directoryFD(dir)
        defer { dfd.close() }
        for i in 0..<Int(SyncRing.entriesMax) { try ring.sync(dfd, dataOnly: false, token: UInt64(i)) }
        #expect(throws: SystemError.self) { try ring.allocateAndSync(dfd, bytes: 1, directory: dfd, tokens: (1, 2, 3)) }
        #expect(reap(ring, Int(SyncRing.entriesMax)).count == Int(SyncRing.entriesMax))
        try ring.unlink(in: dfd, "none", token: 99)
        #expect(reap(ring, 1).first.map { $0.token == 99 && $0.errno == ENOENT } == true, "the refused chain left nothing behind")
    }

    // MARK: BoardSegmentStorage

    func storage(_ dir: String, segmentBytes: Int = 65_536, blockingSyncs: String? = nil, blockingFileOperations: Bool = false) throws -> BoardSegmentStorage {
        BoardSegmentStorage(try SegmentDirectory(path: dir, segmentBytes: segmentBytes), blockingSyncs: blockingSyncs,
                            blockingFileOperations: blockingFileOperations)
    }

    /// The completions the journal would take, waiting on the eventfd (as the run loop does).
    func completions(_ s: BoardSegmentStorage, _ count: Int) -> [SyncCompletion] {
        var out: [SyncCompletion] = []
        for _ in 0..<(count * 8) where out.count < count {
            if let c = s.nextCompletion() { out.append(c); continue }
            guard let ring = s.ring, waitReadable(ring.completionDescriptor) else { break }
        }
        return out
    }

    /// Waits until the background removals are done.
    func drainRemovals(_ s: BoardSegmentStorage) {
        for _ in 0..<64 where s.removalsOutstanding > 0 {
            _ = s.nextCompletion()
            if s.removalsOutstanding > 0, let ring = s.ring { _ = waitReadable(ring.completionDescriptor, timeoutMs: 2_000) }
        }
    }

    @Test func creationRunsOnTheRingAndCompletesOnce() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let s = try storage(dir)
        let ring = try #require(s.ring)
        #expect(!s.fileOperationsBlock)
        try s.beginCreate(3, token: 42)
        // Only the openat was submitted: the loop did not create or preallocate the file.
        #expect(ring.submitted == 1)
        let c = completions(s, 1)
        #expect(c == [SyncCompletion(token: 42)])
        #expect(ring.submitted == 4, "openat, then fallocate → fsync → fsync of the directory")
        #expect(size(dir + "/" + SegmentName.name(3)) == 65_536)
        // The directory writes through the descriptor the ring opened.
        let header: [UInt8] = [1, 2, 3, 4]
        try header.withUnsafeBytes { try s.write(3, at: 0, $0) }
        try s.beginSync(3, token: 43)
        #expect(completions(s, 1) == [SyncCompletion(token: 43)])
        #expect(Array(try s.read(3).prefix(4)) == header)
        #expect(s.nextCompletion() == nil && s.strayCompletions == 0)
    }

    @Test func aCreationWithoutSpaceCompletesAsNoSpaceAndIsRemoved() throws {
        let dir = try smallFileSystem()
        defer { removeFileSystem(dir) }
        let s = try storage(dir, segmentBytes: moreThanFree)
        try s.beginCreate(1, token: 5) // does not throw: the card answers later
        let c = try #require(completions(s, 1).first)
        #expect(c.token == 5)
        #expect(c.error?.kind == .noSpace, "\(String(describing: c.error))")
        #expect(c.error?.message.contains("delete old rides") == true)
        #expect(s.failedSyncs >= 1)
        // The journal gives the half-made segment up (JournalWriter.completed): removed in the background.
        #expect(size(dir + "/" + SegmentName.name(1)) == 0)
        try s.remove(1)
        drainRemovals(s)
        #expect(size(dir + "/" + SegmentName.name(1)) == nil)
        #expect(s.removalFailures == 0 && s.removalsBegun == 1)
    }

    @Test func aCreationThatFailsWithEIOReachesTheJournalAsAnIOError() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let s = try storage(dir)
        // The card fails the preallocation; the linked fsyncs are cancelled (their completions
        // may come in any order): the journal sees one completion, an I/O error.
        for order in [[EIO, ECANCELED, ECANCELED], [ECANCELED, ECANCELED, EIO]] {
            s.creations.append(.init(token: 9, id: 2, left: 3))
            let steps: [BoardSegmentStorage.Step] = order[0] == EIO ? [.allocate, .fileSync, .directorySync] : [.fileSync, .directorySync, .allocate]
            for (step, e) in zip(steps, order) {
                s.take(SyncRing.Completion(token: BoardSegmentStorage.ringToken(9, step), errno: e))
            }
            let c = try #require(s.nextCompletion())
            #expect(c.token == 9)
            #expect(c.error?.kind == .io, "\(String(describing: c.error))")
            #expect(c.error?.message.contains("preallocating") == true)
            #expect(s.creations.isEmpty && s.nextCompletion() == nil)
        }
        // The directory's fsync failing alone.
        s.creations.append(.init(token: 10, id: 3, left: 3))
        for (step, e) in [(BoardSegmentStorage.Step.allocate, Int32?.none), (.fileSync, nil), (.directorySync, EIO)] {
            s.take(SyncRing.Completion(token: BoardSegmentStorage.ringToken(10, step), errno: e))
        }
        let c = try #require(s.nextCompletion())
        #expect(c.error?.kind == .io && c.error?.message.contains("journal directory") == true)
    }

    @Test func aNameThatIsTakenIsNeverRemovedByTheGiveUp() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/" + SegmentName.name(4)
        try Data("someone else's".utf8).write(to: URL(fileURLWithPath: path))
        let s = try storage(dir)
        try s.beginCreate(4, token: 1)
        let c = try #require(completions(s, 1).first)
        #expect(c.error != nil, "O_EXCL: the name is taken")
        try s.remove(4) // what JournalWriter.completed does with a failed creation
        drainRemovals(s)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "someone else's")
    }

    @Test func compactionUnlinksInTheBackgroundThenSyncsTheDirectoryOnce() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let s = try storage(dir, segmentBytes: 8_192)
        let ring = try #require(s.ring)
        let count = 2 * Int(SyncRing.entriesMax) // more than the ring holds at once
        for id in 1...UInt32(count) { try s.create(id) }
        #expect(try s.list().count == count)
        let before = ring.submitted
        for id in 1...UInt32(count) { try s.remove(id) }
        #expect(ring.inFlight <= Int(SyncRing.entriesMax) - BoardSegmentStorage.journalEntriesReserved,
                "room kept for the journal's own operations")
        #expect(s.removalsOutstanding > 0)
        // A journal sync goes on meanwhile.
        try s.create(100)
        try s.beginSync(100, token: 77)
        var journal: [SyncCompletion] = []
        for _ in 0..<200 where s.removalsOutstanding > 0 || journal.isEmpty {
            if let c = s.nextCompletion() { journal.append(c); continue }
            _ = waitReadable(ring.completionDescriptor, timeoutMs: 2_000)
        }
        #expect(journal == [SyncCompletion(token: 77)], "removals' completions are the storage's own")
        #expect(s.removalsOutstanding == 0)
        #expect(try s.list() == [100])
        #expect(ring.submitted - before == UInt64(count) + 2, "an unlink each, one directory fsync, the journal's sync")
        #expect(s.removalsBegun == UInt64(count) && s.removalFailures == 0 && s.strayCompletions == 0)
    }

    @Test func aFailedUnlinkIsCountedAndSaid() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let s = try storage(dir, segmentBytes: 8_192)
        s.take(SyncRing.Completion(token: BoardSegmentStorage.ringToken(6, .unlink), errno: EIO))
        #expect(s.removalFailures == 1)
        #expect(s.lastRemovalError?.contains(SegmentName.name(6)) == true)
        #expect(s.nextCompletion() == nil, "nothing for the journal")
    }

    @Test func withoutTheRingsFileOperationsCreationAndRemovalBlockAsBefore() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let s = try storage(dir, blockingFileOperations: true)
        let ring = try #require(s.ring)
        #expect(s.fileOperationsBlock && s.defersSyncs)
        try s.beginCreate(1, token: 3)
        #expect(size(dir + "/" + SegmentName.name(1)) == 65_536, "preallocated on the loop")
        #expect(ring.submitted == 2, "its two fsyncs through the ring")
        #expect(completions(s, 1) == [SyncCompletion(token: 3)])
        try s.remove(1)
        #expect(size(dir + "/" + SegmentName.name(1)) == nil && s.removalsOutstanding == 0)

        let blocking = try storage(dir, blockingSyncs: "test: io_uring refused")
        #expect(blocking.ring == nil && blocking.fileOperationsBlock)
        try blocking.beginCreate(2, token: 1)
        #expect(size(dir + "/" + SegmentName.name(2)) == 65_536)
        try blocking.remove(2)
        #expect(size(dir + "/" + SegmentName.name(2)) == nil)
    }

    /// A whole ride over small segments: every rollover and the compaction after the ride's file
    /// is durable go through the ring, and a fresh scan reads every record back.
    @Test func aRideRollsOverAndCompactsThroughTheRing() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let s = try storage(dir, segmentBytes: JournalFormat.segmentBytesMin)
        let ring = try #require(s.ring)
        let opened = FlashJournal.open(storage: s, configuration: AppConfiguration(), randomSeed: 1, deviceNow: .zero,
                                       wallNow: nil, policy: CommitPolicy())
        let journal = opened.journal
        var core = opened.core
        var appended = 0
        func settle(_ t: Int64) {
            // As the run loop does every turn: a 1 Hz record (an elapsed second: no sensor here)
            // is committed at the tick that took it.
            journal.tick(at: ms(t))
            for _ in 0..<50 where journal.writer.syncInFlight || journal.writer.pendingCount > 0 {
                if !waitReadable(ring.completionDescriptor, timeoutMs: 5_000) { break }
                journal.syncProgress(at: ms(t))
            }
        }
        var inputs = [AppInput.button(ButtonEvent(.startPause, .down, at: ms(0))), .button(ButtonEvent(.startPause, .up, at: ms(50)))]
        for k in 1...1_500 {
            // A lap every second: records enough for several 8 KiB segments.
            do {
                inputs.append(.button(ButtonEvent(.lap, .down, at: ms(Int64(k) * 1_000 - 300))))
                inputs.append(.button(ButtonEvent(.lap, .up, at: ms(Int64(k) * 1_000 - 250))))
            }
            inputs.append(.tick(ms(Int64(k) * 1_000)))
        }
        for input in inputs {
            core.handle(input)
            while let e = core.drainEffect() {
                if case .journal = e { appended += 1 }
                _ = journal.apply(e, at: input.instant)
            }
            settle(input.instant.milliseconds(since: .zero))
        }
        #expect(core.state == .running)
        #expect(Int(journal.counters.recordsDurable) == appended)
        #expect(journal.counters.segmentsCreated >= 2, "a rollover: \(journal.counters)")
        #expect(s.creations.isEmpty && s.slowestCreateNs > 0)
        let reread = JournalScan.scan(FileSystemSegmentStorage(JournalDirectoryFiles(try SegmentDirectory(path: dir, segmentBytes: JournalFormat.segmentBytesMin))), repair: false)
        let ride = try #require(reread.rides(withRecords: true).rides.first)
        #expect(ride.records.count == appended)

        // The ride's file is durable: its segments are compacted, in the background.
        let segments = try s.list().count
        journal.writer.markRideFileDurable(ride.rideID, at: ms(1_600_000))
        settle(1_600_000)
        drainRemovals(s)
        #expect(s.removalsBegun >= UInt64(segments - 1), "\(s.removalsBegun) of \(segments)")
        #expect(s.removalFailures == 0)
        #expect(try s.list().count <= 1)
    }
}
