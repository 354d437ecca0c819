import BoardIO
@testable import DeviceAdapters
import Foundation
import Journal
import Testing

/// A segment's creation chain (fallocate → fsync(file) → fsync(directory), linked) names its
/// descriptors, and since Linux 5.18 a linked step looks its descriptor up only when it runs.
/// A storage failure elsewhere releases every descriptor the journal holds on the card: before
/// issue 27 that closed the chain's too, and the next open could reuse the number, so the
/// chain's fsync would run on another file. They now stay open, on the same files, until the
/// chain's completions are reaped.
struct RingDescriptorLifetimeTests {
    func temporaryDirectory() throws -> String {
        let d = FileManager.default.temporaryDirectory.appendingPathComponent("ringfd-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        return d
    }

    func waitReadable(_ fd: FileDescriptor) -> Bool {
        var p = pollfd(fd: fd.rawValue, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, 5_000) == 1
    }

    func inode(_ fd: FileDescriptor) -> ino_t? {
        var st = stat()
        return fstat(fd.rawValue, &st) == 0 ? st.st_ino : nil
    }

    func inode(_ path: String) -> ino_t? {
        var st = stat()
        return stat(path, &st) == 0 ? st.st_ino : nil
    }

    @Test func aChainsDescriptorsOutliveAReleaseUntilItIsReaped() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let s = BoardSegmentStorage(try SegmentDirectory(path: dir, segmentBytes: 65_536))
        let ring = try #require(s.ring, "io_uring is refused here: \(s.fallbackReason ?? "?")")
        try #require(!s.fileOperationsBlock, "the kernel lacks io_uring openat/fallocate")
        try s.beginCreate(3, token: 42)
        // The openat's completion, taken by hand: taking it submits the linked chain.
        var opened: SyncRing.Completion?
        for _ in 0..<8 where opened == nil {
            opened = ring.reap()
            if opened == nil { _ = waitReadable(ring.completionDescriptor) }
        }
        s.take(try #require(opened))
        #expect(ring.submitted == 4, "openat, then fallocate → fsync → fsync of the directory")
        let name = SegmentName.name(3)
        let file = try s.directory.descriptorFor(name)
        let directory = try s.directory.directoryDescriptor()
        #expect(inode(file) == inode(dir + "/" + name) && inode(directory) == inode(dir))

        // A failure elsewhere lets go of every descriptor while the chain is unreaped.
        #expect(s.directory.releaseDescriptors() == 2)
        #expect(s.directory.descriptorsHeld == 0)
        #expect(s.directory.descriptorsAwaitingCompletion == 2)
        // Still open, and still the segment and its directory (not closed, not reused).
        #expect(inode(file) == inode(dir + "/" + name))
        #expect(inode(directory) == inode(dir))

        // Reaped: the creation completes once, and the two are closed then.
        var done: [SyncCompletion] = []
        for _ in 0..<16 where done.isEmpty {
            if let c = s.nextCompletion() { done.append(c); continue }
            _ = waitReadable(ring.completionDescriptor)
        }
        #expect(done == [SyncCompletion(token: 42)])
        #expect(s.directory.descriptorsAwaitingCompletion == 0)
        #expect(ring.inFlight == 0)
        var st = stat()
        #expect(stat(dir + "/" + name, &st) == 0 && st.st_size == 65_536)
    }

    /// Pins count: a descriptor named twice is closed at the last completion, and one the
    /// directory still holds is not closed by an unpin at all.
    @Test func pinsAreCountedAndLeaveHeldDescriptorsAlone() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let d = try SegmentDirectory(path: dir, segmentBytes: 4_096)
        try d.createWithoutSync("a")
        let fd = try d.descriptorFor("a")
        d.pin(fd)
        d.pin(fd)
        d.unpin(fd)
        #expect(inode(fd) == inode(dir + "/a"), "held by the directory: not closed by an unpin")
        d.release("a")
        #expect(d.descriptorsAwaitingCompletion == 1)
        #expect(inode(fd) == inode(dir + "/a"), "pinned once more: still open")
        d.unpin(fd)
        #expect(d.descriptorsAwaitingCompletion == 0)
    }
}
