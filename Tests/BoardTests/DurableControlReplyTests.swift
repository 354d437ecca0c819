import TestSupport
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

/// Control replies to state changes only once durable (issue 17 items 5 and 6): a client that
/// gets "ok" for `pause`, `lap`, `end`... can trust the change survives a power cut, as the
/// screen confirms it only then. The card here syncs in the background (`DeferredSyncFlash`) and
/// completes each sync only when the test says so.
final class DurableReplyHarness {
    let flash = SimulatedFlash(segmentBytes: 16 * 1024)
    let card: DeferredSyncFlash
    let runtime: DeviceRuntime
    var sent: [(UInt64, ControlAnswer)] = []
    var t: Int64 = 0

    init(sink: Bool = true) {
        card = DeferredSyncFlash(flash)
        let opened = FlashJournal.open(storage: card, randomSeed: 5, deviceNow: .zero)
        runtime = DeviceRuntime.boot((opened.journal, opened.core, opened.report), archive: NoArchive(), log: MemoryLog(),
                                     wall: nil, at: .zero)
        if sink { runtime.durableReplySink = { [unowned self] id, a in self.sent.append((id, a)) } }
    }

    func control(_ line: String) -> ControlAnswer {
        runtime.control(line, at: MonotonicInstant(milliseconds: t)) { "{}" }
    }

    /// Every sync the card holds completes (the journal's eventfd fires on the board).
    func cardCatchesUp() {
        for _ in 0..<16 where card.inFlight > 0 {
            card.finishNext()
            runtime.syncProgress(at: MonotonicInstant(milliseconds: t))
        }
    }

    /// `start` and the countdown, with every sync completed: a running ride, nothing waiting.
    func running() {
        _ = control("start")
        while runtime.state != .running, t < 10_000 {
            t += 100
            runtime.tick(at: MonotonicInstant(milliseconds: t))
        }
        cardCatchesUp()
        for (_, a) in sent { _ = a } // replies from the start, if any, are not what is tested
        sent.removeAll()
    }
}

struct DurableControlReplyTests {
    @Test func aStateChangeIsAnsweredOnlyOnceDurable() throws {
        let h = DurableReplyHarness()
        h.running()
        #expect(h.runtime.state == .running)
        h.t += 2_000
        let a = h.control("pause")
        #expect(h.runtime.state == .paused, "the pause takes effect at once")
        let id = try #require(a.awaitingDurability, "the pause's record is not durable yet: no reply now (\(a.line))")
        #expect(h.sent.isEmpty)
        #expect(h.card.inFlight > 0, "the pause's sync is in flight")
        // Other input meanwhile (a tick, a sample) sends nothing: the card has not confirmed.
        h.t += 200
        h.runtime.tick(at: MonotonicInstant(milliseconds: h.t))
        #expect(h.sent.isEmpty, "a reply went out before the pause was durable: \(h.sent)")
        h.cardCatchesUp()
        #expect(h.sent.count == 1)
        #expect(h.sent.first?.0 == id)
        let line = try #require(h.sent.first?.1.line)
        #expect(line.hasPrefix("ok paused"), "\(line)")
        #expect(ControlProtocol.notDurableReason(line) == nil, "\(line)")
        #expect(h.runtime.controlRepliesWaiting == 0)
    }

    @Test func queriesAndRefusalsDoNotWait() throws {
        let h = DurableReplyHarness()
        h.running()
        h.t += 500
        _ = h.control("pause")
        // A refusal, a status and a page change answer at once even while the pause is synced.
        let refusal = h.control("start")
        #expect(refusal.isError && refusal.awaitingDurability == nil, "\(refusal)")
        #expect(h.control("status").awaitingDurability == nil)
        #expect(h.control("page").awaitingDurability == nil)
    }

    @Test func aFailingCardAnswersAtOnceSayingSo() throws {
        let h = DurableReplyHarness()
        h.running()
        h.t += 1_000
        let a = h.control("lap")
        _ = try #require(a.awaitingDurability, "\(a.line)")
        h.card.finishNext(error: StorageError(.io, "fsync: Input/output error"))
        h.runtime.syncProgress(at: MonotonicInstant(milliseconds: h.t))
        #expect(h.sent.count == 1)
        let line = try #require(h.sent.first?.1.line)
        #expect(line.hasPrefix("ok "), "the lap was taken: \(line)")
        let why = try #require(ControlProtocol.notDurableReason(line), "the reply must say it is not durable: \(line)")
        #expect(why.contains("STORAGE ERROR"), "\(why)")
        // With the card still failing, the next change is answered at once, saying so.
        h.t += 1_000
        let b = h.control("pause")
        #expect(b.awaitingDurability == nil)
        #expect(ControlProtocol.notDurableReason(b.line)?.contains("STORAGE ERROR") == true, "\(b.line)")
    }

    @Test func aCardThatNeverConfirmsIsAnsweredWithinTheBound() throws {
        let h = DurableReplyHarness()
        h.running()
        h.t += 1_000
        _ = try #require(h.control("pause").awaitingDurability)
        h.t += DeviceRuntime.controlReplyWaitMsMax - 100
        h.runtime.tick(at: MonotonicInstant(milliseconds: h.t))
        #expect(h.sent.isEmpty)
        h.t += 100
        h.runtime.tick(at: MonotonicInstant(milliseconds: h.t))
        #expect(h.sent.count == 1)
        let line = try #require(h.sent.first?.1.line)
        #expect(ControlProtocol.notDurableReason(line)?.contains("not confirmed") == true, "\(line)")
    }

    @Test func withoutASinkTheReplySaysItIsNotDurable() throws {
        let h = DurableReplyHarness(sink: false)
        h.running()
        h.t += 1_000
        let a = h.control("pause")
        #expect(a.awaitingDurability == nil)
        #expect(ControlProtocol.notDurableReason(a.line) != nil, "\(a.line)")
    }

    @Test func aDisabledJournalSaysSo() throws {
        let opened = FlashJournal.disabled(reason: "the data directory is read-only", randomSeed: 1, deviceNow: .zero)
        let d = DeviceRuntime.boot((opened.journal, opened.core, opened.report), archive: NoArchive(), log: MemoryLog(), wall: nil, at: .zero)
        var sent: [ControlAnswer] = []
        d.durableReplySink = { sent.append($1) }
        _ = d.control("start", at: .zero) { "{}" }
        var t: Int64 = 0
        while d.state != .running, t < 10_000 { t += 100; d.tick(at: MonotonicInstant(milliseconds: t)) }
        let a = d.control("pause", at: MonotonicInstant(milliseconds: t + 500)) { "{}" }
        #expect(a.awaitingDurability == nil)
        #expect(ControlProtocol.notDurableReason(a.line)?.contains("journal disabled") == true, "\(a.line)")
        #expect(sent.isEmpty)
    }

    /// On the socket: no reply line until the card confirms, and the client's next line waits
    /// for it (replies stay in order).
    @Test func theSocketHoldsTheReplyAndTheNextLine() throws {
        let h = DurableReplyHarness()
        h.running()
        let dir = TestPaths.tempDir("durable-reply")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let loop = try EpollEventLoop()
        let server = try ControlSocketServer(path: dir + "/control.sock", loop: loop) { line in
            h.t = loop.nowMs
            let a = h.control(line)
            if let id = a.awaitingDurability { return .later(id) }
            return .init(a.line, isError: a.isError)
        }
        defer { server.close() }
        h.runtime.durableReplySink = { id, a in server.complete(id, .init(a.line, isError: a.isError)) }
        let c = try RawClient(path: dir + "/control.sock")
        c.send("pause\nstatus\n")
        for _ in 0..<20 { try loop.runOnce(maxWaitMs: 5); c.receive() }
        #expect(h.runtime.state == .paused)
        #expect(c.lines.isEmpty, "replied before the pause was durable: \(c.lines)")
        h.cardCatchesUp()
        let lines = try c.waitForLines(2, loop: loop)
        #expect(lines.count == 2, "\(lines)")
        #expect(lines.first?.hasPrefix("ok paused") == true, "\(lines)")
        #expect(lines.dropFirst().first == "ok {}", "the status follows the pause's reply: \(lines)")
        #expect(server.counters.repliesCompleted == 1)
    }

    /// A client that half-closes after its command (`socat`, `nc -N`) still gets the reply.
    @Test func aHalfClosedClientStillGetsTheReply() throws {
        let h = DurableReplyHarness()
        h.running()
        let dir = TestPaths.tempDir("durable-reply-shut")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let loop = try EpollEventLoop()
        let server = try ControlSocketServer(path: dir + "/control.sock", loop: loop) { line in
            let a = h.control(line)
            if let id = a.awaitingDurability { return .later(id) }
            return .init(a.line, isError: a.isError)
        }
        defer { server.close() }
        h.runtime.durableReplySink = { id, a in server.complete(id, .init(a.line, isError: a.isError)) }
        let c = try RawClient(path: dir + "/control.sock")
        c.send("pause\n")
        shutdown(c.fd, Int32(SHUT_WR))
        for _ in 0..<20 { try loop.runOnce(maxWaitMs: 5); c.receive() }
        #expect(c.lines.isEmpty)
        h.cardCatchesUp()
        let lines = try c.waitForLines(1, loop: loop)
        #expect(lines.first?.hasPrefix("ok paused") == true, "\(lines)")
        #expect(server.clientCount == 0 || { try? loop.runOnce(maxWaitMs: 5); return server.clientCount == 0 }(), "closed once sent")
    }
}
