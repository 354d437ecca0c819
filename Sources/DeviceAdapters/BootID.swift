import Glibc

/// The kernel's random id of this boot (/proc/sys/kernel/random/boot_id): the same for every
/// start of the app until the board is restarted. Rides saved on an unset clock are dated only
/// by a clock set in the same boot (`DatingRideArchive`).
public enum BootID {
    public static let path = "/proc/sys/kernel/random/boot_id"

    /// The id ("6f1c…-…"), or nil when it cannot be read.
    public static func current(path: String = BootID.path) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 64)
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return nil }
        let text = String(decoding: buffer[0..<n], as: UTF8.self).filter { !$0.isWhitespace }
        return text.isEmpty ? nil : text
    }
}
