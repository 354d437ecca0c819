import Glibc

/// A thin typed wrapper over a file descriptor. Not copyable-safe: the owner closes it once.
/// Every call is retried on EINTR; partial writes are looped by `writeAll`.
public struct FileDescriptor: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int32

    public init(rawValue: Int32) {
        precondition(rawValue >= 0, "invalid file descriptor \(rawValue)")
        self.rawValue = rawValue
    }

    public var description: String { "fd \(rawValue)" }

    /// open(2) with O_CLOEXEC added.
    public static func open(_ path: String, _ flags: Int32, mode: mode_t = 0o644) throws(SystemError) -> FileDescriptor {
        let fd = try retryingOnInterrupt("open", path) { Glibc.open(path, flags | O_CLOEXEC, mode) }
        return FileDescriptor(rawValue: fd)
    }

    public func close() {
        _ = Glibc.close(rawValue) // EINTR on close must not be retried on Linux
    }

    /// read(2) into `buffer`; returns the byte count (0 = end of file). Throws EAGAIN as an error
    /// with `wouldBlock` set for non-blocking descriptors.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Int {
        try retryingOnInterrupt("read", "\(self)") { Glibc.read(rawValue, buffer.baseAddress, buffer.count) }
    }

    /// write(2) once; returns how many bytes were written.
    public func write(_ buffer: UnsafeRawBufferPointer) throws(SystemError) -> Int {
        try retryingOnInterrupt("write", "\(self)") { Glibc.write(rawValue, buffer.baseAddress, buffer.count) }
    }

    /// Writes all of `buffer`, looping over partial writes.
    public func writeAll(_ buffer: UnsafeRawBufferPointer) throws(SystemError) {
        var offset = 0
        while offset < buffer.count {
            let n = try write(UnsafeRawBufferPointer(rebasing: buffer[offset...]))
            offset += n
        }
    }

    public func writeAll(_ bytes: [UInt8]) throws(SystemError) {
        let result: Result<Void, SystemError> = bytes.withUnsafeBytes { b in
            do throws(SystemError) { try writeAll(b); return .success(()) } catch { return .failure(error) }
        }
        try result.get()
    }

    /// Sets or clears O_NONBLOCK.
    public func setNonBlocking(_ on: Bool = true) throws(SystemError) {
        let flags = try retryingOnInterrupt("fcntl(F_GETFL)", "\(self)") { fcntl(rawValue, F_GETFL) }
        let newFlags = on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK
        _ = try retryingOnInterrupt("fcntl(F_SETFL)", "\(self)") { fcntl(rawValue, F_SETFL, newFlags) }
    }
}
