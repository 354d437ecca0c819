import TestSupport
import AppCore
import BoardIO
import Control
import Device
import Foundation
import Journal
import RideModel
import Testing

/// The control socket served from a real epoll loop, every line answered by the device
/// runtime's own dispatch (`DeviceRuntime.control`, as `bikecomputer run` does).
final class ControlHarness {
    let loop: EpollEventLoop
    let path: String
    let dir: String
    let runtime: DeviceRuntime
    var server: ControlSocketServer!
    var drops: [ControlSocketServer.DropReason] = []

    init(_ tag: String) throws {
        dir = TestPaths.tempDir(tag)
        path = dir + "/control.sock"
        loop = try EpollEventLoop()
        let opened = FlashJournal.open(storage: SimulatedFlash(), randomSeed: 7, deviceNow: .zero)
        runtime = DeviceRuntime.boot((opened.journal, opened.core, opened.report), archive: NoArchive(), log: MemoryLog(),
                                     wall: nil, at: MonotonicInstant(milliseconds: loop.nowMs))
        server = try ControlSocketServer(path: path, loop: loop) { [unowned self] line in self.answer(line) }
        server.onDrop = { [unowned self] in self.drops.append($0) }
    }

    deinit {
        server.close()
        try? FileManager.default.removeItem(atPath: dir)
    }

    var app: AppCore { runtime.core }

    func answer(_ line: String) -> ControlSocketServer.Reply {
        let a = runtime.control(line, at: MonotonicInstant(milliseconds: loop.nowMs)) {
            StatusReport(state: runtime.state, timerMs: runtime.core.screen.timerMs, loopTurns: loop.stats.turns).json()
        }
        return .init(a.line, isError: a.isError)
    }

    func pump(_ turns: Int = 5) throws {
        for _ in 0..<turns { try loop.runOnce(maxWaitMs: 2) }
    }
}

struct ControlSocketTests {
    @Test func socketIsOwnerOnly() throws {
        let h = try ControlHarness("mode")
        let (mode, owner) = try ControlSocketClient.fileMode(h.path)
        #expect(mode == 0o600, "socket mode \(String(mode, radix: 8))")
        #expect(owner == getuid())
    }

    @Test func commandsAndRefusals() throws {
        let h = try ControlHarness("cmds")
        let c = try RawClient(path: h.path)
        c.send("start\n")
        var lines = try c.waitForLines(1, loop: h.loop)
        #expect(lines.last?.hasPrefix("ok prepared") == true, "\(lines)")
        c.send("start\r\n")
        lines = try c.waitForLines(2, loop: h.loop)
        let refusal = try #require(lines.last)
        #expect(refusal.hasPrefix("error "), "start during a ride must be refused: \(refusal)")
        #expect(ControlProtocol.parseReply(refusal).ok == false)
        c.send("status\n")
        lines = try c.waitForLines(3, loop: h.loop)
        let status = try #require(lines.last)
        #expect(status.hasPrefix("ok {"))
        let json = try JSONSerialization.jsonObject(with: Data(status.dropFirst(3).utf8)) as? [String: Any]
        #expect(json?["state"] as? String == SessionState.prepared.description)
        c.send("fly away\n")
        lines = try c.waitForLines(4, loop: h.loop)
        #expect(lines.last?.hasPrefix("error unknown command 'fly'") == true)
        #expect(h.drops.isEmpty)
    }

    /// The `ctl` executable: success prints the reply and exits 0, a refusal exits 1.
    @Test func ctlClientExitCodes() throws {
        let h = try ControlHarness("ctl")
        func ctl(_ words: [String]) throws -> (Int32, String, String) {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: TestPaths.bikecomputer)
            p.arguments = ["ctl"] + words + ["--socket", h.path]
            let out = Pipe(), err = Pipe()
            p.standardOutput = out
            p.standardError = err
            try p.run()
            while p.isRunning { try h.pump(1) }
            return (p.terminationStatus,
                    String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self),
                    String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
        }
        guard FileManager.default.isExecutableFile(atPath: TestPaths.bikecomputer) else {
            Issue.record("bikecomputer not built at \(TestPaths.bikecomputer)")
            return
        }
        let (s1, o1, _) = try ctl(["start"])
        #expect(s1 == 0)
        #expect(o1.contains("countdown"))
        let (s2, _, e2) = try ctl(["start"])
        #expect(s2 == 1, "start while a ride is in progress exits non-zero")
        #expect(!e2.isEmpty)
        let (s3, o3, _) = try ctl(["status"])
        #expect(s3 == 0)
        #expect(o3.hasPrefix("{"))
        let (s4, _, _) = try ctl(["bogus"])
        #expect(s4 == 64)
    }

    /// Another user cannot connect: the file mode refuses them (EACCES), and if the mode were
    /// opened up, the peer-credential check drops them.
    @Test func anotherUserIsRefused() throws {
        let h = try ControlHarness("perm")
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") else {
            // Not root here: only the mode can be checked (socketIsOwnerOnly).
            return
        }
        // The socket's directory must be traversable for the other user to reach the mode check.
        #expect(chmod(h.dir, 0o755) == 0)
        // A copy of the helper that the other user can execute wherever the build tree lives.
        let helper = h.dir + "/helper"
        try FileManager.default.copyItem(atPath: TestPaths.helper, toPath: helper)
        chmod(helper, 0o755)
        func connectAsNobody() throws -> (Int32, String) {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            p.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", helper, "connect", h.path]
            let out = Pipe()
            p.standardOutput = out
            try p.run()
            while p.isRunning { try h.pump(1) }
            #expect(p.terminationReason == .exit, "the helper died of signal \(p.terminationStatus)")
            return (p.terminationStatus, String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
        }
        let (status, output) = try connectAsNobody()
        #expect(status == 13, "nobody must get EACCES: \(status) \(output)")
        // Defence in depth: with the mode opened, the server still refuses another uid.
        #expect(chmod(h.path, 0o666) == 0)
        #expect(try ControlSocketClient.fileMode(h.path).mode == 0o666)
        let (status2, output2) = try connectAsNobody()
        #expect(status2 == 0)
        #expect(output2.contains("error dropped peer_not_allowed"), "\(output2)")
        #expect(h.drops == [.peerNotAllowed])
        #expect(h.server.clientCount == 0)
    }

    @Test func manyClientsAreServedAndTheSurplusRefused() throws {
        let h = try ControlHarness("many")
        var clients: [RawClient] = []
        for _ in 0..<ControlSocketServer.Limits.clientsMax { clients.append(try RawClient(path: h.path)) }
        try h.pump(10)
        #expect(h.server.clientCount == ControlSocketServer.Limits.clientsMax)
        let extra = try RawClient(path: h.path)
        let extraLines = try extra.waitForLines(1, loop: h.loop)
        #expect(extraLines.first?.hasPrefix("error dropped too_many_clients") == true)
        for (i, c) in clients.enumerated() { c.send(i % 2 == 0 ? "status\n" : "help\n") }
        for c in clients {
            let lines = try c.waitForLines(1, loop: h.loop)
            #expect(lines.count == 1 && lines[0].hasPrefix("ok "))
        }
        clients.removeAll() // closes them
        try h.pump(10)
        #expect(h.server.clientCount == 0)
        #expect(h.server.counters.closedByPeer == UInt64(ControlSocketServer.Limits.clientsMax))
    }

    /// Seeded random garbage: over-long lines are dropped with a reason, invalid lines get
    /// error replies until the limit, and a well-behaved client is served throughout.
    @Test func garbageIsDroppedWithAReason() throws {
        let h = try ControlHarness("garbage")
        let good = try RawClient(path: h.path)
        let seed = UInt64.random(in: 1...UInt64.max)
        var rng = SeededRandom(seed: seed)
        // A line longer than the limit without a newline.
        let long = try RawClient(path: h.path)
        long.send((0..<ControlSocketServer.Limits.requestLineBytesMax + 10).map { _ in UInt8.random(in: 0x21...0x7E, using: &rng) })
        let longLines = try long.waitForLines(1, loop: h.loop)
        #expect(longLines.first?.hasPrefix("error dropped line_too_long") == true, "seed \(seed)")
        // Short binary lines: each answered with an error, then the client is dropped.
        let noisy = try RawClient(path: h.path)
        for _ in 0..<ControlSocketServer.Limits.consecutiveErrorsMax {
            var bytes = (0..<Int.random(in: 1...40, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            bytes.removeAll { $0 == UInt8(ascii: "\n") }
            bytes.append(contentsOf: [0x01, UInt8(ascii: "\n")]) // always invalid
            noisy.send(bytes)
        }
        let noisyLines = try noisy.waitForLines(ControlSocketServer.Limits.consecutiveErrorsMax + 1, loop: h.loop)
        #expect(noisyLines.count == ControlSocketServer.Limits.consecutiveErrorsMax + 1, "seed \(seed): \(noisyLines)")
        #expect(noisyLines.dropLast().allSatisfy { $0.hasPrefix("error ") }, "seed \(seed)")
        #expect(noisyLines.last?.hasPrefix("error dropped too_many_invalid_lines") == true, "seed \(seed)")
        good.send("help\n")
        #expect(try good.waitForLines(1, loop: h.loop).first?.hasPrefix("ok commands") == true)
        #expect(h.drops.sorted { $0.rawValue < $1.rawValue } == [.lineTooLong, .tooManyInvalidLines])
    }

    /// A client that sends requests but never reads: its replies pile up to the per-client
    /// limit, then it is dropped; no loop turn blocks on it meanwhile.
    @Test func clientThatNeverReadsIsDropped() throws {
        let h = try ControlHarness("noread")
        let c = try RawClient(path: h.path)
        let request = Array(String(repeating: "status\n", count: 32).utf8)
        var longestTurnNs: UInt64 = 0
        for _ in 0..<2_000 where h.drops.isEmpty {
            c.send(request)
            let t0 = MonotonicClock.nowNs
            try h.loop.runOnce(maxWaitMs: 1)
            longestTurnNs = max(longestTurnNs, MonotonicClock.nowNs - t0)
        }
        #expect(h.drops == [.notReading])
        #expect(h.server.clientCount == 0)
        #expect(longestTurnNs < 200_000_000, "a turn took \(longestTurnNs) ns")
    }
}

/// The same server on the manual-time loop (as in the simulator): real sockets, manual clock.
struct ControlSocketManualTimeTests {
    @Test func idleClientIsDroppedAfterTheTimeout() throws {
        let dir = TestPaths.tempDir("idle")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let loop = ManualEventLoop(startMs: 5_000)
        var drops: [ControlSocketServer.DropReason] = []
        let server = try ControlSocketServer(path: dir + "/c.sock", loop: loop) { _ in .init("ok pong") }
        server.onDrop = { drops.append($0) }
        let idle = try RawClient(path: server.path)
        let busy = try RawClient(path: server.path)
        loop.pollDescriptors()
        #expect(server.clientCount == 2)
        let timeoutMs = ControlSocketServer.Limits.idleTimeoutMs
        // The busy client speaks every 10 s; the idle one never does.
        for _ in 0..<(Int(timeoutMs / 10_000) + 1) {
            busy.send("status\n")
            loop.pollDescriptors()
            loop.advanceTime(byMs: 10_000)
        }
        #expect(drops == [.idle])
        #expect(server.clientCount == 1)
        idle.receive()
        #expect(idle.lines.last?.hasPrefix("error dropped idle") == true)
        busy.receive()
        #expect(busy.lines.allSatisfy { $0 == "ok pong" } && !busy.lines.isEmpty)
        server.close()
        #expect(!FileManager.default.fileExists(atPath: server.path))
        #expect(loop.registrationCount == 0)
        #expect(loop.liveTimerCount == 0)
    }
}

final class NoArchive: RideArchivePort {
    func store(rideID: RideID, records: [RideRecord]) throws -> String { "dropped" }
    func delete(rideID: RideID) throws {}
}

/// A request line holding a line break (a sensor name "HR\ndiscard" typed or heard over the
/// air) is refused by the client before anything is sent: the server would read the text
/// after the break as a second command.
struct ControlSocketClientLineBreakTests {
    final class Outcome: @unchecked Sendable {
        let lock = NSLock()
        var result: Result<String, SystemError>?
        func set(_ r: Result<String, SystemError>) { lock.lock(); result = r; lock.unlock() }
        func get() -> Result<String, SystemError>? { lock.lock(); defer { lock.unlock() }; return result }
    }

    @Test(arguments: ["sensors pair ble:C0:FF:EE:00:11:22 heart_rate HR\ndiscard", "sensors pair ble:C0:FF:EE:00:11:22 heart_rate HR\r\nend"])
    func aLineBreakInTheRequestIsRefusedAndNothingIsSent(line: String) throws {
        let h = try ControlHarness("linebreak")
        var seen: [String] = []
        let server = try ControlSocketServer(path: h.dir + "/seen.sock", loop: h.loop) { line in
            seen.append(line)
            return .init("ok heard", isError: false)
        }
        defer { server.close() }
        let outcome = Outcome()
        let path = h.dir + "/seen.sock"
        let t = Thread {
            do throws(SystemError) { outcome.set(.success(try ControlSocketClient.request(line, path: path))) } catch { outcome.set(.failure(error)) }
        }
        t.start()
        let deadline = Date().addingTimeInterval(5)
        while outcome.get() == nil && Date() < deadline { try h.pump(1) }
        try h.pump(5)
        guard case .failure(let e)? = outcome.get() else {
            Issue.record("the request was sent: \(String(describing: outcome.get())), the server read \(seen)")
            return
        }
        #expect(e.errno == EINVAL && e.description.contains("line break"), "\(e)")
        #expect(seen.isEmpty, "nothing reached the server: \(seen)")
    }
}
