import AppCore
import BoardIO
import DeviceAdapters
import Device
import Glibc
import Journal
import RideModel
import Testing

/// The real directory-backed storage under a temporary directory.
struct DirectoryStorageTests {
    static func tempDir() -> String {
        var template = Array("/tmp/journal-test-XXXXXX".utf8CString)
        let p = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        return String(cString: p!)
    }

    static func removeTree(_ path: String) {
        if let names = try? SegmentDirectory(path: path, segmentBytes: 8192).list() {
            for n in names { unlink(path + "/" + n) }
        }
        rmdir(path)
    }

    @Test func segmentsArePreallocatedWrittenSyncedAndReadBack() throws {
        let dir = Self.tempDir()
        defer { Self.removeTree(dir) }
        let fs = try SegmentDirectory(path: dir, segmentBytes: 8192)
        let storage = FileSystemSegmentStorage(fs)
        try storage.create(1)
        var st = stat()
        #expect(stat(dir + "/seg-00000001.jnl", &st) == 0)
        #expect(st.st_size == 8192)
        #expect(st.st_blocks * 512 >= 8192, "not preallocated: \(st.st_blocks) blocks")
        let data: [UInt8] = Array(1...200)
        try data.withUnsafeBytes { try storage.write(1, at: 100, $0) }
        try storage.sync(1)
        var back = try storage.read(1)
        #expect(Array(back[100..<300]) == data)
        #expect(back[0..<100].allSatisfy { $0 == 0 })
        try storage.truncate(1, at: 150)
        back = try storage.read(1)
        #expect(back.count == 8192)
        #expect(Array(back[100..<150]) == Array(data[0..<50]))
        #expect(back[150...].allSatisfy { $0 == 0 })
        #expect(try storage.list() == [1])
        // Creating an existing segment fails instead of clobbering it.
        #expect(throws: StorageError.self) { try storage.create(1) }
        let copy = try storage.copyAside(1)
        let aside = try storage.setAside(1)
        #expect(copy == "seg-00000001.jnl.damaged")
        #expect(aside == "seg-00000001.jnl.aside")
        #expect(try storage.list().isEmpty)
        #expect(try fs.list() == ["seg-00000001.jnl.aside", "seg-00000001.jnl.damaged"])
        #expect(fs.syncCount == 1 && fs.writeCount == 1)
        #expect((storage.availableBytes() ?? 0) > 0)
    }

    @Test func aMissingOrReadOnlyDirectoryIsATypedErrorThatSaysWhatToDo() throws {
        do {
            _ = try SegmentDirectory(path: "/nonexistent/journal", segmentBytes: 8192)
            Issue.record("opened a missing directory")
        } catch {
            #expect(error.isNotFound)
            #expect(error.description.contains("create it"))
        }
        let dir = Self.tempDir()
        defer { chmod(dir, 0o755); Self.removeTree(dir) }
        chmod(dir, 0o500)
        if geteuid() == 0 {
            // root ignores permission bits; a read-only directory is still refused when the
            // file system is read-only (/proc is).
            #expect(throws: SystemError.self) { try SegmentDirectory(path: "/proc/self", segmentBytes: 8192) }
        } else {
            #expect(throws: SystemError.self) { try SegmentDirectory(path: dir, segmentBytes: 8192) }
        }
        // A file where a directory should be.
        let file = dir + "/not-a-dir"
        chmod(dir, 0o755)
        let fd = open(file, O_CREAT | O_WRONLY, 0o644); close(fd)
        #expect(throws: SystemError.self) { try SegmentDirectory(path: file, segmentBytes: 8192) }
        unlink(file)
    }

    /// The whole journal on a real directory: ride, "crash" (drop the process state), recover.
    @Test func aRideRecoversFromARealDirectory() throws {
        let dir = Self.tempDir()
        defer { Self.removeTree(dir) }
        let storage = FileSystemSegmentStorage(try SegmentDirectory(path: dir, segmentBytes: 8 * 1024))
        var appended: [RideRecord] = []
        do {
            let opened = FlashJournal.open(storage: storage, randomSeed: 1, deviceNow: .zero)
            var core = opened.core
            let inputs = Script.inputs(seconds: 400)
            for input in inputs.prefix(inputs.count / 2) {
                core.handle(input)
                while let e = core.drainEffect() {
                    if case .journal(let r) = e { appended.append(r) }
                    _ = opened.journal.apply(e, at: input.instant)
                }
                opened.journal.tick(at: input.instant)
            }
            #expect(opened.journal.counters.syncs > 50)
            // The process dies here: nothing more is written.
        }
        #expect(try storage.list().count >= 2)
        let reopened = FileSystemSegmentStorage(try SegmentDirectory(path: dir, segmentBytes: 8 * 1024))
        let (journal, core, report) = FlashJournal.open(storage: reopened, randomSeed: 2, deviceNow: ms(100))
        #expect(report.recoveredRide != nil)
        #expect(core.state == .running || core.state == .paused)
        let records = journal.records(of: report.recoveredRide!)
        // Everything appended was synced at its tick except at most the last second's series.
        let lastSample = appended.lastIndex { if case .sample = $0 { true } else { false } }!
        #expect(records.count > lastSample)
        #expect(isPrefix(records, of: appended))
    }
}

extension DirectoryStorageTests {
    /// ENOSPC from the card is a typed `.noSpace` error, and the journal reports `.full` and
    /// keeps the records: a segment file that is a link to /dev/full fails every write that way.
    @Test func diskFullFromTheKernelIsReportedAsFull() throws {
        guard access("/dev/full", W_OK) == 0 else { return }
        let dir = Self.tempDir()
        defer { Self.removeTree(dir) }
        let fs = try SegmentDirectory(path: dir, segmentBytes: 8192)
        let storage = FileSystemSegmentStorage(fs)
        #expect(symlink("/dev/full", dir + "/seg-00000001.jnl") == 0)
        var caught: StorageError?
        [UInt8](repeating: 1, count: 64).withUnsafeBytes { b in
            do throws(StorageError) { try storage.write(1, at: 0, b) } catch { caught = error }
        }
        #expect(caught?.kind == .noSpace, "\(String(describing: caught))")
        #expect(caught?.message.contains("delete old rides") == true)
        // A writer whose next segment cannot be created keeps its records, reports the
        // condition and will retry.
        unlink(dir + "/seg-00000001.jnl")
        let writer = JournalWriter(storage: storage, after: JournalScan.scan(storage, repair: true))
        #expect(symlink("/dev/full", dir + "/seg-00000001.jnl") == 0)
        writer.append(.metadata(key: "k", value: "v"), at: ms(0))
        #expect(!writer.commit(at: ms(0)))
        #expect(writer.pendingCount == 1)
        #expect(writer.health != .ok)
    }
}
