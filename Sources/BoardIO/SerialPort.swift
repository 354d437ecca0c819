import Glibc

/// A serial device (UART, USB CDC ACM, or a pseudo-terminal) opened raw and non-blocking, for a
/// bridge dongle. Register `fd` with epoll for EPOLLIN and call `read(into:)` when readable.
public struct SerialPort: Sendable {
    public let fd: FileDescriptor
    public let path: String

    /// Baud rates the port accepts.
    public static let baudRates: [Int: speed_t] = [
        9600: speed_t(B9600), 19200: speed_t(B19200), 38400: speed_t(B38400), 57600: speed_t(B57600),
        115200: speed_t(B115200), 230400: speed_t(B230400), 460800: speed_t(B460800), 921600: speed_t(B921600),
    ]

    /// open(2) with O_RDWR|O_NOCTTY|O_NONBLOCK, then termios raw mode (cfmakeraw), 8N1, the
    /// receiver enabled, modem lines ignored, at `baud`.
    public static func open(_ path: String, baud: Int = 115200) throws(SystemError) -> SerialPort {
        guard let speed = baudRates[baud] else { throw SystemError(errno: EINVAL, call: "cfsetspeed", context: "\(path): unsupported baud \(baud); use 9600…921600") }
        let fd = try FileDescriptor.open(path, O_RDWR | O_NOCTTY | O_NONBLOCK)
        do throws(SystemError) {
            var t = termios()
            if tcgetattr(fd.rawValue, &t) != 0 { throw SystemError.current("tcgetattr", path) }
            cfmakeraw(&t)
            t.c_cflag |= tcflag_t(CLOCAL) | tcflag_t(CREAD)
            t.c_cflag &= ~(tcflag_t(CSTOPB) | tcflag_t(CRTSCTS))
            if cfsetspeed(&t, speed) != 0 { throw SystemError.current("cfsetspeed", path) }
            // VMIN 0 / VTIME 0: reads return what is there (the fd is non-blocking anyway).
            withUnsafeMutableBytes(of: &t.c_cc) { cc in cc[Int(VMIN)] = 0; cc[Int(VTIME)] = 0 }
            if tcsetattr(fd.rawValue, TCSANOW, &t) != 0 { throw SystemError.current("tcsetattr", path) }
        } catch {
            fd.close()
            throw error
        }
        return SerialPort(fd: fd, path: path)
    }

    /// read(2) without blocking. A hang-up (EIO on a tty whose other side closed, or 0 bytes) is
    /// `.closed`.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> ReceiveResult {
        while true {
            let n = Glibc.read(fd.rawValue, buffer.baseAddress, buffer.count)
            if n > 0 { return .data(count: n, truncated: false) }
            if n == 0 { return .closed }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            case EIO: return .closed
            default: throw SystemError.current("read", path)
            }
        }
    }

    public func write(_ bytes: [UInt8]) throws(SystemError) { try fd.writeAll(bytes) }

    public func close() { fd.close() }
}

/// A pseudo-terminal pair for tests and for a bridge running on the same board: the controlling
/// side (`controller`) and the path of the terminal side, which `SerialPort.open` opens like a
/// UART.
public struct PseudoTerminal: Sendable {
    public let controller: FileDescriptor
    public let terminalPath: String

    /// open("/dev/ptmx"), then the ioctls behind unlockpt(3) (TIOCSPTLCK) and ptsname(3)
    /// (TIOCGPTN); Glibc's Swift overlay does not export posix_openpt.
    /// asm-generic ioctl numbers (x86, ARM, arm64): _IOW('T', 0x31, int) and _IOR('T', 0x30, unsigned).
    static let tiocsptlck: UInt = 0x4004_5431
    static let tiocgptn: UInt = 0x8004_5430

    public static func open() throws(SystemError) -> PseudoTerminal {
        let fd = try FileDescriptor.open("/dev/ptmx", O_RDWR | O_NOCTTY)
        let m = fd.rawValue
        var unlock: Int32 = 0
        if ioctl(m, tiocsptlck, &unlock) != 0 { let e = SystemError.current("ioctl(TIOCSPTLCK)"); fd.close(); throw e }
        var number: UInt32 = 0
        if ioctl(m, tiocgptn, &number) != 0 { let e = SystemError.current("ioctl(TIOCGPTN)"); fd.close(); throw e }
        let path = "/dev/pts/\(number)"
        // Raw mode on the controller side too, so bytes pass unchanged.
        var t = termios()
        if tcgetattr(m, &t) == 0 { cfmakeraw(&t); _ = tcsetattr(m, TCSANOW, &t) }
        return PseudoTerminal(controller: fd, terminalPath: path)
    }
}
