import AppCore
import BoardIO
import Device
import DeviceAdapters
import Glibc
import Journal
import RideModel
import Testing

/// A card whose file system went read-only (ext4 errors=remount-ro after the card failed) heals
/// only by a fresh mount: unmount, fsck, mount again. A descriptor the app still holds on the old
/// mount keeps the aborted file system alive (umount says EBUSY, a lazy one hands the same
/// read-only superblock to the new mount), so after a failure the journal must close everything it
/// holds and reopen by path (issue 17). Here the fresh mount is a new directory at the same path,
/// its files copied to new inodes: a descriptor still held reaches the old files, a reopen by path
/// the new ones.
struct CardHealTests {
    /// The real journal directory (`JournalDirectoryFiles` over `SegmentDirectory`) behind a card
    /// that can go read-only: while `readOnly` every change fails with EROFS, as on ext4 after it
    /// aborted; reads still work. Failures are classified by the real directory.
    final class ReadOnlyCard: SegmentFileSystem {
        let files: JournalDirectoryFiles
        var readOnly = false
        var refused = 0
        init(_ files: JournalDirectoryFiles) { self.files = files }

        func check(_ call: String) throws {
            guard readOnly else { return }
            refused += 1
            throw SystemError(errno: EROFS, call: call, context: files.directory.path)
        }
        var segmentBytes: Int { files.segmentBytes }
        func list() throws -> [String] { try files.list() }
        func create(_ name: String) throws { try check("open"); try files.create(name) }
        func write(_ name: String, at offset: Int, _ bytes: UnsafeRawBufferPointer) throws {
            try check("pwrite")
            try files.write(name, at: offset, bytes)
        }
        func sync(_ name: String) throws { try check("fdatasync"); try files.sync(name) }
        func read(_ name: String) throws -> [UInt8] { try files.read(name) }
        func zero(_ name: String, from offset: Int) throws { try check("ftruncate"); try files.zero(name, from: offset) }
        func remove(_ name: String) throws { try check("unlink"); try files.remove(name) }
        func rename(_ name: String, toFreeNameLike newBase: String) throws -> String {
            try check("rename")
            return try files.rename(name, toFreeNameLike: newBase)
        }
        func copy(_ name: String, toFreeNameLike newBase: String) throws -> String {
            try check("open")
            return try files.copy(name, toFreeNameLike: newBase)
        }
        func availableBytes() -> Int? { files.availableBytes() }
        func storageError(_ error: any Error, _ doing: String) -> StorageError { files.storageError(error, doing) }
    }

    /// This process's descriptors on files under `dir` (readlink of /proc/self/fd/*).
    static func descriptorsOpen(under dir: String) -> Int {
        guard let names = try? AtomicFiles.list("/proc/self/fd") else { return -1 }
        var n = 0
        var buffer = [CChar](repeating: 0, count: 4096)
        for name in names {
            let len = readlink("/proc/self/fd/" + name, &buffer, buffer.count - 1)
            guard len > 0 else { continue }
            buffer[len] = 0
            let target = String(cString: buffer)
            if target == dir || target.hasPrefix(dir + "/") { n += 1 }
        }
        return n
    }

    /// The card taken out and put back after fsck: `dir` renamed to `dir.old`, a new `dir` with
    /// copies of its files (new inodes, as on a fresh mount). Returns the old path.
    static func remount(_ dir: String) throws -> String {
        let old = dir + ".old"
        #expect(rename(dir, old) == 0)
        #expect(mkdir(dir, 0o755) == 0)
        for name in try AtomicFiles.list(old) {
            try AtomicFiles.write(dir + "/" + name, try AtomicFiles.readAll(old + "/" + name))
        }
        return old
    }

    static func removeAll(_ dir: String) {
        if let names = try? AtomicFiles.list(dir) { for n in names { unlink(dir + "/" + n) } }
        rmdir(dir)
    }

    /// Runs `inputs` through the core and the journal; returns the journal records appended.
    static func feed(_ inputs: ArraySlice<AppInput>, _ core: inout AppCore, _ journal: FlashJournal) -> [RideRecord] {
        var appended: [RideRecord] = []
        for input in inputs {
            core.handle(input)
            while let e = core.drainEffect() {
                if case .journal(let r) = e { appended.append(r) }
                _ = journal.apply(e, at: input.instant)
            }
            journal.tick(at: input.instant)
        }
        return appended
    }

    /// The card goes read-only mid-ride: the journal keeps the records in memory and closes every
    /// descriptor it held on the card; the card is mounted afresh: the journal writes on by path,
    /// and the journal on the new mount holds the whole ride, the part recorded during the fault
    /// included. Before the fix the segment stayed open: the retries wrote through it into the
    /// old file system, and the fresh mount lacked everything from the fault on.
    @Test func aJournalLetsGoOfAReadOnlyCardAndWritesOnOnceItIsMountedAfresh() throws {
        let dir = DirectoryStorageTests.tempDir()
        var old: String?
        defer {
            Self.removeAll(dir)
            if let old { Self.removeAll(old) }
        }
        let directory = try SegmentDirectory(path: dir, segmentBytes: 8 * 1024)
        let card = ReadOnlyCard(JournalDirectoryFiles(directory))
        let storage = FileSystemSegmentStorage(card)
        let opened = FlashJournal.open(storage: storage, randomSeed: 1, deviceNow: .zero)
        let journal = opened.journal
        var core = opened.core
        let inputs = Script.inputs(seconds: 240)
        let third = inputs.count / 3

        var appended = Self.feed(inputs[..<third], &core, journal)
        #expect(journal.condition == .ok)
        #expect(directory.descriptorsHeld > 0, "the segment being written stays open while the card works")
        #expect(Self.descriptorsOpen(under: dir) == directory.descriptorsHeld)

        card.readOnly = true
        appended += Self.feed(inputs[third..<(2 * third)], &core, journal)
        #expect(journal.condition == .failing)
        #expect(card.refused > 1, "the journal retried")
        #expect(journal.writer.pendingCount > 0, "the records recorded during the fault wait in memory")
        #expect(directory.descriptorsHeld == 0, "nothing held on the failed card")
        #expect(Self.descriptorsOpen(under: dir) == 0)
        #expect(directory.releases > 0)

        old = try Self.remount(dir)
        card.readOnly = false
        appended += Self.feed(inputs[(2 * third)...], &core, journal)
        let end = inputs.last!.instant
        for s in 1...3 { journal.tick(at: end.advanced(byMs: Int64(s) * 1000)) }
        #expect(journal.condition == .ok)
        #expect(journal.writer.pendingCount == 0)
        #expect(Self.descriptorsOpen(under: old!) == 0, "nothing written to the old mount")
        #expect(Self.descriptorsOpen(under: dir) == directory.descriptorsHeld)

        // What the fresh mount holds: every record of the ride, in order.
        let reread = FlashJournal.open(storage: FileSystemSegmentStorage(JournalDirectoryFiles(try SegmentDirectory(path: dir, segmentBytes: 8 * 1024))),
                                       randomSeed: 2, deviceNow: .zero)
        let ride = try #require(appended.first.flatMap { if case .header(let h) = $0 { h.rideID } else { nil } })
        let records = reread.journal.records(of: ride)
        #expect(records.count == appended.count)
        let firstDifference = zip(records, appended).enumerated().first { $0.element.0 != $0.element.1 }?.offset
        #expect(firstDifference == nil && records.count == appended.count,
                "the fresh mount holds \(records.count) of \(appended.count) records, differing from #\(firstDifference ?? records.count)")
    }

    /// Every descriptor is closed, counted, and the next write opens the segment again by path.
    @Test func releasedDescriptorsAreReopenedByPath() throws {
        let dir = DirectoryStorageTests.tempDir()
        defer { Self.removeAll(dir) }
        let directory = try SegmentDirectory(path: dir, segmentBytes: 8192)
        try directory.create("a")
        try directory.create("b")
        _ = try directory.directoryDescriptor()
        #expect(directory.descriptorsHeld == 3)
        #expect(Self.descriptorsOpen(under: dir) == 3)
        #expect(directory.releaseDescriptors() == 3)
        #expect(directory.releaseDescriptors() == 0)
        #expect(directory.descriptorsHeld == 0 && Self.descriptorsOpen(under: dir) == 0)
        #expect(directory.descriptorsReleased == 3 && directory.releases == 1)
        // The file at the path now is a different one (a fresh mount): the write reaches it.
        unlink(dir + "/a")
        try AtomicFiles.write(dir + "/a", [UInt8](repeating: 0, count: 8192))
        let bytes: [UInt8] = [1, 2, 3]
        try bytes.withUnsafeBytes { try directory.write("a", at: 10, $0) }
        try directory.sync("a")
        #expect(Array(try AtomicFiles.readAll(dir + "/a")[10..<13]) == bytes)
        #expect(directory.descriptorsHeld == 1)
    }

    /// The board's storage (`BoardSegmentStorage`, syncs through io_uring where the kernel allows)
    /// releases on its own failure paths too: a creation refused by the file system (here: the
    /// segment exists) leaves nothing open, and the board is told how many it closed.
    @Test func theBoardStorageReleasesOnAFailedCreation() throws {
        let dir = DirectoryStorageTests.tempDir()
        defer { Self.removeAll(dir) }
        let storage = BoardSegmentStorage(try SegmentDirectory(path: dir, segmentBytes: 8192))
        var told: [(Int, StorageError)] = []
        storage.onDescriptorsReleased = { told.append(($0, $1)) }
        try storage.create(1)
        _ = try storage.directory.directoryDescriptor()
        #expect(storage.directory.descriptorsHeld == 2)
        // Refused at once, or (creation through io_uring) in its completion.
        var failed = false
        do { try storage.beginCreate(1, token: 7) } catch { failed = true }
        if !failed { failed = storage.waitForCompletion()?.error != nil }
        #expect(failed)
        #expect(storage.directory.descriptorsHeld == 0)
        #expect(Self.descriptorsOpen(under: dir) == 0)
        #expect(told.count == 1 && told.first?.0 == 2)
        // Working again: the next sync opens the segment by path.
        let bytes: [UInt8] = [9, 9]
        try bytes.withUnsafeBytes { try storage.write(1, at: 100, $0) }
        try storage.sync(1)
        #expect(storage.directory.descriptorsHeld == 1)
    }
}
