import Glibc

/// An operating-system error: the errno value, the call that failed and what it was doing.
/// Operating errors (ENOENT, EIO, ENOSPC, EACCES) are thrown as these; programmer errors
/// (a bad fd) trap.
public struct SystemError: Error, Sendable, Hashable, CustomStringConvertible {
    public var errno: Int32
    public var call: String
    public var context: String

    public init(errno: Int32, call: String, context: String = "") {
        self.errno = errno
        self.call = call
        self.context = context
    }

    /// Captures the current errno.
    public static func current(_ call: String, _ context: String = "") -> SystemError {
        SystemError(errno: Glibc.errno, call: call, context: context)
    }

    public var message: String { String(cString: strerror(errno)) }

    public var isNoSpace: Bool { errno == ENOSPC || errno == EDQUOT }
    public var isPermissionDenied: Bool { errno == EACCES || errno == EPERM }
    public var isNotFound: Bool { errno == ENOENT || errno == ENODEV || errno == ENXIO }
    public var wouldBlock: Bool { errno == EAGAIN || errno == EWOULDBLOCK }

    public var description: String {
        context.isEmpty ? "\(call): \(message) (errno \(errno))" : "\(call) \(context): \(message) (errno \(errno))"
    }
}

/// Runs `body` until it does not fail with EINTR; returns its result or throws the errno.
@inline(__always)
public func retryingOnInterrupt<T: BinaryInteger>(_ call: String, _ context: @autoclosure () -> String = "", _ body: () -> T) throws(SystemError) -> T {
    while true {
        let r = body()
        if r >= 0 { return r }
        if Glibc.errno == EINTR { continue }
        throw SystemError.current(call, context())
    }
}
