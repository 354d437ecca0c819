import AppCore
import BoardIO
import Device
import DeviceAdapters
import Foundation
import Journal
import RideModel
import Testing

/// "Durable before the screen confirms" with syncs in the background (issue 17 item 6): the
/// screen shows a state change only once its journal record is on the card, and a page change
/// never waits for a sync.
struct DurableConfirmationTests {
    final class Screens: ScreenPort {
        var shown: [ScreenMode] = []
        func show(_ screen: ScreenModel, at now: MonotonicInstant) { shown.append(screen.mode) }
    }

    static func kind(_ m: ScreenMode?) -> String {
        switch m {
        case .running: "running"
        case .paused: "paused"
        case .countdown: "countdown"
        case .idle: "idle"
        case .summary: "summary"
        default: "other"
        }
    }

    /// Finishes every operation the card has, delivering each completion to the runtime.
    static func cardCatchesUp(_ card: DeferredSyncFlash, _ d: DeviceRuntime, at now: MonotonicInstant) {
        for _ in 0..<16 where card.inFlight > 0 {
            card.finishNext()
            d.syncProgress(at: now)
        }
    }

    /// A device on a card that syncs when the test says, its ride started with START and run
    /// through the countdown (the start's sync still in flight): the flash, the card, the
    /// screens shown, the device, and the time reached (ms).
    static func rideStarted(archive: RideArchivePort = DiscardingArchive())
        -> (SimulatedFlash, DeferredSyncFlash, Screens, DeviceRuntime, Int64) {
        let flash = SimulatedFlash(segmentBytes: 16 * 1024)
        let card = DeferredSyncFlash(flash)
        let opened = FlashJournal.open(storage: card, randomSeed: 3, deviceNow: .zero)
        let screens = Screens()
        let d = DeviceRuntime.boot((opened.journal, opened.core, opened.report), archive: archive, screen: screens,
                                   log: MemoryLog(), wall: nil, at: .zero)
        d.buttonEdge(.startPause, pressed: true, at: ms(100))
        d.buttonEdge(.startPause, pressed: false, at: ms(150))
        var t: Int64 = 200
        while d.state != .running, t < 10_000 {
            d.tick(at: ms(t))
            t += 100
        }
        return (flash, card, screens, d, t)
    }

    @Test func aStateChangeAppearsOnlyOnceDurableAndPagesNeverWait() {
        let (flash, card, screens, d, started) = Self.rideStarted()
        var t = started
        #expect(d.state == .running)
        #expect(d.confirmationAwaitingDurability, "the ride's start is being synced")
        #expect(Self.kind(screens.shown.last) == "countdown", "running is not shown before the start is durable: \(screens.shown.last.map { "\($0)" } ?? "-")")
        #expect(d.stateShown == .prepared, "the countdown's state is shown until the start is durable: \(d.stateShown)")
        let syncsBefore = flash.syncCount
        Self.cardCatchesUp(card, d, at: ms(t))
        #expect(flash.syncCount > syncsBefore)
        #expect(!d.confirmationAwaitingDurability)
        #expect(Self.kind(screens.shown.last) == "running", "the start appears once durable")

        // A page change while a 1 Hz sync is in flight is shown at once.
        for _ in 0..<30 where card.inFlight == 0 {
            t += 100
            d.handle(.sample(Sample(.heartRate, 130, at: ms(t))))
            d.tick(at: ms(t))
        }
        #expect(card.inFlight == 1, "the 1 Hz record's sync is in flight")
        let page = screens.shown.last
        d.buttonEdge(.page, pressed: true, at: ms(t + 10))
        d.buttonEdge(.page, pressed: false, at: ms(t + 60))
        #expect(screens.shown.last != page, "the page changed without waiting for the sync")
        #expect(Self.kind(screens.shown.last) == "running")
        Self.cardCatchesUp(card, d, at: ms(t + 100))

        // Pause: the timer stops at once, PAUSED appears when the pause is durable.
        t += 1_000
        d.buttonEdge(.startPause, pressed: true, at: ms(t))
        d.buttonEdge(.startPause, pressed: false, at: ms(t + 50))
        #expect(d.state == .paused)
        #expect(d.confirmationAwaitingDurability)
        #expect(Self.kind(screens.shown.last) == "running", "PAUSED waits for the pause's record")
        #expect(d.stateShown == .running, "the state shown (ctl status state_shown) waits with the screen")
        #expect(d.screensHeldForDurability > 0)
        Self.cardCatchesUp(card, d, at: ms(t + 300))
        #expect(Self.kind(screens.shown.last) == "paused")
        #expect(d.stateShown == .paused)
    }

    /// A failed sync does not hold the screen: the state change is shown with the storage error.
    @Test func aFailingCardDoesNotHoldTheScreen() {
        let (_, card, screens, d, t) = Self.rideStarted()
        #expect(Self.kind(screens.shown.last) == "countdown")
        card.finishNext(error: StorageError(.io, "fsync: Input/output error"))
        d.syncProgress(at: ms(t))
        #expect(!d.confirmationAwaitingDurability)
        #expect(Self.kind(screens.shown.last) == "running")
        #expect(d.core.screen.storage == .failing, "the rider is told")
    }

    /// A ride file whose write fails again (the rides directory read-only) redraws the screen
    /// through the gate too: the end, its record still being synced, is not on screen before it
    /// is durable. The retry's redraw showed the core's screen as it was.
    @Test func aRideFileRetryShowsNoStateBeforeItIsDurable() {
        struct ReadOnly: Error {}
        final class ReadOnlyRides: RideArchivePort {
            var stores = 0
            func store(rideID: RideID, records: [RideRecord]) throws -> String {
                stores += 1
                throw ReadOnly()
            }
            func delete(rideID: RideID) throws {}
        }
        let rides = ReadOnlyRides()
        let (_, card, screens, d, started) = Self.rideStarted(archive: rides)
        var t = started
        t += 2_000
        d.buttonEdge(.startPause, pressed: true, at: ms(t))
        d.buttonEdge(.startPause, pressed: false, at: ms(t + 50))
        Self.cardCatchesUp(card, d, at: ms(t + 100))
        #expect(Self.kind(screens.shown.last) == "paused")
        // A long press ends the ride; the card holds the end's sync from here on.
        t += 1_000
        d.buttonEdge(.startPause, pressed: true, at: ms(t))
        d.tick(at: ms(t + 1_600))
        d.buttonEdge(.startPause, pressed: false, at: ms(t + 1_700))
        #expect(d.state == .ended)
        #expect(d.confirmationAwaitingDurability, "the end's record is being synced")
        let shownBefore = screens.shown.count
        for step in 1...40 {
            d.tick(at: ms(t + 1_700 + Int64(step) * 100))
        }
        #expect(rides.stores >= 2, "the ride file was tried again")
        #expect(d.confirmationAwaitingDurability)
        let shown = screens.shown[shownBefore...].map { Self.kind($0) }
        #expect(!shown.contains("summary"), "the summary was shown before the end's record was durable: \(shown)")
        Self.cardCatchesUp(card, d, at: ms(t + 6_000))
        #expect(Self.kind(screens.shown.last) == "summary")
    }
}

/// The board's journal storage on a real directory: syncs through io_uring, their completion on
/// the eventfd, and the blocking fallback.
struct BoardSyncRingTests {
    func temporaryDirectory() throws -> String {
        let d = FileManager.default.temporaryDirectory.appendingPathComponent("syncring-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        return d
    }

    /// Waits (poll(2)) for the eventfd to become readable.
    func waitReadable(_ fd: FileDescriptor, timeoutMs: Int32) -> Bool {
        var p = pollfd(fd: fd.rawValue, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, timeoutMs) == 1
    }

    /// The board's journal in `dir` with its syncs through io_uring.
    func openOnRing(_ dir: String) throws -> (opened: (journal: FlashJournal, core: AppCore, report: RecoveryReport),
                                              storage: BoardSegmentStorage, ring: SyncRing) {
        let opened = try BoardJournal.open(directory: dir, configuration: AppConfiguration(), randomSeed: 1, deviceNow: .zero,
                                           wallNow: nil, policy: CommitPolicy())
        let storage = try #require(opened.journal.storage as? BoardSegmentStorage)
        let ring = try #require(storage.ring, "io_uring must work on this machine (Debian 12's kernel has it): \(storage.fallbackReason ?? "")")
        return (opened, storage, ring)
    }

    @Test func journalSyncsCompleteOnTheEventfd() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (opened, storage, ring) = try openOnRing(dir)
        #expect(opened.journal.writer.defersSyncs)
        var core = opened.core
        var appended = 0
        for input in [AppInput.button(ButtonEvent(.startPause, .down, at: ms(0))), .button(ButtonEvent(.startPause, .up, at: ms(50))),
                      .tick(ms(1_000)), .tick(ms(2_000)), .tick(ms(3_000)), .tick(ms(3_100))] {
            core.handle(input)
            while let e = core.drainEffect() {
                if case .journal = e { appended += 1 }
                _ = opened.journal.apply(e, at: input.instant)
            }
        }
        #expect(core.state == .running)
        #expect(appended > 3)
        // Completions arrive on the eventfd; the loop takes them until all is durable.
        var wakeups = 0
        while opened.journal.writer.pendingCount > 0, wakeups < 20 {
            #expect(waitReadable(ring.completionDescriptor, timeoutMs: 5_000), "no completion within 5 s")
            opened.journal.syncProgress(at: ms(4_000))
            wakeups += 1
        }
        #expect(Int(opened.journal.counters.recordsDurable) == appended)
        #expect(!opened.journal.awaitingDurable)
        #expect(ring.completed >= 3, "the segment's creation, its header and the records: \(ring.completed)")
        #expect(ring.failed == 0)
        // The writes went through the ring too, each linked before its sync: none in the loop.
        #expect(storage.writesThroughRing, "Debian 12's kernel runs IORING_OP_WRITE")
        #expect(storage.ringWrites >= 2, "the header and the records: \(storage.ringWrites)")
        #expect(storage.loopWrites == 0)
        #expect(storage.failedWrites == 0)
        let reread = JournalScan.scan(FileSystemSegmentStorage(JournalDirectoryFiles(try SegmentDirectory(path: dir, segmentBytes: BoardJournal.segmentBytes))), repair: false)
        #expect(reread.rides(withRecords: true).rides.first?.records.count == appended)
    }

    /// A write through the ring is in the file only once its completion comes: until then a
    /// read of the segment (the ride's records read back for its file) lays it over the file's
    /// bytes, and after it the file holds the same bytes.
    @Test func aSegmentReadWhileItsWriteIsInFlightHasTheWrite() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (opened, storage, ring) = try openOnRing(dir)
        var core = opened.core
        var t: Int64 = 0
        func feed(_ input: AppInput) {
            core.handle(input)
            while let e = core.drainEffect() { _ = opened.journal.apply(e, at: input.instant) }
            opened.journal.tick(at: input.instant)
        }
        func catchUp() {
            for _ in 0..<20 where opened.journal.writer.syncInFlight {
                guard waitReadable(ring.completionDescriptor, timeoutMs: 5_000) else { return }
                opened.journal.syncProgress(at: ms(t))
            }
        }
        feed(.button(ButtonEvent(.startPause, .down, at: ms(0))))
        feed(.button(ButtonEvent(.startPause, .up, at: ms(50))))
        // Through the countdown and a few seconds, every operation completed as it comes.
        while t < 8_000 {
            t += 500
            feed(.tick(ms(t)))
            catchUp()
        }
        #expect(core.state == .running)
        let writesBefore = storage.ringWrites
        // One more second's records written and their sync begun: the write is the kernel's now.
        t += 1_000
        feed(.sample(Sample(.heartRate, 140, at: ms(t))))
        feed(.tick(ms(t)))
        let segment = try #require(try storage.list().last)
        let whileInFlight = try storage.read(segment)
        #expect(storage.ringWrites == writesBefore + 1, "the second's records went through the ring")
        catchUp()
        #expect(opened.journal.writer.pendingCount == 0)
        let after = try storage.read(segment)
        #expect(whileInFlight == after, "the read in flight saw what the file holds once the write completed")
        let fromFile = try SegmentDirectory(path: dir, segmentBytes: BoardJournal.segmentBytes).read(SegmentName.name(segment))
        #expect(fromFile == after)
        #expect(storage.loopWrites == 0 && storage.failedWrites == 0)
        // A write staged and not yet submitted (the journal submits it with the sync it asks for
        // next) is not in the file, and a read has it.
        let mark = [UInt8](repeating: 0xA5, count: 16)
        let at = BoardJournal.segmentBytes - 64
        try mark.withUnsafeBytes { try storage.write(segment, at: at, $0) }
        #expect(Array(try storage.read(segment)[at..<(at + 16)]) == mark)
        let file = try SegmentDirectory(path: dir, segmentBytes: BoardJournal.segmentBytes).read(SegmentName.name(segment))
        #expect(file.count < at + 16 || Array(file[at..<(at + 16)]) == [UInt8](repeating: 0, count: 16))
        #expect(storage.ringWrites == writesBefore + 1 && storage.loopWrites == 0, "staged, not written")
    }

    @Test func withoutIoUringSyncsBlockAsBefore() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let opened = try BoardJournal.open(directory: dir, configuration: AppConfiguration(), randomSeed: 1, deviceNow: .zero,
                                           wallNow: nil, policy: CommitPolicy(), blockingSyncs: "test: io_uring refused")
        let storage = try #require(opened.journal.storage as? BoardSegmentStorage)
        #expect(storage.ring == nil && !storage.defersSyncs)
        #expect(storage.fallbackReason == "test: io_uring refused")
        var core = opened.core
        for input in [AppInput.button(ButtonEvent(.startPause, .down, at: ms(0))), .button(ButtonEvent(.startPause, .up, at: ms(50))),
                      .tick(ms(3_100))] {
            core.handle(input)
            while let e = core.drainEffect() { _ = opened.journal.apply(e, at: input.instant) }
        }
        #expect(core.state == .running)
        #expect(opened.journal.writer.pendingCount == 0, "durable inside the commit")
    }
}
