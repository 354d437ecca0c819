import TestSupport
import AppCore
import Device
import Journal
import RideModel
import Testing

struct RecoveryTests {
    /// A journal of the scripted ride stopped half-way (no cut), on 8 KiB segments.
    static func halfRide() -> (SimulatedFlash, [RideRecord]) {
        let flash = SimulatedFlash(segmentBytes: 8 * 1024)
        let rig = Rig(flash: flash)
        let inputs = Script.inputs(seconds: 300)
        for input in inputs.prefix(inputs.count * 2 / 3) { rig.feed(input) }
        return (flash, rig.appended)
    }

    /// Random bit flips, zeroed ranges, garbage and truncation: recovery never crashes, never
    /// accepts a damaged record, and keeps every damaged segment aside instead of deleting it.
    @Test func randomCorruptionNeverYieldsABadRecord() {
        let (pristine, appended) = Self.halfRide()
        let segments = try! pristine.list()
        #expect(segments.count >= 2)
        var repaired = 0
        for seed: UInt64 in 1...300 {
            var rng = SeededRandom(seed: seed)
            let flash = pristine.snapshot()
            let victim = segments[Int(rng.next() % UInt64(segments.count))]
            var bytes = flash.contents(victim)!
            let used = max(64, bytes.lastIndex(where: { $0 != 0 }) ?? 64)
            switch rng.next() % 5 {
            case 0: // flip a few bits
                for _ in 0..<(1 + rng.next() % 4) { bytes[Int(rng.next() % UInt64(used))] ^= UInt8(1 << (rng.next() % 8)) }
            case 1: // zero a range (lost sector)
                let a = Int(rng.next() % UInt64(used)); let n = Int(rng.next() % 600)
                for i in a..<min(bytes.count, a + n) { bytes[i] = 0 }
            case 2: // garbage
                let a = Int(rng.next() % UInt64(used)); let n = 1 + Int(rng.next() % 300)
                for i in a..<min(bytes.count, a + n) { bytes[i] = UInt8(truncatingIfNeeded: rng.next()) }
            case 3: // truncated file content (the rest reads as zeros)
                let a = Int(rng.next() % UInt64(used))
                for i in a..<bytes.count { bytes[i] = 0 }
            default: // a record copied over another (stale data)
                let a = 32 + Int(rng.next() % UInt64(used / 2)); let b = 32 + Int(rng.next() % UInt64(used / 2)); let n = 40
                if a + n < bytes.count && b + n < bytes.count { for i in 0..<n { bytes[b + i] = bytes[a + i] } }
            }
            flash.overwrite(victim, with: bytes)
            let wipedOut = bytes.allSatisfy { $0 == 0 }
            let asideBefore = flash.asideFiles.count
            let rig = Rig(flash: flash, seed: seed, deviceNow: ms(10))
            let rides = JournalScan.scan(flash, repair: false).rides().rides
            let records = rides.first?.records ?? []
            let original = Array(records.prefix { if case .event(let e) = $0 { e.kind != .gap } else { true } })
            #expect(isPrefix(original, of: appended), "seed \(seed): recovery accepted a record that was never written")
            #expect(rides.count <= 1, "seed \(seed)")
            // Whatever could not be used is kept aside, not deleted.
            let inJournal = (try? flash.list()) ?? []
            for id in segments where !inJournal.contains(id) && !(id == victim && wipedOut) {
                #expect(flash.asideFiles.keys.contains { $0.hasPrefix(SegmentName.name(id)) }, "seed \(seed): \(SegmentName.name(id)) vanished")
            }
            _ = asideBefore
            if !rig.report.repairs.isEmpty { repaired += 1 }
            // The journal is usable afterwards: the recovered core can go on and end the ride.
            rig.feed(.tick(ms(2_000)))
            rig.feed(.command(.end, at: ms(3_000)))
            let after = JournalScan.scan(flash, repair: false)
            #expect(after.truncation == nil, "seed \(seed): the repaired journal still has a bad record")
        }
        #expect(repaired > 200, "only \(repaired) of 300 corruptions were noticed")
    }

    @Test func aJournalFromANewerAppIsKeptAsideAndReported() throws {
        let flash = SimulatedFlash(segmentBytes: 8 * 1024)
        try flash.create(1)
        var h = SegmentHeader(segmentID: 1, firstSequence: 1, segmentBytes: 8192)
        h.version = JournalFormat.version + 1
        try h.encoded().withUnsafeBytes { try flash.write(1, at: 0, $0) }
        let rig = Rig(flash: flash)
        #expect(rig.report.segmentsSetAside == ["seg-00000001.jnl.aside"])
        #expect(rig.report.lines.contains { $0.contains("newer app") })
        #expect(flash.asideFiles["seg-00000001.jnl.aside"]?.count == 8192)
        #expect(rig.core.state == .idle)
        // A new ride still journals.
        for input in Script.inputs(seconds: 10) { rig.feed(input) }
        #expect(JournalScan.scan(flash, repair: false).rides().rides.count == 1)
    }

    @Test func recoveryTakesTheGapFromATrustedWallClock() {
        let flash = SimulatedFlash(segmentBytes: 8 * 1024)
        let rig = Rig(flash: flash)
        let inputs = Script.inputs()
        // Past the NTP jump (trusted from ~83 s on), still riding.
        for input in inputs where input.instant.milliseconds < 110_000 { rig.feed(input) }
        #expect(rig.core.state == .running)
        let anchor = rig.core.wallAnchorForRide!
        #expect(anchor.wall.trusted)
        let lastInstant = rig.core.lastReplayedInstant!
        // Down for 42 s; the board's clock is set again (NTP) when it boots.
        let wallNow = WallClockTime(unixMs: anchor.wallTime(at: lastInstant).unixMs + 42_000, trusted: true)
        let boot = Rig(flash: flash, seed: 9, deviceNow: ms(700), wallNow: wallNow)
        #expect(boot.report.gapMs == 42_000)
        #expect(boot.core.gapsMs == 42_000)
        #expect(boot.core.state == .running)
        // Ride time continues after the gap: device 700 ms ↔ ride last + 42 s.
        #expect(boot.core.instantOffsetMs == lastInstant.milliseconds + 42_000 - 700)
        // Wall times are continuous: the same anchor, not duplicated or reversed.
        #expect(boot.core.wallAnchorForRide?.wallTime(at: ms(100_000)) == anchor.wallTime(at: ms(100_000)))
        // Untrusted wall clock at boot: gap unknown, 0.
        flash.cutAtWrite = flash.writeCount + 1
        boot.feed(.tick(ms(1_700)))
        flash.powerCycle()
        let again = Rig(flash: flash, seed: 10, deviceNow: ms(5), wallNow: WallClockTime(unixMs: 5, trusted: false))
        #expect(again.report.gapMs == 0)
        #expect(again.core.state == .running)
    }

    /// An app restarted in the same boot (a crash, a kill, an upgrade) knows how long it was
    /// down from the monotonic clock, with no wall clock at all: the ride's timeline in this
    /// boot is journaled after the header and after each recovery. After a power cut (another
    /// boot) the gap is not known without a trusted clock (0); a restart in that boot is exact
    /// again. Stop 42's BLE guest: without it the app's instants after a 6 s restart ran 5.2 s
    /// behind the device's, and every value after it was dated that much early.
    @Test func recoveryInTheSameBootTakesTheGapFromTheMonotonicClock() {
        let flash = SimulatedFlash(segmentBytes: 8 * 1024)
        let bootA = BootIdentity(high: 0xA0, low: 1), bootB = BootIdentity(high: 0xB0, low: 2)
        let rig = Rig(flash: flash, boot: bootA)
        // Before the script's NTP jump: no trusted wall clock anywhere below.
        for input in Script.inputs() where input.instant.milliseconds < 45_000 { rig.feed(input) }
        #expect(rig.core.state == .running)
        #expect(rig.appended.contains(.timeline(RideTimeline(boot: bootA, offsetMs: 0))), "journaled with the header")
        let last = rig.core.lastReplayedInstant!
        // Killed and started again 7.5 s later in the same boot.
        let downAt = rig.now
        let back = Rig(flash: flash, seed: 9, deviceNow: downAt.advanced(byMs: 7_500), boot: bootA)
        #expect(back.report.gapSource == .monotonicClock)
        #expect(back.report.gapMs == downAt.milliseconds + 7_500 - last.milliseconds)
        #expect(back.core.gapsMs == back.report.gapMs)
        #expect(back.core.instantOffsetMs == 0, "ride time is device time again: \(back.core.instantOffsetMs)")
        #expect(back.appended.contains(.timeline(RideTimeline(boot: bootA, offsetMs: 0))), "journaled after the recovery")
        #expect(back.core.state == .running)
        var t = downAt.milliseconds + 8_000
        for _ in 0..<10 {
            back.feed(.tick(ms(t)))
            t += 1_000
        }
        // A power cut: another boot, its clock from zero, no trusted wall clock: not known.
        flash.powerCycle()
        let cut = Rig(flash: flash, seed: 10, deviceNow: ms(700), wallNow: WallClockTime(unixMs: 5, trusted: false), boot: bootB)
        #expect(cut.report.gapSource == .unknown && cut.report.gapMs == 0)
        #expect(cut.core.state == .running)
        let offset = cut.core.instantOffsetMs
        #expect(offset > 0)
        #expect(cut.appended.contains(.timeline(RideTimeline(boot: bootB, offsetMs: offset))))
        for k in 1...5 { cut.feed(.tick(ms(700 + Int64(k) * 1_000))) }
        // Killed in that boot: exact again, from the offset journaled after the power cut.
        let last2 = cut.core.lastReplayedInstant!
        let again = Rig(flash: flash, seed: 11, deviceNow: ms(5_700 + 3_000), boot: bootB)
        #expect(again.report.gapSource == .monotonicClock)
        #expect(again.report.gapMs == 5_700 + 3_000 + offset - last2.milliseconds)
        #expect(again.core.instantOffsetMs == offset)
        #expect(again.core.gapsMs == cut.core.gapsMs + again.report.gapMs)
        // Another boot's timeline is not this one's: an unknown boot falls back to the old rule.
        let other = Rig(flash: flash, seed: 12, deviceNow: ms(9_000), boot: BootIdentity(high: 0xC0, low: 3))
        #expect(other.report.gapSource == .unknown && other.report.gapMs == 0)
    }

    @Test func finishedRideIsCompactedAwayOnceItsFileIsDurable() {
        let flash = SimulatedFlash(segmentBytes: 8 * 1024)
        let rig = Rig(flash: flash)
        // Long enough to span several 8 KiB segments.
        for input in Script.inputs(seconds: 400) { rig.feed(input) }
        #expect(rig.core.state == .ended)
        let id = rig.core.header!.rideID
        let records = rig.journal.records(of: id)
        #expect(records == rig.appended)
        #expect(try! flash.list().count >= 2)
        // Crash before the file is written: the next boot asks for it again.
        let boot = Rig(flash: flash, seed: 5)
        #expect(boot.report.finishedRidesAwaitingFile == [id])
        #expect(boot.report.recoveredRide == nil)
        boot.journal.rideFileIsDurable(id)
        #expect(try! flash.list().isEmpty, "segments left: \(try! flash.list())")
        #expect(boot.journal.records(of: id).isEmpty)
        // The next ride starts a fresh segment; its sequence numbers continue.
        for input in Script.inputs(seconds: 40, seed: 3) { boot.feed(.init(shifted: input, byMs: 1_000_000)) }
        let scan = JournalScan.scan(flash, repair: false)
        #expect(scan.rides().rides.count == 1)
        #expect(scan.truncation == nil)
        let reboot = Rig(flash: flash, seed: 6)
        #expect(reboot.report.finishedRidesAwaitingFile.count == 1)
    }

    @Test func rideInProgressIsNotCompactedWhenAnOlderOneIsDurable() {
        let flash = SimulatedFlash(segmentBytes: 8 * 1024)
        let rig = Rig(flash: flash)
        for input in Script.inputs(seconds: 30) { rig.feed(input) }
        let first = rig.core.header!.rideID
        rig.feed(.command(.dismiss, at: ms(40_000)))
        for input in Script.inputs(seconds: 60, seed: 4) { rig.feed(.init(shifted: input, byMs: 50_000)); if rig.core.state == .paused { break } }
        let second = rig.core.header!.rideID
        #expect(first != second)
        rig.journal.rideFileIsDurable(first)
        let rides = JournalScan.scan(flash, repair: false).rides().rides
        #expect(rides.contains { $0.rideID == second })
        let boot = Rig(flash: flash, seed: 8)
        #expect(boot.report.recoveredRide == second)
    }
}

extension AppInput {
    /// The same input `ms` later.
    init(shifted input: AppInput, byMs ms: Int64) {
        switch input {
        case .button(var b): b.instant = b.instant.advanced(byMs: ms); self = .button(b)
        case .sensor(.sample(var s)): s.instant = s.instant.advanced(byMs: ms); self = .sample(s)
        case .sensor(.status(let s, let t)): self = .sensor(s, at: t.advanced(byMs: ms))
        case .sensor(.gps(let g, let t)): self = .sensor(.gps(g, at: t.advanced(byMs: ms)))
        case .sensor(.clock(let w, let t)): self = .sensor(.clock(w, at: t.advanced(byMs: ms)))
        case .tick(let t): self = .tick(t.advanced(byMs: ms))
        case .command(let c, let t): self = .command(c, at: t.advanced(byMs: ms))
        case .wallClock(let w, let t): self = .wallClock(w, at: t.advanced(byMs: ms))
        case .storage(let c, let t): self = .storage(c, at: t.advanced(byMs: ms))
        case .rideFile(let id, let durable, let t): self = .rideFile(id, durable: durable, at: t.advanced(byMs: ms))
        case .sensor(.found(let f, let t)): self = .sensor(.found(f, at: t.advanced(byMs: ms)))
        case .sensor(.search(let r, let n, let t)): self = .sensor(.search(running: r, found: n, at: t.advanced(byMs: ms)))
        case .sensor(.radar(let p, let t)): self = .sensor(.radar(p, at: t.advanced(byMs: ms)))
        case .sensor(.bridgeConfig(let r, let l, let t)): self = .sensor(.bridgeConfig(readable: r, line: l, at: t.advanced(byMs: ms)))
        case .sensors(let u, let t): self = .sensors(u, at: t.advanced(byMs: ms))
        case .courses(let u, let t): self = .courses(u, at: t.advanced(byMs: ms))
        case .battery(let r, let t): self = .battery(r, at: t.advanced(byMs: ms))
        }
    }
}

struct HeaderOnlyRecoveryTests {
    /// A journal holding a ride's header and nothing after it (its start was never durable):
    /// nothing to recover, the device is idle. Before the fix the core stayed in a countdown with
    /// no start instant — the screen showed "3" for ever and no ride could start by its timer.
    @Test func aHeaderWithoutItsStartLeavesTheDeviceIdle() {
        let flash = SimulatedFlash(segmentBytes: 8 * 1024)
        let first = FlashJournal.open(storage: flash, randomSeed: 1, deviceNow: .zero)
        let header = RideHeader(rideID: RideID(random: 1, 2),
                                anchor: WallClockAnchor(monotonic: .zero, wall: WallClockTime(unixMs: 1_790_000_000_000, trusted: true)),
                                settings: RideSettings())
        first.journal.append(.header(header), at: ms(3_000))
        first.journal.syncNow(at: ms(3_000))
        var core = FlashJournal.open(storage: flash, randomSeed: 2, deviceNow: ms(10)).core
        #expect(core.state == .idle)
        #expect(core.header == nil)
        core.handle(.tick(ms(1_000)))
        #expect(core.screen.mode == .idle, "not a countdown")
        core.handle(.button(ButtonEvent(.startPause, .down, at: ms(2_000))))
        core.handle(.tick(ms(5_000)))
        #expect(core.state == .running, "a new ride starts by its countdown")
    }
}
