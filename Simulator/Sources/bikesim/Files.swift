import BoardIO
import Glibc

/// The few file operations the simulator's front end needs (outputs, scenario files).
enum Files {
    static let textBytesMax = 64 << 20

    static func readText(_ path: String) throws -> String {
        String(decoding: try readBytes(path), as: UTF8.self)
    }

    static func readBytes(_ path: String) throws -> [UInt8] {
        let fd = try FileDescriptor.open(path, O_RDONLY)
        defer { fd.close() }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = try chunk.withUnsafeMutableBytes { b throws(SystemError) in try fd.read(into: b) }
            if n == 0 { break }
            bytes += chunk[0..<n]
            guard bytes.count <= textBytesMax else { throw SystemError(errno: EFBIG, call: "read", context: "\(path) is larger than \(textBytesMax) bytes") }
        }
        return bytes
    }

    /// mkdir -p.
    static func makeDirectories(_ path: String) throws {
        var prefix = path.hasPrefix("/") ? "/" : ""
        for part in path.split(separator: "/") {
            prefix += part + "/"
            if mkdir(prefix, 0o755) != 0 && errno != EEXIST { throw SystemError.current("mkdir", prefix) }
        }
    }

    /// Writes a file through a temporary name, fsyncs and renames it over the old one.
    static func writeAtomically(_ path: String, _ bytes: [UInt8]) throws {
        let tmp = path + ".tmp"
        let fd = try FileDescriptor.open(tmp, O_WRONLY | O_CREAT | O_TRUNC)
        do {
            try fd.writeAll(bytes)
            guard fsync(fd.rawValue) == 0 else { throw SystemError.current("fsync", tmp) }
        } catch {
            fd.close()
            throw error
        }
        fd.close()
        guard rename(tmp, path) == 0 else { throw SystemError.current("rename", path) }
    }
}

/// The host's monotonic clock, for pacing the simulation against real time.
enum Clock {
    static func monotonicMs() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }

    static func sleepMs(_ ms: Int64) {
        var request = timespec(tv_sec: Int(ms / 1000), tv_nsec: Int(ms % 1000) * 1_000_000)
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }
}
