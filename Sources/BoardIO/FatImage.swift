import Glibc

/// Builds a FAT disk image holding a set of files, for the USB mass-storage gadget, with
/// dosfstools (mkfs.fat) and mtools (mmd, mcopy): no root, no loop mount. The image is written
/// to a temporary name and renamed into place, so a reader never sees half an image.
public enum FatImage {
    public struct File: Sendable, Hashable {
        /// Path on the image, e.g. "Activities/2026-11-22-0830_ab12cd34.fit".
        public var imagePath: String
        public var sourcePath: String
        public var sizeBytes: Int64

        public init(imagePath: String, sourcePath: String, sizeBytes: Int64) {
            self.imagePath = imagePath
            self.sourcePath = sourcePath
            self.sizeBytes = sizeBytes
        }
    }

    public enum BuildError: Error, CustomStringConvertible {
        case missingTool(String, package: String)
        case toolFailed(String, String)
        case system(SystemError)

        public var description: String {
            switch self {
            case .missingTool(let t, let p): "\(t) is not installed: sudo apt-get install \(p)"
            case .toolFailed(let cmd, let err): "\(cmd) failed: \(err)"
            case .system(let e): e.description
            }
        }
    }

    /// A file left off the image, and why.
    public struct Skipped: Sendable, Hashable, CustomStringConvertible {
        public var imagePath: String
        public var sourcePath: String
        public var reason: String
        public var description: String { "\(sourcePath): \(reason)" }
    }

    /// Image size: the files plus 25 % and 4 MiB of headroom for FAT tables and directories,
    /// at least 8 MiB, rounded up to a whole MiB.
    public static func sizeBytes(for files: [File]) -> Int64 {
        let payload = files.reduce(Int64(0)) { $0 + (($1.sizeBytes + 4095) / 4096) * 4096 }
        let want = max(8 << 20, payload + payload / 4 + (4 << 20))
        return (want + (1 << 20) - 1) / (1 << 20) * (1 << 20)
    }

    /// Builds the image at `path` with volume label `label` (≤ 11 characters). Only regular
    /// files reached without a symbolic link (at their name or their directory's) go on it: the
    /// ride library belongs to a service user, and a link named like a ride must not put what it
    /// points at (another user's file) on the USB drive. The others are left off and returned.
    @discardableResult
    public static func build(at path: String, label: String = "BIKECOMP", files: [File]) throws(BuildError) -> [Skipped] {
        for (tool, package) in [("mkfs.fat", "dosfstools"), ("mcopy", "mtools"), ("mmd", "mtools")] where !Subprocess.isAvailable(tool) {
            throw .missingTool(tool, package: package)
        }
        let tmp = path + ".tmp"
        unlink(tmp)
        let kib = sizeBytes(for: files) / 1024
        try run(["mkfs.fat", "-C", "-n", String(label.prefix(11)).uppercased(), "-i", "B1CE0001", tmp, String(kib)])
        var dirs = Set<String>()
        for f in files {
            var parts = f.imagePath.split(separator: "/").dropLast()
            var prefix = ""
            while let p = parts.first {
                parts = parts.dropFirst()
                prefix += (prefix.isEmpty ? "" : "/") + p
                if dirs.insert(prefix).inserted { try run(["mmd", "-i", tmp, "::/" + prefix]) }
            }
        }
        var skipped: [Skipped] = []
        for f in files {
            let source: FileDescriptor
            switch openSource(f.sourcePath) {
            case .failure(let why):
                skipped.append(Skipped(imagePath: f.imagePath, sourcePath: f.sourcePath, reason: why.reason))
                continue
            case .success(let fd): source = fd
            }
            defer { source.close() }
            // mcopy reads the descriptor opened here (its /dev/fd/3), never the path again.
            try run(["mcopy", "-i", tmp, "-m", "/dev/fd/\(Subprocess.passedFD)", "::/" + f.imagePath], passing: source.rawValue)
        }
        let fd: FileDescriptor
        do { fd = try FileDescriptor.open(tmp, O_RDONLY) } catch { throw .system(error) }
        _ = fsync(fd.rawValue)
        fd.close()
        guard rename(tmp, path) == 0 else { throw .system(.current("rename", "\(tmp) → \(path)")) }
        return skipped
    }

    /// Why a source file is left off the image.
    public struct NotCopied: Error, Sendable { public var reason: String }

    /// Opens `path` to copy it: its directory and then the name in it, neither followed if it
    /// is a symbolic link (O_NOFOLLOW), without blocking (a FIFO named like a ride), and only
    /// a regular file is taken.
    public static func openSource(_ path: String) -> Result<FileDescriptor, NotCopied> {
        let slash = path.lastIndex(of: "/")
        let dir = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        func why(_ call: String, _ e: Int32) -> NotCopied {
            NotCopied(reason: e == ELOOP || e == ENOTDIR ? "\(call) is a symbolic link or not a directory: not followed"
                                                          : "\(call): \(String(cString: strerror(e)))")
        }
        let dirFD = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard dirFD >= 0 else { return .failure(why("its directory \(dir)", errno)) }
        defer { _ = Glibc.close(dirFD) }
        let fd = openat(dirFD, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
        guard fd >= 0 else { return .failure(why(errno == ELOOP ? "it" : "opening it", errno)) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
            _ = Glibc.close(fd)
            return .failure(NotCopied(reason: "not a regular file"))
        }
        return .success(FileDescriptor(rawValue: fd))
    }

    static func run(_ argv: [String], passing fd: Int32? = nil) throws(BuildError) {
        let r: Subprocess.Result
        do { r = try Subprocess.run(argv, passing: fd) } catch { throw .system(error) }
        guard r.succeeded else { throw .toolFailed(argv.joined(separator: " "), r.error.isEmpty ? "exit \(r.status)" : r.error) }
    }
}
