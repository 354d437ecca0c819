import AppCore
import Device
import Journal
import RideModel
import Testing

/// LittleFS-style linear power-cut sweep: the scripted ride runs through the app core and the
/// flash journal on simulated flash; power is cut at write 1, 2, 3, ... (dropping, tearing, or
/// losing everything unsynced); then the device "boots", recovers and finishes the ride. One
/// test per way of cutting, so the four sweeps run side by side (the sweep was swift test's
/// longest test by far: one thread for the whole run while the other core waited).
struct PowerCutSweepTests {
    static let segmentBytes = 8 * 1024
    static let script = Script.inputs(seconds: 200)

    /// What one sweep exercised (the paths its cuts went through).
    struct Tally {
        var checkedRebuilds = 0
        var cutsRepaired = 0
        var segmentsSetAside = 0
    }

    /// The ways power is cut at write n: the write dropped, torn after some bytes, everything
    /// not yet synced lost, or that and the write torn.
    enum Sweep: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case drop, tear, loseUnsynced, loseUnsyncedAndTear

        func mode(_ n: Int) -> SimulatedFlash.CutMode {
            switch self {
            case .drop: .dropWrite
            case .tear: .tearWrite(keepBytes: 1 + (n * 37) % 60)
            case .loseUnsynced: .loseUnsynced
            case .loseUnsyncedAndTear: .loseUnsyncedAndTear(keepBytes: 1 + (n * 13) % 40)
            }
        }

        var tears: Bool { self == .tear || self == .loseUnsyncedAndTear }
        var testDescription: String { rawValue }
    }

    struct Outcome {
        var writes = 0
        var lossWindowMs: Int64 = 0
    }

    /// Runs the script until the power goes (or to the end). Returns the rig and the instant of
    /// the input during which power was lost.
    static func runUntilCut(_ flash: SimulatedFlash) -> (Rig, MonotonicInstant?) {
        let rig = Rig(flash: flash)
        for input in script {
            rig.feed(input)
            if flash.powerIsOff { return (rig, input.instant) }
        }
        return (rig, nil)
    }

    /// Checks one cut; returns the loss window (ms of 1 Hz samples lost) or records an issue.
    static func check(cutAt n: Int, mode: SimulatedFlash.CutMode, tally: inout Tally) -> Int64 {
        let id = "cut at write \(n), \(mode)"
        let flash = SimulatedFlash(segmentBytes: segmentBytes)
        flash.cutAtWrite = n
        flash.cutMode = mode
        let (rig, cutInstant) = runUntilCut(flash)
        guard let cutAt = cutInstant else { return 0 }
        let synced = Int(rig.journal.counters.recordsDurable)
        let appended = rig.appended
        flash.powerCycle()

        // What a reader finds on the card before recovery touches it.
        let rides = JournalScan.scan(flash, repair: false).rides().rides
        let recovered = rides.first?.records ?? []
        let original = recovered.count
        let prefix = recovered
        // Boot: the device clock restarts.
        let boot = Rig(flash: flash, seed: 43, deviceNow: ms(500))
        if boot.report.repairs.contains(where: { $0.contains("cut at byte") }) { tally.cutsRepaired += 1 }
        tally.segmentsSetAside += boot.report.segmentsSetAside.count
        // Everything synced is back, in order, and nothing was invented.
        #expect(isPrefix(prefix, of: appended), "\(id): recovered records are not a prefix of the appended ones")
        #expect(prefix.count >= synced, "\(id): \(synced) records were synced, only \(prefix.count) recovered")
        if !isPrefix(prefix, of: appended) || prefix.count < synced { return .max }
        // Loss window: the span of 1 Hz samples appended but not recovered. Samples older than
        // one second before the cut are never lost.
        var loss: Int64 = 0
        var lostInstants: [Int64] = []
        for r in appended[prefix.count...] { if case .sample(let s) = r { lostInstants.append(s.instant.milliseconds) } }
        if let first = lostInstants.min(), let last = lostInstants.max() {
            loss = last - first + 1000
            if first < cutAt.milliseconds - 1000 {
                Issue.record("\(id): sample at \(first) ms lost though the cut was at \(cutAt.milliseconds) ms")
            }
        }
        // Nothing lost: the rebuilt builder has the live one's events, laps, totals and extremes.
        if prefix.count == rig.durableCount, let durable = rig.durableCore, let live = durable.builder,
           let back = boot.core.builder, boot.core.state != .ended {
            tally.checkedRebuilds += 1
            let events = back.events.filter { $0.kind != .gap }
            #expect(events == live.events, "\(id): events differ")
            #expect(back.laps.count == live.laps.count, "\(id): laps differ")
            #expect(back.ride.totals == live.ride.totals, "\(id): totals differ")
            for q in Quantity.allCases {
                #expect(back.ride[q].count == live.ride[q].count && back.ride[q].max == live.ride[q].max
                        && back.ride[q].min == live.ride[q].min, "\(id): \(q) statistics differ")
            }
            #expect(boot.core.header == durable.header, "\(id): header differs")
            // Timer time, time-weighted averages and zone times of the rebuilt ride. The rebuilt
            // ride ends its running stretch at the last durable instant (the gap), where a held
            // value counts up to the edge (docs/statistics.md); the live one is brought to that
            // instant too, but may have been advanced beyond it already (to the input that made
            // it durable): the two may differ by that much, or by the part of the hold limit
            // beyond the sample period that an edge counts, and no more.
            if let gap = back.events.last(where: { $0.kind == .gap }) {
                let last = gap.instant
                var l = live
                l.advance(to: last)
                let aheadMs = max(0, rig.durableNow.milliseconds(since: last))
                let edgeMs = l.settings.sampleHoldLimitMs - min(l.settings.samplePeriodMs, l.settings.sampleHoldLimitMs)
                let slackMs = max(aheadMs, edgeMs)
                #expect(back.timerTimeMs(at: last) == l.timerTimeMs(at: last), "\(id): timer time at the gap differs")
                for q in [Quantity.heartRate, .power, .cadence, .speed] {
                    let lq = l.ride[q], r = back.ride[q]
                    let extra = lq.weightMs - r.weightMs
                    #expect(abs(extra) <= slackMs, "\(id): \(q) weighed \(r.weightMs) ms rebuilt vs \(lq.weightMs) ms live (slack \(slackMs) ms)")
                    #expect(abs(lq.weightedSum - r.weightedSum) <= (lq.max ?? 0) * Double(abs(extra)) + 1e-6,
                            "\(id): \(q) time-weighted sums differ beyond the \(extra) ms weighed differently")
                    if r.weightMs > 60_000, let la = lq.average, let ra = r.average {
                        #expect(abs(la - ra) <= 2 * (lq.max ?? 0) * Double(abs(extra)) / Double(r.weightMs) + 1e-9,
                                "\(id): \(q) average \(ra) rebuilt vs \(la) live")
                    }
                }
                for (lz, rz) in [(l.heartRateZoneTimes, back.heartRateZoneTimes), (l.powerZoneTimes, back.powerZoneTimes)] {
                    var diff: Int64 = 0
                    for z in 0..<lz.zoneCount { diff += abs(lz[z] - rz[z]) }
                    #expect(diff <= slackMs, "\(id): zone times differ by \(diff) ms")
                }
                #expect(back.ride.distanceM == l.ride.distanceM, "\(id): distance differs")
            } else {
                Issue.record("\(id): the recovered ride has no gap event")
            }
            // Same wall time for every ride instant (the anchor may be stored at another instant).
            for t: Int64 in [3_000, 90_000] {
                #expect(boot.core.wallAnchorForRide?.wallTime(at: ms(t)) == durable.wallAnchorForRide?.wallTime(at: ms(t)),
                        "\(id): wall clock differs")
            }
        }
        // The recovered session.
        let started = prefix.contains { if case .event(let e) = $0 { e.kind == .start } else { false } }
        let finished = prefix.contains { if case .finished = $0 { true } else { false } }
        if started && !finished {
            #expect(boot.report.recoveredRide != nil, "\(id): ride not recovered")
            #expect(boot.core.recovered, "\(id)")
            let lastEvent = prefix.last { if case .event = $0 { true } else { false } }
            if case .event(let e) = lastEvent {
                let expected: SessionState = switch e.kind {
                case .pause: .paused
                case .stop: .ended // a stopped ride is saved on recovery
                default: .running
                }
                #expect(boot.core.state == expected, "\(id): resumed \(boot.core.state), last durable event \(e.kind)")
            }
            // The gap is journaled and durable (syncJournal was applied).
            #expect(boot.journal.counters.recordsDurable >= 1, "\(id): gap not made durable")
            // Ride on for 5 s after recovery, then end it: one ride, the old records first.
            var t: Int64 = 1_000
            if boot.core.state == .paused { boot.feed(.command(.resume, at: ms(t))) }
            while t < 6_000 {
                boot.feed(.sample(Sample(.power, 200, at: ms(t))))
                boot.feed(.sample(Sample(.heartRate, 120, at: ms(t))))
                boot.feed(.tick(ms(t)))
                t += 250
            }
            boot.feed(.command(.end, at: ms(t)))
            let after = JournalScan.scan(flash, repair: false).rides().rides
            #expect(after.count == 1, "\(id): \(after.count) rides after recovery")
            if let r = after.first {
                #expect(isPrefix(Array(r.records.prefix(original)), of: recovered), "\(id)")
                #expect(r.finished == true, "\(id)")
                // Instants never go backwards across the gap.
                var newest = Int64.min
                var backwards = false
                for rec in r.records {
                    if case .event(let e) = rec { if e.instant.milliseconds < newest { backwards = true }; newest = max(newest, e.instant.milliseconds) }
                }
                #expect(!backwards, "\(id): event instants go backwards after recovery")
            }
        } else if finished {
            #expect(boot.report.recoveredRide == nil, "\(id)")
            #expect(boot.report.finishedRidesAwaitingFile == rides.map(\.rideID), "\(id)")
        } else {
            #expect(boot.core.state == .idle, "\(id): \(boot.core.state) from a ride that never started")
        }
        return loss
    }

    @Test(arguments: Sweep.allCases) func linearSweepOverEveryWrite(_ sweep: Sweep) {
        let full = SimulatedFlash(segmentBytes: Self.segmentBytes)
        let (rig, cut) = Self.runUntilCut(full)
        #expect(cut == nil)
        #expect(rig.core.state == .ended)
        let writes = full.writeCount
        #expect(writes > 100, "the script should make many writes, made \(writes)")
        #expect(rig.journal.writer.counters.segmentsCreated >= 2, "the script should rotate segments")
        var worstLoss: Int64 = 0
        var tally = Tally()
        for n in 1...(writes + 1) {
            worstLoss = max(worstLoss, Self.check(cutAt: n, mode: sweep.mode(n), tally: &tally))
        }
        #expect(worstLoss <= 1000, "worst loss window \(worstLoss) ms")
        // Most cuts lose nothing durable: the rebuilt ride is compared with the live core's.
        // (Measured: 205-210 of 217 cuts, each way.)
        #expect(tally.checkedRebuilds > writes * 3 / 4, "\(sweep): rebuilds compared with the live core: \(tally.checkedRebuilds)")
        if sweep.tears {
            // Torn writes were cut off, and torn segment headers set aside (the paths were exercised:
            // 213 torn tails and 2 headers of 217 cuts, each tearing way).
            #expect(tally.cutsRepaired > writes / 2, "\(sweep): \(tally.cutsRepaired) torn tails cut")
            #expect(tally.segmentsSetAside > 0, "\(sweep): no torn segment header set aside")
        }
        print("power-cut sweep (\(sweep)): \(writes) writes, worst loss window \(worstLoss) ms of 1 Hz samples, \(tally.checkedRebuilds) rebuilds compared, \(tally.cutsRepaired) torn tails cut, \(tally.segmentsSetAside) torn segment headers set aside")
    }

    /// Cuts power twice in one ride: during the ride and again soon after recovery.
    @Test func cutAgainAfterRecovery() {
        for n in stride(from: 20, through: 200, by: 45) {
            let flash = SimulatedFlash(segmentBytes: Self.segmentBytes)
            flash.cutAtWrite = n
            flash.cutMode = .loseUnsynced
            let (first, _) = Self.runUntilCut(flash)
            let firstSynced = Array(first.appended.prefix(Int(first.journal.counters.recordsDurable)))
            flash.powerCycle()
            let second = Rig(flash: flash, seed: 2, deviceNow: ms(100))
            guard second.report.recoveredRide != nil else { continue }
            flash.cutAtWrite = flash.writeCount + 7
            var t: Int64 = 200
            while !flash.powerIsOff && t < 20_000 {
                second.feed(.sample(Sample(.power, 210, at: ms(t))))
                second.feed(.tick(ms(t)))
                t += 250
            }
            flash.powerCycle()
            let third = Rig(flash: flash, seed: 3, deviceNow: ms(50))
            let rides = JournalScan.scan(flash, repair: false).rides().rides
            #expect(rides.count == 1, "cut \(n)")
            #expect(isPrefix(firstSynced, of: rides.first?.records ?? []), "cut \(n): first life's synced records lost")
            #expect(third.report.recoveredRide == second.report.recoveredRide, "cut \(n)")
            let gaps = rides.first?.records.filter { if case .event(let e) = $0 { e.kind == .gap } else { false } }.count ?? 0
            #expect(gaps == 2, "cut \(n): \(gaps) gap events")
        }
    }
}
