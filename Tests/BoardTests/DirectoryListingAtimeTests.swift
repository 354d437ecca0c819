import BoardIO
import Foundation
import Testing

/// Listing a directory (the journal's segments, the ride files) does not update its access time:
/// under `relatime` a plain listing after a write dirties the directory's inode, and on a card
/// that stalls the run loop then waits in ext4's journal (docs/performance.md, "The dating of
/// waiting rides on the stalling card").
struct DirectoryListingAtimeTests {
    let dir = TestPaths.tempDir("listing-atime")

    /// The directory's atime set behind its mtime and a day old: a `relatime` mount updates it at the next read.
    func ageAccessTime() {
        var times = [timespec(tv_sec: 1_000, tv_nsec: 0), timespec(tv_sec: 1_000_000, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, dir, &times, 0) == 0)
    }

    func accessTime() -> Int {
        var st = stat()
        #expect(stat(dir, &st) == 0)
        return st.st_atim.tv_sec
    }

    func plainListing() {
        guard let d = opendir(dir) else { Issue.record("opendir \(dir): errno \(errno)"); return }
        while readdir(d) != nil {}
        closedir(d)
    }

    @Test func listingsLeaveTheDirectorysAccessTime() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for name in ["00000001.seg", "00000002.seg"] {
            try "x".write(toFile: dir + "/" + name, atomically: false, encoding: .utf8)
        }
        // The control: this file system keeps access times, so the check below can fail.
        ageAccessTime()
        plainListing()
        try #require(accessTime() != 1_000, "a plain listing did not update the atime: the file system keeps none (noatime?), so this test cannot tell")

        ageAccessTime()
        #expect(try AtomicFiles.list(dir).sorted() == ["00000001.seg", "00000002.seg"])
        #expect(accessTime() == 1_000, "AtomicFiles.list updated the directory's access time")
        #expect(try SegmentDirectory(path: dir, segmentBytes: 4096, readOnly: true).list() == ["00000001.seg", "00000002.seg"])
        #expect(accessTime() == 1_000, "SegmentDirectory.list updated the directory's access time")
    }

    @Test func aListingOfAMissingDirectoryThrowsItsError() {
        #expect(throws: SystemError.self) { try AtomicFiles.list(dir + "/missing") }
        do {
            _ = try AtomicFiles.list(dir + "/missing")
        } catch {
            #expect(error.errno == ENOENT)
        }
    }
}
