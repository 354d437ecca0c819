import TestSupport
import BoardIO
import CBoardShims
import Foundation


enum TestPaths {
    /// The directory holding the test binary (and the package's executables).
    static var productsDir: String {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: exe).deletingLastPathComponent().path
    }

    static var helper: String { productsDir + "/board-test-helper" }
    static var bikecomputer: String { productsDir + "/bikecomputer" }

    static func tempDir(_ tag: String) -> String {
        let dir = "/tmp/board-\(tag)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try! FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }
}

/// A raw, non-blocking client of the control socket for tests that must not block the loop.
final class RawClient {
    let fd: Int32
    var received: [UInt8] = []

    init(path: String) throws {
        let raw = cbs_unix_connect(path)
        guard raw >= 0 else { throw SystemError.current("connect", path) }
        fd = raw
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
    }

    deinit { close(fd) }

    func send(_ text: String) { send(Array(text.utf8)) }

    /// Sends what the socket takes now; returns the count.
    @discardableResult
    func send(_ bytes: [UInt8]) -> Int {
        bytes.withUnsafeBytes { cbs_send(fd, $0.baseAddress, $0.count) }
    }

    /// Reads what is available; returns false on end of file.
    @discardableResult
    func receive() -> Bool {
        var buf = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n > 0 { received += buf[0..<n]; continue }
            return n != 0
        }
    }

    var lines: [String] {
        String(decoding: received, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
    }

    /// Pumps `loop` until `lines.count >= count` (or about 2 s pass).
    func waitForLines(_ count: Int, loop: EpollEventLoop) throws -> [String] {
        for _ in 0..<200 where lines.count < count {
            try loop.runOnce(maxWaitMs: 10)
            receive()
        }
        return lines
    }
}
