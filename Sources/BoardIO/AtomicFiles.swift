import Glibc

/// Whole-file operations for the ride library: atomic replace (temp file, fsync, rename, fsync
/// of the directory), whole-file read, directory listing, removal. Thin wrappers; every call is
/// retried on EINTR.
public enum AtomicFiles {
    /// Largest file `readAll` accepts (a 72-hour ride's TCX is well below this).
    public static let readBytesMax = 256 << 20
    /// Suffix of temporary files; a crash may leave one behind, `removeStaleTemporaries` cleans up.
    public static let temporarySuffix = ".tmp"

    /// Writes `bytes` to `path` so that a reader (or a crash at any point) sees either the old
    /// file or the complete new one: write `path.<pid>.tmp`, fsync it, rename over `path`, fsync
    /// the directory so the rename itself is durable.
    public static func write(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o644) throws(SystemError) {
        try writeThroughTemporary(path, bytes, mode: mode) { _ in }
    }

    /// `write` over an existing file that keeps its permissions, owner and group (a config file
    /// that a service reads through its group must stay readable to it after it is replaced).
    /// A missing file is created with `mode`. Changing the owner needs the right to: where that
    /// fails (not root and not the owner) the new file keeps the writer's.
    public static func replace(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o644) throws(SystemError) {
        var st = stat()
        guard stat(path, &st) == 0 else { return try write(path, bytes, mode: mode) }
        try writeThroughTemporary(path, bytes, mode: st.st_mode & 0o7777) { fd in
            _ = fchmod(fd.rawValue, st.st_mode & 0o7777)
            _ = fchown(fd.rawValue, st.st_uid, st.st_gid)
        }
    }

    /// The one sequence both use: `path.<pid>.tmp` created anew with `mode` (`createTemporary`), `prepare`d, written and
    /// fsynced, renamed over `path`, the directory fsynced; the temporary removed on any failure.
    static func writeThroughTemporary(_ path: String, _ bytes: [UInt8], mode: mode_t,
                                      prepare: (FileDescriptor) -> Void) throws(SystemError) {
        let (fd, tmp) = try createTemporary(for: path, mode: mode)
        do {
            prepare(fd)
            try fd.writeAll(bytes)
            _ = try retryingOnInterrupt("fsync", tmp) { fsync(fd.rawValue) }
        } catch {
            fd.close()
            unlink(tmp)
            throw error
        }
        fd.close()
        guard rename(tmp, path) == 0 else {
            let e = SystemError.current("rename", "\(tmp) → \(path)")
            unlink(tmp)
            throw e
        }
        try syncDirectory(of: path)
    }

    /// How many times `createTemporary` removes what is in the way at the temporary's name and
    /// tries again before it gives up (something keeps putting it back).
    public static let temporaryCreateAttempts = 4

    /// Creates `path.<pid>.tmp` anew for writing: `O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC`, so a
    /// file, hard link or symbolic link already at that name (a crashed writer's leftover, or
    /// planted by whoever can write the directory) is never opened, followed or truncated. What
    /// is in the way is unlinked (the name only: unlink follows no link) and the creation tried
    /// again, at most `temporaryCreateAttempts` times; a directory there, or one put back each
    /// time, is an error that names the path.
    public static func createTemporary(for path: String, mode: mode_t) throws(SystemError) -> (FileDescriptor, String) {
        let tmp = path + "." + String(getpid()) + temporarySuffix
        for _ in 0..<temporaryCreateAttempts {
            do throws(SystemError) {
                return (try FileDescriptor.open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode: mode), tmp)
            } catch where error.errno == EEXIST {
                if unlink(tmp) != 0 && errno != ENOENT {
                    throw SystemError.current("unlink", "\(tmp) (in the way of the temporary file; remove it)")
                }
            }
        }
        throw SystemError(errno: EEXIST, call: "open", context: "\(tmp) (put back \(temporaryCreateAttempts) times after removal; is another writer at work?)")
    }

    /// fsync of the directory holding `path` (makes a rename or unlink durable).
    public static func syncDirectory(of path: String) throws(SystemError) {
        let dir = directoryName(of: path)
        let fd = try FileDescriptor.open(dir, O_RDONLY | O_DIRECTORY)
        defer { fd.close() }
        _ = try retryingOnInterrupt("fsync", dir) { fsync(fd.rawValue) }
    }

    public static func directoryName(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// The whole file.
    public static func readAll(_ path: String) throws(SystemError) -> [UInt8] {
        let fd = try FileDescriptor.open(path, O_RDONLY)
        defer { fd.close() }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let result: Result<Int, SystemError> = chunk.withUnsafeMutableBytes { b in
                do throws(SystemError) { return .success(try fd.read(into: b)) } catch { return .failure(error) }
            }
            let n = try result.get()
            if n == 0 { break }
            out.append(contentsOf: chunk[0..<n])
            if out.count > readBytesMax { throw SystemError(errno: EFBIG, call: "read", context: path) }
        }
        return out
    }

    /// open(2)'s O_NOATIME (01000000 on x86-64 and aarch64 alike), which Glibc's module hides
    /// behind _GNU_SOURCE.
    static let openNoAccessTime: Int32 = 0o1_000_000

    /// Names in `directory` (no "." or ".."), unsorted; at most `entriesMax`.
    ///
    /// The directory is read without updating its access time (O_NOATIME; the owner's right, so
    /// without it for a directory the caller does not own): under `relatime` a listing after a
    /// write dirties the directory's inode, and on a card that stalls (a write taking 200 ms) the
    /// listing then waits in ext4's journal for the commit ahead of it — measured in the run loop
    /// while waiting rides were dated (docs/performance.md, "The dating of waiting rides on the
    /// stalling card": `getdents64` → `ext4_dirty_inode` → jbd2).
    public static func list(_ directory: String, entriesMax: Int = 100_000) throws(SystemError) -> [String] {
        let fd: FileDescriptor
        do throws(SystemError) {
            fd = try FileDescriptor.open(directory, O_RDONLY | O_DIRECTORY | openNoAccessTime)
        } catch {
            // A plain `catch` with the check inside (Swift 6.2.3 aborts on a typed `catch where`).
            guard error.errno == EPERM else { throw error }
            fd = try FileDescriptor.open(directory, O_RDONLY | O_DIRECTORY)
        }
        guard let dir = fdopendir(fd.rawValue) else {
            let error = SystemError.current("fdopendir", directory)
            fd.close()
            throw error
        }
        defer { closedir(dir) }
        var names: [String] = []
        while names.count < entriesMax, let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Removes `path` and makes the removal durable; a missing file is not an error.
    public static func remove(_ path: String) throws(SystemError) {
        if unlink(path) != 0 {
            if errno == ENOENT { return }
            throw SystemError.current("unlink", path)
        }
        try syncDirectory(of: path)
    }

    /// mkdir -p.
    public static func makeDirectories(_ path: String, mode: mode_t = 0o755) throws(SystemError) {
        var prefix = path.hasPrefix("/") ? "" : "."
        for part in path.split(separator: "/") {
            prefix += "/" + part
            if mkdir(prefix, mode) != 0 && errno != EEXIST { throw SystemError.current("mkdir", prefix) }
        }
    }

    /// Size of a regular file in bytes.
    public static func size(_ path: String) throws(SystemError) -> Int64 {
        var st = stat()
        _ = try retryingOnInterrupt("stat", path) { stat(path, &st) }
        return Int64(st.st_size)
    }

    /// Removes `*.<pid>.tmp` files a crashed writer left in `directory` (those of live
    /// processes are in use and stay).
    public static func removeStaleTemporaries(in directory: String) {
        guard let names = try? list(directory) else { return }
        for n in names where n.hasSuffix(temporarySuffix) {
            let stem = n.dropLast(temporarySuffix.count)
            if let dot = stem.lastIndex(of: "."), let pid = Int32(stem[stem.index(after: dot)...]),
               pid != getpid(), kill(pid, 0) == 0 { continue }
            unlink(directory + "/" + n)
        }
    }
}
