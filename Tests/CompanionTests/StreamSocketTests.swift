import AppCore
import BoardIO
import CBoardShims
import Control
import Device
import Foundation
import Glibc
import Journal
import RideModel
import Testing

/// A device as the board runs it (its runtime on memory ports) with its control stream: the
/// core's effects reach the stream through the runtime's observers, the 1 Hz timer through
/// `run(seconds:)`.
final class DeviceStreamHarness {
    let runtime: DeviceRuntime
    let stream = ControlStream(streamID: 0xB1C0_FFEE)
    var lines: [String] = []
    var nowMs: Int64 = 1_000

    init() {
        let opened = FlashJournal.open(storage: SimulatedFlash(), randomSeed: 11, deviceNow: .zero)
        runtime = DeviceRuntime.boot((opened.journal, opened.core, opened.report), archive: NullArchive(), log: MemoryLog(),
                                     wall: nil, at: .zero)
        _ = runtime.addObserver(stream)
        stream.sink = { [unowned self] in self.lines.append($0) }
    }

    var core: AppCore { runtime.core }
    var now: MonotonicInstant { MonotonicInstant(milliseconds: nowMs) }

    func command(_ c: ControlCommand) { runtime.command(c, at: now) }

    /// `seconds` run-loop seconds: the runtime's tick, then the stream's 1 Hz line.
    func run(seconds: Int) {
        for _ in 0..<seconds {
            nowMs += 1_000
            runtime.tick(at: now)
            runtime.sample(stream, at: now)
        }
    }

    static func json(_ line: String) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] ?? [:]
    }
}

final class NullArchive: RideArchivePort {
    func store(rideID: RideID, records: [RideRecord]) throws -> String { "dropped" }
    func delete(rideID: RideID) throws {}
}

/// The stream served by a real `ControlSocketServer` on a real epoll loop, every line answered
/// by the runtime's own dispatch (`DeviceRuntime.control`), as `bikecomputer run` does.
final class StreamServerHarness {
    let loop: EpollEventLoop
    let dir: String
    let path: String
    let h = DeviceStreamHarness()
    var server: ControlSocketServer!
    var drops: [ControlSocketServer.DropReason] = []
    /// Called with the code the unit shows (six digits, as drawn) after each `pairing-code`.
    var onPairingCode: ((String?) -> Void)?

    init(_ tag: String) throws {
        dir = "/tmp/companion-\(tag)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        path = dir + "/control.sock"
        loop = try EpollEventLoop()
        server = try ControlSocketServer(path: path, loop: loop) { [unowned self] line in self.answer(line) }
        server.onDrop = { [unowned self] in self.drops.append($0) }
        h.stream.sink = { [unowned self] line in self.h.lines.append(line); self.server.broadcast(line) }
    }

    deinit {
        server.close()
        try? FileManager.default.removeItem(atPath: dir)
    }

    func answer(_ line: String) -> ControlSocketServer.Reply {
        let a = h.runtime.control(line, stream: h.stream, at: h.now) {
            StatusReport(state: h.core.state, timerMs: h.core.screen.timerMs).json()
        }
        if line.lowercased().hasPrefix("pairing-code") {
            onPairingCode?(h.core.screen.pairingCode.map { code in
                let digits = String(code)
                return String(repeating: "0", count: max(0, PairingCode.digits - digits.count)) + digits
            })
        }
        if let lines = a.subscription { return .subscribing(a.line, then: lines) }
        return .init(a.line, isError: a.isError)
    }

    func pump(_ turns: Int = 5) throws {
        for _ in 0..<turns { try loop.runOnce(maxWaitMs: 2) }
    }
}

/// A non-blocking test client.
final class StreamClient {
    let fd: Int32
    var received: [UInt8] = []

    init(path: String, receiveBufferBytes: Int32? = nil) throws {
        let raw = cbs_unix_connect(path)
        guard raw >= 0 else { throw SystemError.current("connect", path) }
        fd = raw
        if var size = receiveBufferBytes {
            _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }

    deinit { close(fd) }

    func send(_ text: String) { _ = Array(text.utf8).withUnsafeBytes { cbs_send(fd, $0.baseAddress, $0.count) } }

    @discardableResult
    func receive() -> Bool {
        var buf = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n > 0 { received += buf[0..<n]; continue }
            return n != 0
        }
    }

    var lines: [String] {
        String(decoding: received, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
    }

    func waitForLines(_ count: Int, _ s: StreamServerHarness) throws -> [String] {
        for _ in 0..<300 where lines.count < count {
            try s.loop.runOnce(maxWaitMs: 10)
            receive()
        }
        return lines
    }
}

struct StreamSocketTests {
    @Test func subscribeThenEventsInOrder() throws {
        let s = try StreamServerHarness("sub")
        s.h.command(.start)
        s.h.run(seconds: 4)
        let c = try StreamClient(path: s.path)
        c.send("subscribe\n")
        var lines = try c.waitForLines(2, s)
        #expect(lines.first?.hasPrefix("ok subscribed") == true, "\(lines)")
        #expect(DeviceStreamHarness.json(lines[1])["type"] as? String == "snapshot")
        let snapSeq = DeviceStreamHarness.json(lines[1])["seq"] as! Int
        #expect(s.server.subscriberCount == 1)

        // A command from another client (the phone's, the buttons'): the subscriber sees it.
        let ctl = try StreamClient(path: s.path)
        ctl.send("pause\n")
        let reply = try ctl.waitForLines(1, s)
        #expect(reply.first?.hasPrefix("ok paused") == true, "\(reply)")
        s.h.run(seconds: 2)
        try s.pump()
        lines = try c.waitForLines(2 + 4, s)
        let events = lines.dropFirst(2).map(DeviceStreamHarness.json)
        #expect(events.first?["seq"] as? Int == snapSeq + 1, "\(lines)")
        for (a, b) in zip(events, events.dropFirst()) { #expect((b["seq"] as! Int) == (a["seq"] as! Int) + 1) }
        #expect(events.contains { $0["type"] as? String == "state" && $0["state"] as? String == "paused" })
        #expect(events.filter { $0["type"] as? String == "metrics" }.count == 2)

        // The refusal passes through with the device's reason.
        ctl.send("start\n")
        let refusal = try ctl.waitForLines(2, s)
        #expect(refusal.last?.hasPrefix("error ") == true, "\(refusal)")

        // Reconnect with the last seq: missed count and replay of what happened meanwhile.
        let lastSeen = events.last!["seq"] as! Int
        s.h.command(.resume)
        s.h.command(.marker(.water, value: 250))
        let c2 = try StreamClient(path: s.path)
        c2.send("subscribe \(lastSeen) \(s.h.stream.streamID)\n")
        let again = try c2.waitForLines(4, s)
        #expect(again.first?.contains("missed=\(Int(s.h.stream.seq) - lastSeen)") == true, "\(again)")
        #expect(again.dropFirst(2).contains { $0.contains("\"type\":\"marker\"") && $0.contains("\"replay\":true") }, "\(again)")
    }

    @Test func badSubscribeIsRefusedWithAHint() throws {
        let s = try StreamServerHarness("badsub")
        let c = try StreamClient(path: s.path)
        c.send("subscribe soon\n")
        let lines = try c.waitForLines(1, s)
        #expect(lines.first?.hasPrefix("error sequence number 'soon'") == true, "\(lines)")
        #expect(s.server.subscriberCount == 0)
    }

    /// A subscriber that never reads is dropped once its queue passes the bound; a reading
    /// subscriber gets every line; no broadcast waits. Prints the slowest broadcast call.
    @Test func stuckSubscriberIsDroppedAndNeverSlowsTheLoop() throws {
        let s = try StreamServerHarness("stuck")
        let stuck = try StreamClient(path: s.path, receiveBufferBytes: 4096)
        stuck.send("subscribe\n")
        let good = try StreamClient(path: s.path)
        good.send("subscribe\n")
        try s.pump(10)
        #expect(s.server.subscriberCount == 2)

        let payload = String(repeating: "x", count: 900)
        let total = 600 // ≈ 540 KB: far more than the kernel buffer plus streamBufferBytesMax
        var slowestUs: Int64 = 0
        var sent = 0
        // Broadcast from a loop timer, as the runtime's stream does, so the loop's own handler
        // statistics see it; the good client reads between turns as a live companion would.
        let timer = s.loop.scheduleRepeating("stream.broadcast", everyMs: 1) { [unowned s] in
            for _ in 0..<4 where sent < total {
                sent += 1
                let line = "{\"seq\":\(sent),\"type\":\"metrics\",\"pad\":\"\(payload)\"}"
                let t0 = DispatchTime.now().uptimeNanoseconds
                s.server.broadcast(line)
                slowestUs = max(slowestUs, Int64((DispatchTime.now().uptimeNanoseconds - t0) / 1_000))
            }
        }
        for _ in 0..<5_000 where sent < total {
            try s.loop.runOnce(maxWaitMs: 2)
            good.receive()
        }
        s.loop.cancelTimer(timer)
        #expect(sent == total)
        let handlerMaxUs = (s.loop.stats.timings("stream.broadcast")?.maxEverNs ?? 0) / 1_000
        let lines = try good.waitForLines(2 + total, s)
        print("stuck subscriber: slowest broadcast \(slowestUs) µs, loop handler max \(handlerMaxUs) µs, turn max \(s.loop.stats.turnMaxNs / 1_000) µs over \(total) lines; drops \(s.drops)")
        #expect(s.drops.contains(.fellBehind))
        #expect(s.server.subscriberCount == 1)
        #expect(lines.count == 2 + total, "the reading subscriber lost lines: \(lines.count)")
        #expect(DeviceStreamHarness.json(lines.last!)["seq"] as? Int == total)
        #expect(slowestUs < 50_000, "a broadcast took \(slowestUs) µs")
        #expect(handlerMaxUs < 50_000, "the broadcasting handler took \(handlerMaxUs) µs")

        // The dropped client, once it reads, finds its stream ended (with the reason if the
        // socket had room for it).
        var eof = false
        for _ in 0..<100 where !eof { try s.loop.runOnce(maxWaitMs: 2); eof = !stuck.receive() }
        #expect(eof)
        let text = String(decoding: stuck.received, as: UTF8.self)
        if text.contains("error dropped") { #expect(text.contains("error dropped fell_behind")) }
    }

    @Test func streamingClientConnectionReadsLinesWithTimeout() throws {
        let s = try StreamServerHarness("conn")
        let conn = try ControlSocketClient.Connection(path: s.path)
        try conn.send("subscribe")
        // Serve the loop from another thread while this one blocks in readLine.
        let done = ManagedFlag()
        let loop = UncheckedBox(s.loop)
        let t = Thread { while !done.value { try? loop.value.runOnce(maxWaitMs: 5) } }
        t.start()
        defer { done.value = true; Thread.sleep(forTimeInterval: 0.05) }
        let ack = try conn.readLine(timeoutMs: 2_000)
        #expect(ack?.hasPrefix("ok subscribed") == true)
        let snap = try conn.readLine(timeoutMs: 2_000)
        #expect(snap?.contains("\"type\":\"snapshot\"") == true)
        do {
            _ = try conn.readLine(timeoutMs: 100)
            Issue.record("no line was due, readLine must time out")
        } catch {
            #expect(error.errno == ETIMEDOUT)
        }
    }
}

final class ManagedFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var v = false
    var value: Bool {
        get { lock.lock(); defer { lock.unlock() }; return v }
        set { lock.lock(); v = newValue; lock.unlock() }
    }
}

final class UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ v: T) { value = v }
}
