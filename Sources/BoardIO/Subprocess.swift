import Glibc

/// Runs a program to completion with posix_spawnp, capturing stdout and stderr (bounded), for
/// maintenance commands (building USB images). Never used in the run loop.
public enum Subprocess {
    public struct Result: Sendable {
        public var status: Int32
        public var output: String
        public var error: String
        public var succeeded: Bool { status == 0 }
    }

    /// Output kept per stream; the rest is read and dropped.
    public static let outputBytesMax = 1 << 20

    /// The descriptor number a `passing` descriptor has in the child.
    public static let passedFD: Int32 = 3

    /// - Parameter passing: a descriptor the child gets as `passedFD` (e.g. a file it reads as
    ///   /dev/fd/3, opened here without following links); nothing else is inherited.
    public static func run(_ argv: [String], passing: Int32? = nil) throws(SystemError) -> Result {
        precondition(!argv.isEmpty)
        var outPipe: [Int32] = [0, 0], errPipe: [Int32] = [0, 0]
        guard pipe(&outPipe) == 0 else { throw .current("pipe") }
        guard pipe(&errPipe) == 0 else {
            close(outPipe[0]); close(outPipe[1])
            throw .current("pipe")
        }
        for fd in outPipe + errPipe { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) } // dup2 clears it on the copies
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2)
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        var passedCopy: Int32 = -1
        defer { if passedCopy >= 0 { close(passedCopy) } }
        if let fd = passing {
            // dup2 onto itself would leave FD_CLOEXEC set: pass a copy numbered above the pipes.
            passedCopy = fcntl(fd, F_DUPFD_CLOEXEC, passedFD + 16)
            guard passedCopy >= 0 else {
                for p in outPipe + errPipe { close(p) }
                throw .current("fcntl(F_DUPFD_CLOEXEC)")
            }
            posix_spawn_file_actions_adddup2(&actions, passedCopy, passedFD)
        }

        var cArgs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        defer { for p in cArgs { free(p) } }
        var pid: pid_t = 0
        let rc = posix_spawnp(&pid, argv[0], &actions, nil, &cArgs, environ)
        close(outPipe[1]); close(errPipe[1])
        guard rc == 0 else {
            close(outPipe[0]); close(errPipe[0])
            throw SystemError(errno: rc, call: "posix_spawnp", context: argv[0])
        }
        // Read both pipes until EOF with poll, so neither can fill up and stall the child.
        var out: [UInt8] = [], err: [UInt8] = []
        var fds = [pollfd(fd: outPipe[0], events: Int16(POLLIN), revents: 0),
                   pollfd(fd: errPipe[0], events: Int16(POLLIN), revents: 0)]
        var open = 2
        var buffer = [UInt8](repeating: 0, count: 4096)
        while open > 0 {
            if poll(&fds, 2, -1) < 0 {
                if errno == EINTR { continue }
                break
            }
            for i in 0..<2 where fds[i].fd >= 0 && fds[i].revents != 0 {
                let n = buffer.withUnsafeMutableBytes { read(fds[i].fd, $0.baseAddress, $0.count) }
                if n > 0 {
                    if i == 0 { if out.count < outputBytesMax { out += buffer[0..<n] } } else if err.count < outputBytesMax { err += buffer[0..<n] }
                } else if n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN) {
                    close(fds[i].fd)
                    fds[i].fd = -1
                    open -= 1
                }
            }
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            if errno != EINTR { throw .current("waitpid", argv[0]) }
        }
        let exit: Int32 = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        return Result(status: exit, output: String(decoding: out, as: UTF8.self), error: String(decoding: err, as: UTF8.self))
    }

    /// Whether `program` is on PATH.
    public static func isAvailable(_ program: String) -> Bool {
        guard let path = getenv("PATH").map({ String(cString: $0) }) else { return false }
        for dir in path.split(separator: ":") where access("\(dir)/\(program)", X_OK) == 0 { return true }
        return false
    }
}
