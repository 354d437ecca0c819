import BoardIO
import Device
import Glibc
import RideModel

/// Log lines to stderr (journald on the board), one line each, with the level; the last lines
/// and per-level counts are kept for `status`.
public final class StderrLog: LogPort {
    public private(set) var errors: UInt64 = 0
    public private(set) var warnings: UInt64 = 0
    public private(set) var recent: RingBuffer<String>
    public var minimumLevel: LogLevel
    let prefix: String

    public init(prefix: String = "bikecomputer", minimumLevel: LogLevel = .info, recentLines: Int = 32) {
        self.prefix = prefix
        self.minimumLevel = minimumLevel
        recent = RingBuffer(capacity: recentLines)
    }

    static func rank(_ l: LogLevel) -> Int {
        switch l {
        case .debug: 0
        case .info: 1
        case .warning: 2
        case .error: 3
        }
    }

    public func log(_ level: LogLevel, _ message: String) {
        if level == .error { errors &+= 1 }
        if level == .warning { warnings &+= 1 }
        guard Self.rank(level) >= Self.rank(minimumLevel) else { return }
        let line = "\(prefix): \(level.rawValue): \(message)"
        recent.append(line)
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { Glibc.write(2, $0.baseAddress, $0.count) }
    }
}
