// A small process the board tests drive from outside:
//   board-test-helper loop-signal DIR   runs an EpollEventLoop with a 5 ms periodic timer that
//       buffers "records" in memory; on SIGTERM/SIGINT the shutdown hook writes them to
//       DIR/journal, fdatasyncs it, writes DIR/clean, stops the loop and exits 0. DIR/ready
//       appears once the signal handler is installed.
//   board-test-helper connect PATH      connects to a Unix socket, sends `status`, prints the
//       reply; exits 0 when connected, 13 on EACCES, 1 otherwise.
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
default:
    exit(64)
}
