import AppCore
import Device
import Journal
import RideModel
import Testing

/// The commit policy over storage whose syncs finish later (the board's io_uring), on the
/// asynchronous flash fake: the card takes `latencyMs` of input time to finish each sync.
final class DeferredRig {
    var core: AppCore
    let flash: SimulatedFlash
    let card: DeferredSyncFlash
    let journal: FlashJournal
    let latencyMs: Int64
    var appended: [RideRecord] = []
    var appendedAt: [MonotonicInstant] = []
    var now = MonotonicInstant.zero
    var begunAt: MonotonicInstant?
    /// Syncs the card made while the journal was handling an input (must stay 0: nothing waits).
    var syncsInsideInputs = 0
    /// Writes made while a sync was in flight (must stay 0: a write into a page under writeback
    /// waits for the card on file systems with stable pages).
    var writesDuringSync = 0
    var inFlightMax = 0
    /// Longest a record waited to be durable (input time), and the state changes' waits.
    var recordWaitMaxMs: Int64 = 0
    var confirmationsSeen = 0

    init(flash: SimulatedFlash, latencyMs: Int64, policy: CommitPolicy = CommitPolicy(checkpointIntervalMs: 30_000)) {
        self.flash = flash
        self.latencyMs = latencyMs
        card = DeferredSyncFlash(flash)
        let opened = FlashJournal.open(storage: card, randomSeed: 42, deviceNow: .zero, policy: policy)
        core = opened.core
        journal = opened.journal
        drain()
    }

    func drain() {
        while let e = core.drainEffect() {
            if case .journal(let r) = e { appended.append(r); appendedAt.append(clock) }
            _ = journal.apply(e, at: now)
        }
    }

    /// The latest instant seen: the script delivers some series values late (RR intervals
    /// after a pause), and a record's wait counts from when it was appended.
    var clock = MonotonicInstant.zero

    /// One input as the runtime takes it, then whatever the card finished by then.
    func feed(_ input: AppInput) {
        cardProgress(until: input.instant)
        now = input.instant
        clock = max(clock, now)
        let syncs = flash.syncCount
        let writes = flash.writeCount
        let busy = card.inFlight > 0
        core.handle(input)
        drain()
        journal.tick(at: now)
        syncsInsideInputs += flash.syncCount - syncs
        if busy { writesDuringSync += flash.writeCount - writes }
        noteBegin()
    }

    func noteBegin() {
        inFlightMax = max(inFlightMax, card.inFlight)
        if card.inFlight > 0, begunAt == nil { begunAt = now }
    }

    /// The card finishes each operation `latencyMs` after it began; the loop takes the completion.
    func cardProgress(until t: MonotonicInstant) {
        while let b = begunAt, t.milliseconds >= b.milliseconds + latencyMs {
            let at = b.advanced(byMs: latencyMs)
            card.finishNext()
            begunAt = nil
            now = at
            journal.syncProgress(at: at)
            noteBegin()
            if begunAt == nil, card.inFlight > 0 { begunAt = at }
            let durable = Int(journal.counters.recordsDurable)
            for i in 0..<min(durable, appendedAt.count) where i >= lastDurable {
                let w = at.milliseconds(since: appendedAt[i])
                if case .sample = appended[i] { sampleWaitMaxMs = max(sampleWaitMaxMs, w) }
                if w > recordWaitMaxMs {
                    recordWaitMaxMs = w
                    slowest = "\(describe(appended[i])) appended at \(appendedAt[i]) durable at \(at)"
                }
            }
            lastDurable = max(lastDurable, durable)
        }
    }
    var lastDurable = 0
    var slowest = ""
    var sampleWaitMaxMs: Int64 = 0
}

struct DeferredSyncTests {
    /// Nothing waits for the card: no sync inside an input, at most one in flight, the durable
    /// prefix moves only on completions, and with a 200 ms card every record is durable within
    /// the 1 s loss bound.
    @Test func commitsNeverWaitAndDurableAdvancesOnlyOnCompletion() {
        let rig = DeferredRig(flash: SimulatedFlash(segmentBytes: 8 * 1024), latencyMs: 200)
        var durableBefore: UInt64 = 0
        for input in Script.inputs(seconds: 150) {
            durableBefore = rig.journal.counters.recordsDurable
            let completionsBefore = rig.card.begun - rig.card.inFlight
            rig.feed(input)
            let completed = rig.card.begun - rig.card.inFlight
            if completed == completionsBefore {
                #expect(rig.journal.counters.recordsDurable == durableBefore, "durable moved without a completion at \(input.instant)")
            }
        }
        #expect(rig.syncsInsideInputs == 0, "\(rig.syncsInsideInputs) syncs ran inside an input")
        #expect(rig.inFlightMax == 1)
        #expect(rig.journal.writer.defersSyncs)
        rig.cardProgress(until: rig.now.advanced(byMs: 10_000))
        rig.journal.tick(at: rig.now)
        rig.cardProgress(until: rig.now.advanced(byMs: 10_000))
        #expect(rig.journal.writer.pendingCount == 0)
        #expect(Int(rig.journal.counters.recordsDurable) == rig.appended.count)
        // The 1 Hz records (the ride) are durable within the 1 s loss bound; a series value waits
        // for the next commit (≤ commitIntervalMs) plus the syncs ahead of it: the one in flight
        // and its own, three at a segment change (creation, header, records).
        #expect(rig.sampleWaitMaxMs <= 1_000, "a 1 Hz record waited \(rig.sampleWaitMaxMs) ms to be durable")
        #expect(rig.recordWaitMaxMs <= CommitPolicy().commitIntervalMs + 3 * rig.latencyMs,
                "a record waited \(rig.recordWaitMaxMs) ms to be durable: \(rig.slowest)")
        #expect(rig.journal.counters.recordsQueuedDuringSync > 0, "records were appended while syncs were in flight")
        #expect(rig.writesDuringSync == 0, "\(rig.writesDuringSync) writes while a sync was in flight")
        #expect(rig.journal.counters.segmentsCreated >= 2, "segments rotated while syncing in the background")
        let rides = JournalScan.scan(rig.flash, repair: false).rides().rides
        #expect(rides.count == 1)
        #expect(rides.first?.records == rig.appended, "the journal holds every record, in order")
    }

    /// A state change is confirmed (awaitingDurable false) only once the card finished the sync
    /// that holds its record.
    @Test func confirmationsWaitForTheCompletion() throws {
        let rig = DeferredRig(flash: SimulatedFlash(segmentBytes: 16 * 1024), latencyMs: 300)
        var checked = 0
        for input in Script.inputs(seconds: 90) {
            let before = rig.appended.count
            rig.feed(input)
            // Pause, resume, lap, start: an event record appended by this input.
            guard let last = rig.appended.indices.last(where: { if case .event = rig.appended[$0] { true } else { false } }),
                  last >= before else { continue }
            if UInt64(last) >= rig.journal.counters.recordsDurable {
                #expect(rig.journal.awaitingDurable, "a state change not yet durable is confirmed at \(input.instant)")
                checked += 1
            } else {
                #expect(!rig.journal.awaitingDurable || rig.journal.writer.pendingCount > 0)
            }
        }
        #expect(checked >= 2, "state changes were seen waiting for their sync (\(checked))")
        rig.cardProgress(until: rig.now.advanced(byMs: 5_000))
        #expect(!rig.journal.awaitingDurable)
    }

    /// A power cut between the write and its completion loses only what was not confirmed:
    /// every record the journal called durable is recovered, nothing else is invented, and the
    /// records lost span at most a second.
    @Test(arguments: [3, 17, 40, 77, 120, 160, 230])
    func powerCutBeforeTheCompletionLosesAtMostASecond(cutAfterWrites: Int) {
        let flash = SimulatedFlash(segmentBytes: 16 * 1024)
        let rig = DeferredRig(flash: flash, latencyMs: 200)
        flash.cutMode = .loseUnsynced
        let base = flash.writeCount
        flash.cutAtWrite = base + cutAfterWrites
        var durableAtCut = 0
        var cutAt: MonotonicInstant?
        var appendedAtCut = 0
        for input in Script.inputs(seconds: 150) {
            rig.feed(input)
            if flash.powerIsOff {
                durableAtCut = Int(rig.journal.counters.recordsDurable)
                appendedAtCut = rig.appended.count
                cutAt = input.instant
                break
            }
        }
        let at = cutAt ?? rig.now
        rig.card.powerCycle()
        let reopened = FlashJournal.open(storage: flash, randomSeed: 1, deviceNow: at.advanced(byMs: 5_000))
        let rides = JournalScan.scan(flash, repair: false).rides().rides
        let recovered = rides.last?.records ?? []
        #expect(isPrefix(recovered, of: rig.appended), "recovery found records that were never appended")
        #expect(recovered.count >= durableAtCut, "\(durableAtCut) records were reported durable, \(recovered.count) recovered")
        _ = reopened
        if recovered.count < appendedAtCut, recovered.count < rig.appendedAt.count {
            let firstLost = rig.appendedAt[recovered.count]
            #expect(at.milliseconds(since: firstLost) <= 1_000, "lost records from \(firstLost) to the cut at \(at)")
        }
    }

    /// A sync that fails (EIO) keeps the records, reports the storage as failing (the screen is
    /// not held waiting), and rewrites them after the retry interval; nothing is lost.
    @Test func aFailedSyncIsReportedAndRewritten() {
        let rig = DeferredRig(flash: SimulatedFlash(segmentBytes: 16 * 1024), latencyMs: 100)
        let inputs = Script.inputs(seconds: 60)
        var next = 0
        while next < 300 || rig.card.inFlight == 0 {
            rig.feed(inputs[next])
            next += 1
        }
        // The card fails the sync in flight.
        #expect(rig.card.inFlight == 1)
        rig.card.finishNext(error: StorageError(.io, "fdatasync: Input/output error"))
        rig.begunAt = nil
        rig.journal.syncProgress(at: rig.now)
        #expect(rig.journal.condition == .failing)
        #expect(rig.journal.counters.syncFailures == 1)
        #expect(!rig.journal.awaitingDurable, "a failing card does not hold the screen")
        #expect(rig.journal.conditionChange() == .failing)
        for input in inputs.dropFirst(next) { rig.feed(input) }
        rig.cardProgress(until: rig.now.advanced(byMs: 5_000))
        rig.journal.tick(at: rig.now.advanced(byMs: 5_000))
        rig.noteBegin()
        rig.cardProgress(until: rig.now.advanced(byMs: 10_000))
        #expect(rig.journal.condition == .ok)
        #expect(rig.journal.writer.pendingCount == 0)
        let rides = JournalScan.scan(rig.flash, repair: false).rides().rides
        #expect(rides.first?.records == rig.appended, "every record is on the card after the retry")
    }

    /// Shutdown (SIGTERM) waits for the sync in flight and the rest: everything is durable.
    @Test func shutdownWaitsUntilEverythingIsDurable() {
        let rig = DeferredRig(flash: SimulatedFlash(segmentBytes: 16 * 1024), latencyMs: 10_000)
        for input in Script.inputs(seconds: 30).prefix(200) { rig.feed(input) }
        #expect(rig.journal.writer.pendingCount > 0)
        rig.journal.flush(at: rig.now)
        #expect(rig.journal.writer.pendingCount == 0)
        #expect(rig.card.waited > 0)
        let rides = JournalScan.scan(rig.flash, repair: false).rides().rides
        #expect(rides.first?.records == rig.appended)
    }

    /// Where the board fell back to blocking syncs the journal commits as over plain storage.
    @Test func theFallbackCommitsInline() {
        let flash = SimulatedFlash(segmentBytes: 16 * 1024)
        let card = DeferredSyncFlash(flash)
        card.defersSyncs = false
        let opened = FlashJournal.open(storage: card, randomSeed: 42, deviceNow: .zero)
        #expect(!opened.journal.writer.defersSyncs)
        var core = opened.core
        for input in Script.inputs(seconds: 20) {
            core.handle(input)
            while let e = core.drainEffect() { _ = opened.journal.apply(e, at: input.instant) }
            opened.journal.tick(at: input.instant)
            #expect(!opened.journal.awaitingDurable)
        }
        #expect(card.begun == 0)
        #expect(flash.syncCount > 10)
    }
}
