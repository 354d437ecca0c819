import CBoardShims
import Glibc

/// What a non-blocking receive found.
public enum ReceiveResult: Sendable, Hashable {
    /// A packet (or bytes, on a stream) of this many bytes. `truncated` when a packet was longer
    /// than the buffer (the rest is discarded by the kernel).
    case data(count: Int, truncated: Bool)
    /// Nothing to read now; wait for the fd to become readable (epoll EPOLLIN).
    case wouldBlock
    /// The peer closed the connection (or hung up the line).
    case closed
}

/// Builds a `sockaddr_un` for `path`; throws ENAMETOOLONG when it does not fit.
func withUnixAddress<R>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R) throws(SystemError) -> R {
    var addr = sockaddr_un()
    addr.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    let capacity = MemoryLayout.size(ofValue: addr.sun_path)
    guard bytes.count < capacity else { throw SystemError(errno: ENAMETOOLONG, call: "bind", context: path) }
    withUnsafeMutableBytes(of: &addr.sun_path) { raw in
        for (i, b) in bytes.enumerated() { raw[i] = b }
        raw[bytes.count] = 0
    }
    return withUnsafePointer(to: &addr) { p in
        p.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
}

/// A listening Unix SOCK_SEQPACKET socket the app owns (the bridge process connects to it). The fd
/// is non-blocking: register `fd` with epoll for EPOLLIN and call `accept()` when it is readable.
public struct SeqPacketListener: Sendable {
    public let fd: FileDescriptor
    public let path: String

    /// socket(AF_UNIX, SOCK_SEQPACKET|SOCK_NONBLOCK|SOCK_CLOEXEC), unlink of a stale socket file,
    /// bind(2), chmod(2) to `mode` (0660: the bridge runs as another user, of the socket's group:
    /// on the board its directory's, which is setgid, /etc/tmpfiles.d/bikecomputer.conf) and
    /// listen(2).
    public static func listen(path: String, backlog: Int32 = 4, mode: mode_t = 0o660) throws(SystemError) -> SeqPacketListener {
        let raw = try retryingOnInterrupt("socket", path) {
            socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        }
        let fd = FileDescriptor(rawValue: raw)
        do throws(SystemError) {
            _ = unlink(path)
            let r = try withUnixAddress(path) { bind(raw, $0, $1) }
            if r < 0 { throw SystemError.current("bind", path) }
            if chmod(path, mode) != 0 { throw SystemError.current("chmod", path) }
            _ = try retryingOnInterrupt("listen", path) { Glibc.listen(raw, backlog) }
        } catch {
            fd.close()
            throw error
        }
        return SeqPacketListener(fd: fd, path: path)
    }

    /// accept(2), then O_NONBLOCK and FD_CLOEXEC on the new fd (Glibc's overlay lacks accept4);
    /// nil when no connection is pending.
    public func accept() throws(SystemError) -> SeqPacketConnection? {
        while true {
            let r = Glibc.accept(fd.rawValue, nil, nil)
            if r >= 0 {
                let c = FileDescriptor(rawValue: r)
                _ = fcntl(r, F_SETFD, FD_CLOEXEC)
                do throws(SystemError) { try c.setNonBlocking() } catch { c.close(); throw error }
                return SeqPacketConnection(fd: c)
            }
            if errno == EINTR || errno == ECONNABORTED { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK { return nil }
            throw SystemError.current("accept4", path)
        }
    }

    /// Closes the socket and removes its file.
    public func close() {
        fd.close()
        _ = unlink(path)
    }
}

/// One SOCK_SEQPACKET connection: each send is one packet, each receive returns one packet.
public struct SeqPacketConnection: Sendable {
    public let fd: FileDescriptor

    public init(fd: FileDescriptor) { self.fd = fd }

    /// Connects to a listener at `path` (the bridge side; tests). Blocking unless `nonBlocking`.
    public static func connect(path: String, nonBlocking: Bool = false) throws(SystemError) -> SeqPacketConnection {
        let flags = Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | (nonBlocking ? Int32(SOCK_NONBLOCK.rawValue) : 0)
        let raw = try retryingOnInterrupt("socket", path) { socket(AF_UNIX, flags, 0) }
        while true {
            let r = try withUnixAddress(path) { Glibc.connect(raw, $0, $1) }
            if r == 0 { break }
            if errno == EINTR { continue }
            let e = SystemError.current("connect", path)
            Glibc.close(raw)
            throw e
        }
        return SeqPacketConnection(fd: FileDescriptor(rawValue: raw))
    }

    /// recv(2) of one packet with MSG_TRUNC (to detect an oversize packet), without blocking.
    public func receive(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> ReceiveResult {
        while true {
            let n = recv(fd.rawValue, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT) | Int32(MSG_TRUNC))
            if n > 0 { return .data(count: min(n, buffer.count), truncated: n > buffer.count) }
            if n == 0 { return .closed }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            case ECONNRESET, EPIPE: return .closed
            default: throw SystemError.current("recv", "\(fd)")
            }
        }
    }

    /// Like `receive(into:)`, and the file descriptor that came with the packet (SCM_RIGHTS;
    /// close-on-exec), which the caller then owns. More than one: the first is kept, the others
    /// closed; descriptors the kernel could not pass (no room) are reported in `lost`.
    public func receive(into buffer: UnsafeMutableRawBufferPointer, descriptor: inout FileDescriptor?,
                        lost: inout Bool) throws(SystemError) -> ReceiveResult {
        descriptor = nil
        while true {
            var passed: Int32 = -1
            var fdLost: Int32 = 0
            let n = cbs_recv_with_fd(fd.rawValue, buffer.baseAddress, buffer.count, &passed, &fdLost)
            lost = fdLost != 0
            if passed >= 0 { descriptor = FileDescriptor(rawValue: passed) }
            if n > 0 { return .data(count: min(n, buffer.count), truncated: n > buffer.count) }
            if n == 0 { return .closed }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            case ECONNRESET, EPIPE: return .closed
            default: throw SystemError.current("recvmsg", "\(fd)")
            }
        }
    }

    /// One packet with a file descriptor attached (SCM_RIGHTS), without blocking (tests; the
    /// bridge process does this in Python).
    public func send(_ packet: [UInt8], passing descriptor: FileDescriptor) throws(SystemError) {
        let n = packet.withUnsafeBytes { cbs_send_with_fd(fd.rawValue, $0.baseAddress, $0.count, descriptor.rawValue) }
        if n < 0 { throw SystemError.current("sendmsg", "\(fd)") }
    }

    /// send(2) of one packet (MSG_NOSIGNAL: a closed peer is an EPIPE error, not a signal).
    public func send(_ packet: UnsafeRawBufferPointer) throws(SystemError) {
        _ = try retryingOnInterrupt("send", "\(fd)") { Glibc.send(fd.rawValue, packet.baseAddress, packet.count, Int32(MSG_NOSIGNAL)) }
    }

    public func send(_ packet: [UInt8]) throws(SystemError) {
        let r: Result<Void, SystemError> = packet.withUnsafeBytes { b in
            do throws(SystemError) { try send(b); return .success(()) } catch { return .failure(error) }
        }
        try r.get()
    }

    public func close() { fd.close() }
}
