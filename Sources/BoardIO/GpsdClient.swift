import Glibc

/// Where gpsd listens. Debian's gpsd.socket listens on 127.0.0.1:2947, [::1]:2947 and
/// /run/gpsd.sock; the Unix socket is mode 0600 (root only), so a service user connects to the
/// loopback port.
public enum GpsdEndpoint: Sendable, Hashable, CustomStringConvertible {
    case unix(path: String)
    /// An IPv4 address in dotted form and a port.
    case tcp(host: String, port: UInt16)

    public static let debianDefault = GpsdEndpoint.tcp(host: "127.0.0.1", port: 2947)

    /// "127.0.0.1:2947", "localhost:2947" or "/run/gpsd.sock"; nil when neither.
    public init?(_ text: String) {
        if text.hasPrefix("/") { self = .unix(path: text); return }
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]), port > 0 else { return nil }
        var host = String(text[..<colon])
        if host == "localhost" { host = "127.0.0.1" }
        var addr = in_addr()
        guard inet_pton(AF_INET, host, &addr) == 1 else { return nil }
        self = .tcp(host: host, port: port)
    }

    public var description: String {
        switch self {
        case .unix(let path): path
        case .tcp(let host, let port): "\(host):\(port)"
        }
    }
}

/// A gpsd client on the run loop (gpsd_json(5)): connects without blocking, asks for JSON
/// reports with `?WATCH={"enable":true,"json":true};`, reads lines into one fixed buffer and
/// hands each complete line to `onLine`. When gpsd goes away (restart, crash, not started yet)
/// the client closes, tells `onDisconnect` and tries again after `reconnectDelayMs` (doubling to
/// `reconnectDelayMaxMs` while it keeps failing). Knows nothing about positions or rides.
///
/// Steady state allocates nothing: the buffer is allocated once and lines are passed as
/// pointers into it.
public final class GpsdClient {
    /// Longest line kept (gpsd's own reports are at most 4 kB; a SKY list of 60 satellites is
    /// about 5 kB). Longer lines are dropped and reported to `onLineTooLong`.
    public static let lineBytesMax = 8192
    /// Reads per readiness (each up to the free buffer space), so one busy socket cannot hold
    /// the loop.
    public static let readsPerWakeMax = 4
    public static let reconnectDelayMs: Int64 = 500
    public static let reconnectDelayMaxMs: Int64 = 5_000
    /// What the client sends after connecting.
    public static let watchCommand = Array(#"?WATCH={"enable":true,"json":true};"#.utf8) + [0x0A]

    public enum State: Sendable, Hashable { case idle, connecting, watching, waitingToReconnect }

    public struct Counters: Sendable, Hashable {
        public var connects: UInt64 = 0
        public var connectFailures: UInt64 = 0
        public var disconnects: UInt64 = 0
        public var bytes: UInt64 = 0
        public var lines: UInt64 = 0
        public var linesTooLong: UInt64 = 0
    }

    public let endpoint: GpsdEndpoint
    let loop: EventLoop
    public private(set) var state: State = .idle
    public private(set) var counters = Counters()
    /// Why the last connection attempt failed or the connection ended.
    public private(set) var lastProblem: String?

    public var onLine: (UnsafeRawBufferPointer, Int64) -> Void = { _, _ in }
    public var onConnect: () -> Void = {}
    /// Called once per lost connection or first failed attempt (not again for each failed retry).
    public var onDisconnect: (String) -> Void = { _ in }
    public var onLineTooLong: () -> Void = {}

    private var fd: FileDescriptor?
    private var registration: IORegistration?
    private var retryTimer: TimerID?
    private var retryDelayMs = GpsdClient.reconnectDelayMs
    private let buffer: UnsafeMutableRawBufferPointer
    private var filled = 0
    private var discardingLongLine = false
    private var announcedDisconnect = false

    public init(endpoint: GpsdEndpoint, loop: EventLoop) {
        self.endpoint = endpoint
        self.loop = loop
        buffer = .allocate(byteCount: Self.lineBytesMax, alignment: 1)
    }

    deinit {
        closeSocket()
        buffer.deallocate()
    }

    /// Starts connecting (now) and keeps the connection up until `close()`.
    public func start() {
        guard state == .idle else { return }
        connect()
    }

    /// Closes the connection and stops reconnecting.
    public func close() {
        if let t = retryTimer { loop.cancelTimer(t) }
        retryTimer = nil
        closeSocket()
        state = .idle
    }

    // MARK: Connecting

    private func connect() {
        retryTimer = nil
        state = .connecting
        do throws(SystemError) {
            let (socketFD, inProgress) = try openSocket()
            fd = socketFD
            registration = try? loop.register(socketFD, "gpsd", interest: inProgress ? .write : .read) { [unowned self] ready in
                self.ready(ready)
            }
            guard registration != nil else {
                fail("cannot watch the gpsd socket (too many descriptors)")
                return
            }
            if !inProgress { connected() }
        } catch {
            fail("cannot connect to gpsd at \(endpoint): \(error.message)")
        }
    }

    /// socket + connect, non-blocking. Returns whether the connect is still in progress.
    private func openSocket() throws(SystemError) -> (FileDescriptor, Bool) {
        let family = endpointFamily
        let raw = try retryingOnInterrupt("socket", endpoint.description) {
            socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        }
        let socketFD = FileDescriptor(rawValue: raw)
        var r: Int32 = 0
        switch endpoint {
        case .unix(let path):
            do throws(SystemError) {
                r = try withUnixAddress(path) { Glibc.connect(raw, $0, $1) }
            } catch {
                socketFD.close()
                throw error
            }
        case .tcp(let host, let port):
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_port = port.bigEndian
            _ = inet_pton(AF_INET, host, &addr.sin_addr)
            r = withUnsafePointer(to: &addr) { p in
                p.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(raw, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        if r == 0 { return (socketFD, false) }
        let e = errno
        if e == EINPROGRESS || e == EINTR || e == EAGAIN { return (socketFD, true) }
        socketFD.close()
        throw SystemError(errno: e, call: "connect", context: endpoint.description)
    }

    private var endpointFamily: Int32 {
        switch endpoint {
        case .unix: AF_UNIX
        case .tcp: AF_INET
        }
    }

    private func connected() {
        guard let fd else { return }
        // A fresh socket's send buffer is empty: the 38-byte command goes out whole or not at all.
        let sent = Self.watchCommand.withUnsafeBytes { b in Glibc.send(fd.rawValue, b.baseAddress, b.count, Int32(MSG_NOSIGNAL)) }
        guard sent == Self.watchCommand.count else {
            fail("gpsd at \(endpoint) did not take the WATCH command: \(String(cString: strerror(errno)))")
            return
        }
        if let registration { try? loop.setInterest(registration, .read) }
        state = .watching
        counters.connects += 1
        retryDelayMs = Self.reconnectDelayMs
        filled = 0
        discardingLongLine = false
        announcedDisconnect = false
        lastProblem = nil
        onConnect()
    }

    // MARK: Reading

    private func ready(_ r: IOReadiness) {
        if state == .connecting {
            guard let fd else { return }
            var err: Int32 = 0
            var len = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd.rawValue, SOL_SOCKET, SO_ERROR, &err, &len)
            if err != 0 { fail("cannot connect to gpsd at \(endpoint): \(String(cString: strerror(err)))"); return }
            connected()
            return
        }
        guard state == .watching, let fd else { return }
        for _ in 0..<Self.readsPerWakeMax {
            let free = UnsafeMutableRawBufferPointer(rebasing: buffer[filled...])
            let n = Glibc.read(fd.rawValue, free.baseAddress, free.count)
            if n > 0 {
                counters.bytes += UInt64(n)
                deliver(newBytes: n)
                if n < free.count { return }
                continue
            }
            if n == 0 { fail("gpsd at \(endpoint) closed the connection"); return }
            switch errno {
            case EINTR: continue
            case EAGAIN: return
            default: fail("reading from gpsd at \(endpoint): \(String(cString: strerror(errno)))"); return
            }
        }
    }

    /// Hands every complete line to `onLine` and keeps the unfinished rest at the start.
    private func deliver(newBytes n: Int) {
        let now = loop.nowMs
        var lineStart = 0
        var i = filled
        filled += n
        while i < filled {
            if buffer[i] == 0x0A {
                var end = i
                if end > lineStart, buffer[end - 1] == 0x0D { end -= 1 }
                if discardingLongLine {
                    discardingLongLine = false
                } else if end > lineStart {
                    counters.lines += 1
                    onLine(UnsafeRawBufferPointer(rebasing: buffer[lineStart..<end]), now)
                }
                lineStart = i + 1
            }
            i += 1
        }
        if lineStart > 0 {
            let rest = filled - lineStart
            if rest > 0, let base = buffer.baseAddress { memmove(base, base + lineStart, rest) }
            filled = rest
        } else if filled == buffer.count {
            // No line end in a full buffer: drop it and everything up to the next line end.
            filled = 0
            if !discardingLongLine {
                discardingLongLine = true
                counters.linesTooLong += 1
                onLineTooLong()
            }
        }
    }

    // MARK: Failing and retrying

    private func fail(_ why: String) {
        let wasWatching = state == .watching
        closeSocket()
        if wasWatching { counters.disconnects += 1 } else { counters.connectFailures += 1 }
        lastProblem = why
        state = .waitingToReconnect
        if !announcedDisconnect {
            announcedDisconnect = true
            onDisconnect(why)
        }
        let delay = retryDelayMs
        retryDelayMs = min(Self.reconnectDelayMaxMs, retryDelayMs * 2)
        retryTimer = loop.scheduleTimer("gpsd.reconnect", afterMs: delay) { [unowned self] in self.connect() }
    }

    private func closeSocket() {
        if let registration { loop.deregister(registration) }
        registration = nil
        fd?.close()
        fd = nil
        filled = 0
    }
}
