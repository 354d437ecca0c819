// A small process the board tests drive from outside:
//   board-test-helper loop-signal DIR   runs an EpollEventLoop with a 5 ms periodic timer that
//       buffers "records" in memory; on SIGTERM/SIGINT the shutdown hook writes them to
//       DIR/journal, fdatasyncs it, writes DIR/clean, stops the loop and exits 0. DIR/ready
//       appears once the signal handler is installed.
//   board-test-helper connect PATH      connects to a Unix socket, sends `status`, prints the
//       reply; exits 0 when connected, 13 on EACCES, 1 otherwise.
//   board-test-helper loop-bench SECONDS  measures the loop: a 1 Hz tick, 40 ms display slices
//       and 16 frames/s written to a pipe by another thread (like the bridge socket); prints
//       frame-to-handler latency and timer lateness (p50/p99/max) and the handler figures.
import BoardIO
import Glibc

func writeFile(_ path: String, _ text: String, sync: Bool = false) throws(SystemError) {
    let fd = try FileDescriptor.open(path, O_WRONLY | O_CREAT | O_TRUNC, mode: 0o644)
    defer { fd.close() }
    try fd.writeAll(Array(text.utf8))
    if sync { _ = try retryingOnInterrupt("fdatasync", path) { fdatasync(fd.rawValue) } }
}

let args = CommandLine.arguments
guard args.count == 3 else {
    print("usage: board-test-helper loop-signal DIR | connect PATH")
    exit(64)
}

switch args[1] {
case "loop-signal":
    let dir = args[2]
    do {
        let loop = try EpollEventLoop()
        var records: [String] = []
        loop.scheduleRepeating("helper.tick", everyMs: 5) { records.append("record \(records.count)") }
        try loop.handleSignals([SIGTERM, SIGINT]) { signo in
            // The shutdown hook: make everything buffered durable, then leave the loop.
            do {
                try writeFile(dir + "/journal", records.joined(separator: "\n") + "\nend signal \(signo)\n", sync: true)
                try writeFile(dir + "/clean", "ok\n", sync: true)
            } catch {
                print("shutdown hook failed: \(error)")
                exit(3)
            }
            loop.stop()
        }
        try writeFile(dir + "/ready", "\(getpid())\n")
        try loop.run()
        exit(0)
    } catch {
        print("loop failed: \(error)")
        exit(2)
    }
case "connect":
    do {
        let reply = try ControlSocketClient.request("status", path: args[2])
        print(reply)
        exit(0)
    } catch {
        print("connect failed: \(error)")
        exit(error.errno == EACCES ? 13 : 1)
    }
case "loop-bench":
    let seconds = Int64(args[2]) ?? 10
    do {
        try runLoopBench(seconds: seconds)
        exit(0)
    } catch {
        print("bench failed: \(error)")
        exit(2)
    }
default:
    exit(64)
}

func percentiles(_ xs: [UInt64]) -> String {
    guard !xs.isEmpty else { return "no samples" }
    let s = xs.sorted()
    func p(_ q: Int) -> Double { Double(s[min(s.count - 1, max(0, (q * s.count + 99) / 100 - 1))]) / 1_000 }
    return "p50 \(p(50)) us, p99 \(p(99)) us, max \(Double(s.last!) / 1_000) us (n=\(s.count))"
}

func runLoopBench(seconds: Int64) throws {
    let loop = try EpollEventLoop()
    var fds: [Int32] = [0, 0]
    guard pipe(&fds) == 0 else { throw SystemError.current("pipe") }
    let reader = FileDescriptor(rawValue: fds[0])
    try reader.setNonBlocking()
    var frameLatencyNs: [UInt64] = []
    var tickLatenessNs: [UInt64] = []
    var sliceLatenessNs: [UInt64] = []
    frameLatencyNs.reserveCapacity(Int(seconds) * 20)
    var buffer = [UInt8](repeating: 0, count: 8 * 64)
    _ = try loop.register(reader, "bridge.frames", interest: .read) { _ in
        let n = buffer.withUnsafeMutableBytes { Glibc.read(fds[0], $0.baseAddress, $0.count) }
        let now = MonotonicClock.nowNs
        guard n > 0 else { return }
        for i in stride(from: 0, to: n - 7, by: 8) {
            var sent: UInt64 = 0
            for b in 0..<8 { sent |= UInt64(buffer[i + b]) << (8 * UInt64(b)) }
            frameLatencyNs.append(now &- sent)
        }
    }
    let startMs = loop.nowMs
    var nextTickMs = startMs + 1_000
    loop.scheduleRepeating("tick", everyMs: 1_000) {
        tickLatenessNs.append(MonotonicClock.nowNs &- UInt64(nextTickMs) * 1_000_000)
        nextTickMs += 1_000
    }
    var nextSliceMs = startMs + 40
    loop.scheduleRepeating("display.slice", everyMs: 40) {
        sliceLatenessNs.append(MonotonicClock.nowNs &- UInt64(nextSliceMs) * 1_000_000)
        nextSliceMs += 40
    }
    loop.scheduleTimer("end", afterMs: seconds * 1_000) { loop.stop() }
    let writerFD = fds[1]
    let writer = Thread(seconds: seconds) {
        var stamp = MonotonicClock.nowNs
        withUnsafeBytes(of: &stamp) { _ = Glibc.write(writerFD, $0.baseAddress, 8) }
    }
    writer.start()
    try loop.run()
    print("frame -> handler latency: \(percentiles(frameLatencyNs))")
    print("1 Hz tick lateness:       \(percentiles(tickLatenessNs))")
    print("40 ms slice lateness:     \(percentiles(sliceLatenessNs))")
    print("longest turn: \(Double(loop.stats.turnMaxNs) / 1_000) us over \(loop.stats.turns) turns")
    for h in loop.stats.handlers {
        print("handler \(h.name): calls \(h.calls), window max \(Double(h.windowMaxNs) / 1_000) us, p99 \(Double(h.windowP99Ns) / 1_000) us")
    }
}

/// Writes a timestamp to the pipe 16 times a second (4 sensors at 4 Hz) for `seconds`.
final class Thread: @unchecked Sendable {
    let seconds: Int64
    let body: () -> Void
    var thread = pthread_t()
    init(seconds: Int64, _ body: @escaping () -> Void) {
        self.seconds = seconds
        self.body = body
    }
    func start() {
        let box = Unmanaged.passRetained(self)
        pthread_create(&thread, nil, { arg in
            let me = Unmanaged<Thread>.fromOpaque(arg!).takeRetainedValue()
            for _ in 0..<(me.seconds * 16) {
                usleep(62_500)
                me.body()
            }
            return nil
        }, box.toOpaque())
    }
}
