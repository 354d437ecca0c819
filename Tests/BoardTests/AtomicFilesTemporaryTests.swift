import BoardIO
import Foundation
import Testing

/// The atomic writer's temporary file (`path.<pid>.tmp`) is created anew
/// (O_CREAT|O_EXCL|O_NOFOLLOW): whatever was put at that name beforehand, by a crashed writer
/// or by whoever can write the directory, is never followed, truncated or written through.
struct AtomicFilesTemporaryTests {
    let dir = TestPaths.tempDir("atomic-tmp")
    var path: String { dir + "/config.toml" }
    var temporary: String { path + "." + String(getpid()) + AtomicFiles.temporarySuffix }

    func contents(_ p: String) -> String? { FileManager.default.contents(atPath: p).map { String(decoding: $0, as: UTF8.self) } }

    func isLink(_ p: String) -> Bool {
        var st = stat()
        return lstat(p, &st) == 0 && (st.st_mode & S_IFMT) == S_IFLNK
    }

    /// A file outside the directory, and a link to it at the temporary's name.
    func plantLink() throws -> String {
        let outside = TestPaths.tempDir("atomic-outside") + "/secret"
        try "not yours\n".write(toFile: outside, atomically: false, encoding: .utf8)
        #expect(symlink(outside, temporary) == 0)
        return outside
    }

    @Test func aLinkAtTheTemporarysNameIsNotFollowed() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try "old = 1\n".write(toFile: path, atomically: false, encoding: .utf8)
        let outside = try plantLink()
        try AtomicFiles.write(path, Array("new = 2\n".utf8))
        #expect(contents(outside) == "not yours\n", "the file the link points at is untouched")
        #expect(!isLink(path), "the file written is a regular file, not the planted link renamed over it")
        #expect(contents(path) == "new = 2\n")
        #expect(!FileManager.default.fileExists(atPath: temporary) && !isLink(temporary))
    }

    @Test func replaceThroughAPlantedLinkKeepsTheOutsideFile() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try "old = 1\n".write(toFile: path, atomically: false, encoding: .utf8)
        chmod(path, 0o640)
        let outside = try plantLink()
        try AtomicFiles.replace(path, Array("new = 3\n".utf8))
        #expect(contents(outside) == "not yours\n")
        #expect(!isLink(path) && contents(path) == "new = 3\n")
        var st = stat()
        #expect(stat(path, &st) == 0 && st.st_mode & 0o7777 == 0o640, "the replaced file keeps its mode")
    }

    @Test func aHardLinkAtTheTemporarysNameIsNotWrittenThrough() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let other = dir + "/tokens"
        try "token\n".write(toFile: other, atomically: false, encoding: .utf8)
        #expect(link(other, temporary) == 0)
        try AtomicFiles.write(path, Array("new = 4\n".utf8))
        #expect(contents(other) == "token\n", "the other name of the planted inode is untouched")
        #expect(contents(path) == "new = 4\n")
    }

    @Test func aDirectoryInTheWayFailsClearlyAndLeavesTheFile() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try "old = 1\n".write(toFile: path, atomically: false, encoding: .utf8)
        #expect(mkdir(temporary, 0o755) == 0)
        #expect(throws: SystemError.self) { try AtomicFiles.write(path, Array("new = 5\n".utf8)) }
        do { try AtomicFiles.write(path, Array("new = 5\n".utf8)) } catch {
            #expect(error.description.contains(temporary), "the error names what is in the way: \(error)")
        }
        #expect(contents(path) == "old = 1\n", "the file is as it was")
    }
}
