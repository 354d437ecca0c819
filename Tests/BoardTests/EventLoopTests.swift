import TestSupport
@testable import BoardIO
import Foundation
import Testing

struct ManualEventLoopTests {
    /// Random deadlines fire in deadline order, each seeing the clock at its own deadline; ties
    /// fire in scheduling order.
    @Test func timersFireInDeadlineOrder() {
        for seed in UInt64(1)...20 {
            var rng = SeededRandom(seed: seed)
            let loop = ManualEventLoop(startMs: 1_000)
            var fired: [(index: Int, deadline: Int64, now: Int64)] = []
            var deadlines: [Int64] = []
            for i in 0..<100 {
                let d = 1_000 + Int64.random(in: 0...50, using: &rng) * 10
                deadlines.append(d)
                loop.scheduleTimer("t", atMs: d, periodMs: nil) { fired.append((i, d, loop.nowMs)) }
            }
            loop.advanceTime(byMs: 250)
            let expected = deadlines.enumerated().filter { $0.element <= 1_250 }
                .sorted { $0.element != $1.element ? $0.element < $1.element : $0.offset < $1.offset }.map(\.offset)
            #expect(fired.map(\.index) == expected, "seed \(seed)")
            #expect(fired.allSatisfy { $0.deadline == $0.now }, "seed \(seed)")
            #expect(loop.nowMs == 1_250)
            loop.advanceTime(byMs: 1_000)
            #expect(fired.count == 100, "seed \(seed)")
        }
    }

    @Test func periodicTimersAndCancel() {
        let loop = ManualEventLoop()
        var ticks: [Int64] = []
        var slices = 0
        let tick = loop.scheduleRepeating("tick", everyMs: 1_000) { ticks.append(loop.nowMs) }
        loop.scheduleRepeating("slice", everyMs: 40) { slices += 1 }
        let once = loop.scheduleTimer("once", afterMs: 500) { Issue.record("cancelled timer fired") }
        loop.cancelTimer(once)
        loop.advanceTime(byMs: 3_500)
        #expect(ticks == [1_000, 2_000, 3_000])
        #expect(slices == 3_500 / 40)
        loop.cancelTimer(tick)
        loop.advanceTime(byMs: 5_000)
        #expect(ticks.count == 3)
        #expect(loop.liveTimerCount == 1)
    }

    /// A timer scheduled by a handler inside the advanced window fires in the same advance.
    @Test func timersScheduledByHandlersFireInWindow() {
        let loop = ManualEventLoop()
        var order: [String] = []
        loop.scheduleTimer("a", afterMs: 10) {
            order.append("a@\(loop.nowMs)")
            loop.scheduleTimer("b", afterMs: 5) { order.append("b@\(loop.nowMs)") }
        }
        loop.scheduleTimer("c", afterMs: 12) { order.append("c@\(loop.nowMs)") }
        loop.advanceTime(byMs: 100)
        #expect(order == ["a@10", "c@12", "b@15"])
    }

    @Test func descriptorsAndSignalsThroughTheSameAPI() throws {
        let loop = ManualEventLoop()
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        var got: [UInt8] = []
        let r = try loop.register(FileDescriptor(rawValue: fds[0]), "pipe", interest: .read) { readiness in
            #expect(readiness.contains(.readable))
            var b = [UInt8](repeating: 0, count: 16)
            let n = b.withUnsafeMutableBytes { read(fds[0], $0.baseAddress, $0.count) }
            got += b[0..<max(0, n)]
        }
        #expect(loop.pollDescriptors() == 0)
        _ = [UInt8]([1, 2, 3]).withUnsafeBytes { write(fds[1], $0.baseAddress, 3) }
        #expect(loop.pollDescriptors() == 1)
        #expect(got == [1, 2, 3])
        #expect(throws: EventLoopError.alreadyRegistered(FileDescriptor(rawValue: fds[0]))) {
            _ = try loop.register(FileDescriptor(rawValue: fds[0]), "again", interest: .read) { _ in }
        }
        loop.deregister(r)
        #expect(loop.registrationCount == 0)
        var signals: [Int32] = []
        try loop.handleSignals([SIGTERM]) { signals.append($0); loop.stop() }
        loop.raise(SIGINT) // not handled
        loop.raise(SIGTERM)
        #expect(signals == [SIGTERM])
        #expect(loop.isStopped)
    }

    /// More due timers than `timersPerWakeMax` are fired over several turns, still in order.
    @Test func workPerTurnIsCapped() {
        let loop = ManualEventLoop()
        var fired: [Int] = []
        let n = EventLoopLimits.timersPerWakeMax * 3 + 5
        for i in 0..<n { loop.scheduleTimer("burst", atMs: Int64(i % 7), periodMs: nil) { fired.append(i) } }
        loop.advanceTime(byMs: 10)
        #expect(fired.count == n)
        #expect(loop.stats.turnsCapped == 3)
        let expected = (0..<n).sorted { ($0 % 7, $0) < ($1 % 7, $1) }
        #expect(fired == expected)
    }
}

struct HandlerTimingTests {
    /// p99 and max over the window are nearest-rank figures of the last
    /// `timingWindowCount` durations only.
    @Test func rollingMaxAndP99() {
        var t = HandlerTimings(name: "probe")
        for ns in 1...2_000 { t.record(UInt64(ns)) }
        let window = EventLoopLimits.timingWindowCount
        #expect(t.calls == 2_000)
        #expect(t.maxEverNs == 2_000)
        #expect(t.windowMaxNs == 2_000)
        let low = UInt64(2_000 - window + 1)
        let rank = (99 * window + 99) / 100
        #expect(t.windowP99Ns == low + UInt64(rank) - 1)
        #expect(t.windowSamplesNs.first == low)
        #expect(t.windowSamplesNs.count == window)
        // One outlier in the window moves the max but not the p99.
        var u = HandlerTimings(name: "outlier")
        for _ in 0..<window - 1 { u.record(1_000) }
        u.record(50_000_000)
        #expect(u.windowMaxNs == 50_000_000)
        #expect(u.windowP99Ns == 1_000)
        // After a full window of quick calls the outlier leaves the window max.
        for _ in 0..<window { u.record(1_000) }
        #expect(u.windowMaxNs == 1_000)
        #expect(u.maxEverNs == 50_000_000)
    }
}

struct EpollEventLoopTests {
    @Test func realTimersFireInOrderAndOnTime() throws {
        let loop = try EpollEventLoop()
        let start = loop.nowMs
        var fired: [(Int, Int64)] = []
        for (i, delay) in [30, 10, 20, 10, 0].enumerated() {
            loop.scheduleTimer("t", afterMs: Int64(delay)) { fired.append((i, loop.nowMs - start)) }
        }
        var periodic = 0
        loop.scheduleRepeating("p", everyMs: 7) { periodic += 1 }
        while loop.nowMs - start < 100 { try loop.runOnce(maxWaitMs: 50) }
        #expect(fired.map(\.0) == [4, 1, 3, 2, 0])
        for (i, at) in fired {
            let due = [30, 10, 20, 10, 0][i]
            // Never early; the upper bound is loose because the test machine is shared.
            #expect(at >= Int64(due) && at < Int64(due) + 250, "timer \(i) due at \(due) ms fired at \(at) ms")
        }
        // Late periods are skipped, never bunched: at most one firing per 7 ms.
        #expect(periodic >= 3 && periodic <= 15, "7 ms period over 100 ms fired \(periodic) times")
        #expect(UInt64(periodic) + loop.stats.timerPeriodsSkipped >= 12)
    }

    /// The loop measures each handler: a handler that spins 8 ms shows a window max ≥ 8 ms,
    /// and a quick handler's figures stay small.
    @Test func handlerTimeIsMeasured() throws {
        let loop = try EpollEventLoop()
        var slowCalls = 0
        loop.scheduleRepeating("slow", everyMs: 10) {
            let t0 = MonotonicClock.nowNs
            while MonotonicClock.nowNs - t0 < 8_000_000 {}
            slowCalls += 1
        }
        loop.scheduleRepeating("fast", everyMs: 3) {}
        let start = loop.nowMs
        while loop.nowMs - start < 120 { try loop.runOnce(maxWaitMs: 20) }
        let slow = try #require(loop.stats.timings("slow"))
        let fast = try #require(loop.stats.timings("fast"))
        #expect(slow.calls == UInt64(slowCalls))
        #expect(slow.windowMaxNs >= 8_000_000)
        #expect(slow.windowP99Ns >= 8_000_000)
        #expect(fast.percentileNs(50) < 1_000_000, "an empty handler's median was \(fast.percentileNs(50)) ns")
        #expect(loop.stats.slowestHandler?.name == "slow")
        #expect(loop.stats.turnMaxNs >= 8_000_000)
    }

    /// The loop counts its slow turns per threshold: a turn counts under every threshold it
    /// reaches and none above; the thresholds come back in order with their counts.
    @Test func slowTurnsAreCountedPerThreshold() throws {
        let loop = try EpollEventLoop()
        var left = 3
        loop.scheduleRepeating("busy", everyMs: 5) {
            guard left > 0 else { return }
            left -= 1
            let t0 = MonotonicClock.nowNs
            while MonotonicClock.nowNs - t0 < 55_000_000 {} // 55 ms: over 50, under 100
        }
        let start = loop.nowMs
        while loop.nowMs - start < 400 { try loop.runOnce(maxWaitMs: 20) }
        let slow = loop.stats.slowTurns
        #expect(slow.map(\.ms) == EventLoopLimits.slowTurnThresholdsMs)
        #expect(slow[0].turns == 3, "turns of at least 50 ms: \(slow)")
        // A turn can only be longer than its handler: on a loaded host one may pass 100 ms.
        #expect(slow[1].turns <= 3 && slow.dropFirst(2).allSatisfy { $0.turns <= slow[1].turns })
        var stats = EventLoopStats()
        stats.recordTurn(250_000_000)
        stats.recordTurn(1_000_000_000)
        stats.recordTurn(49_999_999)
        #expect(stats.slowTurns.map(\.turns) == [2, 2, 2, 1, 1])
        #expect(stats.turnMaxNs == 1_000_000_000)
    }

    @Test func descriptorsWakerAndInterest() throws {
        let loop = try EpollEventLoop()
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        var readable = 0
        var writable = 0
        let r = try loop.register(FileDescriptor(rawValue: fds[0]), "pipe.read", interest: .read) { _ in
            var b = [UInt8](repeating: 0, count: 64)
            _ = b.withUnsafeMutableBytes { read(fds[0], $0.baseAddress, $0.count) }
            readable += 1
        }
        let w = try loop.register(FileDescriptor(rawValue: fds[1]), "pipe.write", interest: []) { _ in writable += 1 }
        try loop.runOnce(maxWaitMs: 0)
        #expect(readable == 0 && writable == 0)
        try loop.setInterest(w, .write)
        try loop.runOnce(maxWaitMs: 100)
        #expect(writable == 1)
        try loop.setInterest(w, [])
        _ = [UInt8]([7]).withUnsafeBytes { write(fds[1], $0.baseAddress, 1) }
        try loop.runOnce(maxWaitMs: 100)
        #expect(readable == 1)
        loop.deregister(r)
        loop.deregister(w)

        // The waker ends a wait that would otherwise last 5 s.
        let waker = loop.waker
        let t = Thread { usleep(20_000); waker.wake() }
        t.start()
        let before = loop.nowMs
        try loop.runOnce(maxWaitMs: 5_000)
        #expect(loop.nowMs - before < 2_000)
    }

    /// A handler that deregisters another descriptor ready in the same wake-up: the other
    /// handler does not run.
    @Test func deregisteredInTheSameTurnDoesNotRun() throws {
        let loop = try EpollEventLoop()
        var a: [Int32] = [0, 0], b: [Int32] = [0, 0]
        #expect(pipe(&a) == 0 && pipe(&b) == 0)
        defer { close(a[0]); close(a[1]); close(b[1]) }
        var ran: [String] = []
        var regB: IORegistration?
        var regA: IORegistration?
        regA = try loop.register(FileDescriptor(rawValue: a[0]), "a", interest: .read) { _ in
            ran.append("a")
            if let r = regB { loop.deregister(r); close(b[0]) }
            loop.deregister(regA!)
        }
        regB = try loop.register(FileDescriptor(rawValue: b[0]), "b", interest: .read) { _ in
            ran.append("b")
            if let r = regA { loop.deregister(r) }
            loop.deregister(regB!)
            close(b[0])
            regB = nil
        }
        _ = [UInt8]([1]).withUnsafeBytes { write(a[1], $0.baseAddress, 1) }
        _ = [UInt8]([1]).withUnsafeBytes { write(b[1], $0.baseAddress, 1) }
        try loop.runOnce(maxWaitMs: 100)
        #expect(ran.count == 1, "\(ran)")
    }

    /// The real loop fires at most `timersPerWakeMax` timers per turn, in order, and says so.
    @Test func epollTurnsAreCapped() throws {
        let loop = try EpollEventLoop()
        var fired: [Int] = []
        let now = loop.nowMs
        for i in 0..<(EventLoopLimits.timersPerWakeMax * 2 + 1) {
            loop.scheduleTimer("burst", atMs: now - 1, periodMs: nil) { fired.append(i) }
        }
        try loop.runOnce(maxWaitMs: 100)
        #expect(fired == Array(0..<EventLoopLimits.timersPerWakeMax))
        #expect(loop.stats.turnsCapped == 1)
        try loop.runOnce(maxWaitMs: 100)
        try loop.runOnce(maxWaitMs: 100)
        #expect(fired == Array(0..<(EventLoopLimits.timersPerWakeMax * 2 + 1)))
    }

    @Test func stopEndsRun() throws {
        let loop = try EpollEventLoop()
        var n = 0
        loop.scheduleRepeating("count", everyMs: 1) {
            n += 1
            if n == 5 { loop.stop() }
        }
        try loop.run()
        #expect(n == 5)
    }

    /// A real process, a real SIGTERM: the loop's signal handler runs the shutdown hook (the
    /// buffered records become durable) and the process exits 0.
    @Test(arguments: [SIGTERM, SIGINT])
    func signalShutdownMakesBufferedRecordsDurable(_ signal: Int32) throws {
        let dir = TestPaths.tempDir("signal")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: TestPaths.helper)
        p.arguments = ["loop-signal", dir]
        try p.run()
        var waited = 0
        while !FileManager.default.fileExists(atPath: dir + "/ready") && waited < 500 { usleep(10_000); waited += 1 }
        try #require(FileManager.default.fileExists(atPath: dir + "/ready"), "helper never became ready")
        usleep(100_000) // let some records accumulate
        #expect(kill(p.processIdentifier, signal) == 0)
        p.waitUntilExit()
        #expect(p.terminationReason == .exit)
        #expect(p.terminationStatus == 0)
        let journal = try String(contentsOfFile: dir + "/journal", encoding: .utf8)
        let lines = journal.split(separator: "\n")
        #expect(lines.last == "end signal \(signal)")
        #expect(lines.count >= 5, "only \(lines.count) records after 100 ms of 5 ms ticks")
        for (i, l) in lines.dropLast().enumerated() { #expect(l == "record \(i)") }
        #expect(FileManager.default.fileExists(atPath: dir + "/clean"))
    }
}

/// The timer heap (lazy cancellation, compaction, periodic re-queueing) against a brute-force
/// model: random schedules, cancels and advances must fire the same timers in the same order.
struct TimerQueuePropertyTests {
    struct ModelTimer { var deadline: Int64; var seq: Int; var period: Int64? }

    @Test func heapMatchesBruteForce() {
        let base = UInt64.random(in: 1...UInt64.max / 2)
        for k in 0..<40 {
            let seed = base + UInt64(k)
            var rng = SeededRandom(seed: seed)
            let loop = ManualEventLoop()
            var fired: [Int] = []
            var expected: [Int] = []
            var model: [Int: ModelTimer] = [:]
            var ids: [Int: TimerID] = [:]
            var seq = 0
            var next = 0
            for _ in 0..<400 {
                switch Int.random(in: 0..<10, using: &rng) {
                case 0..<5:
                    let name = next
                    next += 1
                    let deadline = loop.nowMs + Int64.random(in: 0...200, using: &rng)
                    let period: Int64? = Int.random(in: 0..<4, using: &rng) == 0 ? Int64.random(in: 1...50, using: &rng) : nil
                    ids[name] = loop.scheduleTimer("p", atMs: deadline, periodMs: period) { fired.append(name) }
                    model[name] = ModelTimer(deadline: deadline, seq: seq, period: period)
                    seq += 1
                case 5..<8:
                    if let victim = model.keys.randomElement(using: &rng) {
                        loop.cancelTimer(ids[victim]!)
                        model[victim] = nil
                    }
                default:
                    let target = loop.nowMs + Int64.random(in: 0...60, using: &rng)
                    // Brute force: repeatedly the smallest (deadline, seq) due by `target`.
                    while let (name, t) = model.filter({ $0.value.deadline <= target })
                        .min(by: { ($0.value.deadline, $0.value.seq) < ($1.value.deadline, $1.value.seq) }) {
                        expected.append(name)
                        if let p = t.period {
                            model[name] = ModelTimer(deadline: t.deadline + p, seq: seq, period: p)
                            seq += 1
                        } else {
                            model[name] = nil
                        }
                    }
                    loop.advanceTime(toMs: target)
                }
            }
            #expect(fired == expected, "seed \(seed)")
            #expect(loop.liveTimerCount == model.count, "seed \(seed)")
        }
    }
}
