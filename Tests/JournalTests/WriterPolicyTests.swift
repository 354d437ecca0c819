import AppCore
import Device
import Journal
import RideModel
import Testing

struct WriterPolicyTests {
    /// Steady riding: one sync per second (each 1 Hz record durable at its tick), plus one per
    /// state change; series values ride along, never synced on their own.
    @Test func oneGroupCommitPerSecondAndStateChangesAtOnce() {
        let flash = SimulatedFlash(segmentBytes: 64 * 1024)
        let rig = Rig(flash: flash)
        var syncsAtTick: [Int] = []
        for input in Script.inputs(seconds: 150) {
            let before = flash.syncCount
            rig.feed(input)
            switch input {
            case .tick: syncsAtTick.append(flash.syncCount - before)
            case .sensor(.sample(let s)) where s.quantity == .power || s.quantity == .rrInterval:
                #expect(flash.syncCount == before, "a series value forced a sync at \(s.instant)")
            case .button, .command:
                // A state change is durable before the input returns (before the screen shows it).
                if rig.journal.writer.pendingCount > 0 {
                    let hasEvent = rig.journal.counters.recordsDurable < rig.appended.count
                    #expect(!hasEvent || flash.syncCount > before, "state change left pending at \(input.instant)")
                }
            default: break
            }
            // No 1 Hz sample record ever waits for a later tick.
            if case .tick = input, let last = rig.appended.lastIndex(where: { if case .sample = $0 { true } else { false } }) {
                #expect(UInt64(last) < rig.journal.counters.recordsDurable, "a 1 Hz record still pending after the tick at \(input.instant)")
            }
            // Nothing waits more than a second.
            if let oldest = rig.journal.writer.oldestPendingInstant {
                #expect(input.instant.milliseconds(since: oldest) <= 1_000, "a record waited since \(oldest) at \(input.instant)")
            }
        }
        // Two syncs in one tick only when a segment starts or the long-press end fires.
        #expect(syncsAtTick.filter { $0 > 1 }.count <= 4, "\(syncsAtTick.filter { $0 > 1 }.count) ticks with several syncs")
        let rideSeconds = 150 + 2
        // ≤ one per ride second + header/start + pause/resume/lap/stop/marker/wall clock + segment headers.
        #expect(flash.syncCount <= rideSeconds + 12, "\(flash.syncCount) syncs")
        #expect(flash.syncCount >= rideSeconds - 20, "\(flash.syncCount) syncs: too few to keep the loss under 1 s")
    }

    /// The condition is asked after every input; free space is read at most once per
    /// `freeSpaceCheckIntervalMs` (and after a segment is created), yet a filling card is still
    /// reported within that interval.
    @Test func freeSpaceIsReadAtMostOncePerIntervalAndLowIsStillSeen() {
        let flash = SimulatedFlash(segmentBytes: 64 * 1024)
        flash.freeBytes = 1 << 30
        let rig = Rig(flash: flash)
        let inputs = Script.inputs(seconds: 120)
        let readsBefore = flash.freeSpaceReads
        var lowSeenAt: MonotonicInstant?
        var filledAt: MonotonicInstant?
        for input in inputs {
            rig.feed(input)
            _ = rig.journal.condition
            if filledAt == nil, input.instant.milliseconds >= 60_000 {
                flash.freeBytes = 1 << 20 // under the 16 MB low mark
                filledAt = input.instant
            }
            if lowSeenAt == nil, filledAt != nil, rig.journal.condition == .low { lowSeenAt = input.instant }
        }
        let reads = flash.freeSpaceReads - readsBefore
        let rideSeconds = Int(inputs.last!.instant.milliseconds / 1000)
        let interval = Int(CommitPolicy().freeSpaceCheckIntervalMs / 1000)
        #expect(inputs.count > 10 * rideSeconds, "the script has many inputs per second")
        #expect(reads <= rideSeconds / interval + 2 + Int(rig.journal.counters.segmentsCreated), "\(reads) reads in \(rideSeconds) s")
        #expect(reads >= rideSeconds / interval - 1, "\(reads) reads: free space is still watched")
        let filled = try! #require(filledAt), seen = try! #require(lowSeenAt)
        #expect(seen.milliseconds(since: filled) <= CommitPolicy().freeSpaceCheckIntervalMs + 1_000)
    }

    @Test func diskFullKeepsTheRideAndRetriesWithoutDroppingAnything() {
        let flash = SimulatedFlash(segmentBytes: 8 * 1024)
        flash.freeBytes = 8 * 1024 // room for one segment only
        let rig = Rig(flash: flash)
        var sawFull = false
        var changes: [StorageCondition] = []
        var inputs = Script.inputs(seconds: 200)[...]
        while let input = inputs.popFirst() {
            rig.feed(input)
            if let change = rig.journal.conditionChange() {
                #expect(rig.journal.conditionChange() == nil, "a change is reported once")
                changes.append(change)
                rig.core.handle(.storage(change, at: input.instant))
            }
            if changes.last == .full {
                sawFull = true
                #expect(rig.core.screen.overlay == .storageFull)
                #expect(rig.core.state == .running || rig.core.state == .paused, "the ride goes on")
                break
            }
        }
        #expect(sawFull)
        #expect(changes == [.low, .full], "\(changes)")
        // Keep riding for a while with the card full: nothing is dropped, it waits.
        for _ in 0..<200 { if let input = inputs.popFirst() { rig.feed(input) } }
        #expect(rig.journal.counters.recordsDropped == 0)
        #expect(rig.journal.writer.pendingCount > 0)
        #expect(rig.journal.counters.failedCommits > 0)
        // Space comes back (an old ride deleted): the retry writes everything, in order.
        flash.freeBytes = 64 << 20
        while let input = inputs.popFirst() { rig.feed(input) }
        rig.journal.syncNow(at: ms(1_000_000))
        #expect(rig.journal.condition == .ok)
        #expect(rig.journal.conditionChange() == .ok)
        let rides = JournalScan.scan(flash, repair: false).rides().rides
        #expect(rides.first?.records == rig.appended)
    }

    @Test func ioErrorsAreReportedAndRetried() {
        let flash = SimulatedFlash(segmentBytes: 8 * 1024)
        let rig = Rig(flash: flash)
        let inputs = Script.inputs(seconds: 60)
        for input in inputs.prefix(400) { rig.feed(input) }
        flash.injectedError = StorageError(.io, "EIO")
        flash.failWrites = 3
        var conditions: [StorageCondition] = []
        for input in inputs.dropFirst(400) {
            rig.feed(input)
            if conditions.last != rig.journal.condition { conditions.append(rig.journal.condition) }
        }
        rig.journal.syncNow(at: ms(999_000))
        #expect(conditions.contains(.failing))
        #expect(rig.journal.condition == .ok)
        #expect(JournalScan.scan(flash, repair: false).rides().rides.first?.records == rig.appended)
    }

    /// Checkpoints are written during long rides and agree with the records before them.
    @Test func checkpointsAgreeWithTheRecords() {
        let flash = SimulatedFlash(segmentBytes: 64 * 1024)
        let rig = Rig(flash: flash, policy: CommitPolicy(checkpointIntervalMs: 20_000))
        for input in Script.inputs(seconds: 150) { rig.feed(input) }
        let ride = JournalScan.scan(flash, repair: false).rides().rides.first!
        #expect(ride.checkpoints.count >= 5)
        #expect(ride.checkpointMismatches == 0)
        // A record removed from the middle is noticed by the next checkpoint.
        var scan = JournalScan.scan(flash, repair: false)
        if let i = scan.records.firstIndex(where: { $0.type == .event }) {
            scan.records.remove(at: i + 1 < scan.records.count && scan.records[i + 1].type == .group ? i + 1 : i)
        }
        #expect(scan.rides().rides.first!.checkpointMismatches > 0)
    }
}
