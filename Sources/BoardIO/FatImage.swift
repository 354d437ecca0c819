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

    /// Image size: the files plus 25 % and 4 MiB of headroom for FAT tables and directories,
    /// at least 8 MiB, rounded up to a whole MiB.
    public static func sizeBytes(for files: [File]) -> Int64 {
        let payload = files.reduce(Int64(0)) { $0 + (($1.sizeBytes + 4095) / 4096) * 4096 }
        let want = max(8 << 20, payload + payload / 4 + (4 << 20))
        return (want + (1 << 20) - 1) / (1 << 20) * (1 << 20)
    }

    /// Builds the image at `path` with volume label `label` (≤ 11 characters).
    public static func build(at path: String, label: String = "BIKECOMP", files: [File]) throws(BuildError) {
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
        for f in files { try run(["mcopy", "-i", tmp, "-m", f.sourcePath, "::/" + f.imagePath]) }
        let fd: FileDescriptor
        do { fd = try FileDescriptor.open(tmp, O_RDONLY) } catch { throw .system(error) }
        _ = fsync(fd.rawValue)
        fd.close()
        guard rename(tmp, path) == 0 else { throw .system(.current("rename", "\(tmp) → \(path)")) }
    }

    static func run(_ argv: [String]) throws(BuildError) {
        let r: Subprocess.Result
        do { r = try Subprocess.run(argv) } catch { throw .system(error) }
        guard r.succeeded else { throw .toolFailed(argv.joined(separator: " "), r.error.isEmpty ? "exit \(r.status)" : r.error) }
    }
}
