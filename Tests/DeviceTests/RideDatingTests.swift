import AppCore
import Device
import Journal
import RideFiles
import RideModel
import Testing

/// Issue 17 item 4 with issue 19's GPS time: a ride recorded on an untrusted clock (a Pi without
/// an RTC, booted at a stale saved time) is dated when the clock becomes trusted — during the
/// ride, or after it (its files re-written under the corrected name, the ride list showing it
/// once) — by the offset between the two clocks, whether the trust comes from the kernel (NTP)
/// or from GPS time; never when its clock was trusted already; across a restart of the app in
/// the same boot, but not across a reboot (the time the board was off is unknown). The whole
/// device: AppCore decides, the runtime carries the effect, `DatingRideArchive` re-dates.
struct RideDatingTests {
    /// The true time at device instant 0, and the stale clock the board booted with.
    static let trueAtZeroMs: Int64 = 1_790_000_000_000
    static let staleByMs: Int64 = 400 * 86_400_000 + 1_234
    static let data = "/data"
    static let boot = "7d4b4b52-3c1a-4a8e-9a53-6d1f0c2f6b11"

    static func stale(_ t: Int64) -> WallClockTime { WallClockTime(unixMs: trueAtZeroMs - staleByMs + t, trusted: false) }
    static func trueTime(_ t: Int64) -> WallClockTime { WallClockTime(unixMs: trueAtZeroMs + t, trusted: true) }

    final class Files: RideFileOperations {
        struct Failure: Error {}
        var files: [String: [UInt8]] = [:]
        var failWrites = false
        func list(_ directory: String) throws -> [String] {
            files.keys.filter { $0.hasPrefix(directory + "/") }.map { String($0.dropFirst(directory.count + 1)) }
        }
        func read(_ path: String) throws -> [UInt8] {
            guard let b = files[path] else { throw Failure() }
            return b
        }
        func writeAtomically(_ path: String, _ bytes: [UInt8]) throws {
            if failWrites && !path.hasSuffix(".offset") { throw Failure() }
            files[path] = bytes
        }
        func remove(_ path: String) throws { files[path] = nil }
        func makeDirectories(_ path: String) throws {}
        func size(_ path: String) throws -> Int64 { Int64(try read(path).count) }
        var pending: [String] { files.keys.filter { $0.hasPrefix(RideDatingTests.data + "/undated/") }.sorted() }
    }

    struct Device {
        let runtime: DeviceRuntime
        let archive: DatingRideArchive
        let log: MemoryLog
        var library: RideLibrary { archive.library }
    }

    /// A start of the app at device instant `at` (CLOCK_MONOTONIC: it carries on across a restart
    /// of the app, and starts again at a reboot) with the wall clock reading `wall`.
    static func start(_ files: Files, boot: String = boot, wall: WallClockTime, at t: Int64,
                      flash: SimulatedFlash = SimulatedFlash(), seed: UInt64 = 11) -> Device {
        let log = MemoryLog()
        let archive = DatingRideArchive(library: RideLibrary(dataDirectory: data, ops: files), ops: files, dataDirectory: data,
                                        bootID: boot, wall: wall, at: ms(t), log: log)
        let opened = FlashJournal.open(storage: flash, randomSeed: seed, deviceNow: ms(t), wallNow: wall)
        let runtime = DeviceRuntime.boot((opened.journal, opened.core, opened.report), archive: archive, log: log, wall: wall, at: ms(t))
        return Device(runtime: runtime, archive: archive, log: log)
    }

    /// A ride from `from` (the start command; it starts 3 s later, after the countdown) to `to`,
    /// with power every second; `during` is called at each second (to set the clock).
    static func ride(_ d: Device, from: Int64, to: Int64, during: (Int64) -> Void = { _ in }) {
        _ = d.runtime.control("start", at: ms(from), status: { "{}" })
        var t = from
        while t <= to {
            d.runtime.handle(.tick(ms(t)))
            if t >= from + 3000 { d.runtime.handle(.sensor(.sample(Sample(.power, 200, at: ms(t))))) }
            during(t)
            t += 1000
        }
        _ = d.runtime.control("end", at: ms(to + 10), status: { "{}" })
    }

    static let rideStart: Int64 = 60_000 + 3_000  // start command at 60 s, the countdown's 3 s

    /// The one ride in the library: its name, FIT session start time and first GPX time.
    static func saved(_ d: Device) throws -> (entry: RideEntry, fitFirst: UInt32, gpxFirst: String) {
        let list = try d.library.list()
        guard list.count == 1, let e = list.first else { throw Files.Failure() }
        let fit = FITActivity(try FITFile(bytes: try d.library.bytes(e, .fit)))
        let gpx = String(decoding: try d.library.bytes(e, .gpx), as: UTF8.self)
        guard let a = gpx.range(of: "<time>"), let b = gpx.range(of: "</time>", range: a.upperBound..<gpx.endIndex),
              let first = fit.sessions.first?.startTime, !fit.records.isEmpty else { throw Files.Failure() }
        return (e, first, String(gpx[a.upperBound..<b.lowerBound]))
    }

    static func logged(_ log: MemoryLog, _ text: String) -> Bool {
        (0..<log.lines.count).contains { log.lines[$0].contains(text) }
    }

    static func fitSeconds(_ unixMs: Int64) -> UInt32 { UInt32(unixMs / 1000 - FITTime.unixEpochOffsetSeconds) }

    /// Checks the ride is dated by the true clock (`dated`) or the stale one.
    static func expectDated(_ d: Device, true dated: Bool, version: Int? = nil, _ comment: Comment? = nil) throws {
        let s = try saved(d)
        let startMs = dated ? trueAtZeroMs + rideStart : trueAtZeroMs - staleByMs + rideStart
        #expect(s.entry.startText == RideLibrary.startText(unixMs: startMs), comment)
        #expect(s.fitFirst == fitSeconds(startMs), comment)
        #expect(s.gpxFirst.hasPrefix(String(UTCDateTime(unixMs: startMs).iso8601.dropLast())), comment)
        if let version { #expect(s.entry.version == version, comment) }
    }

    @Test func trustDuringTheRideFromTheKernelOrFromGPS() throws {
        for gps in [false, true] {
            let files = Files()
            let d = Self.start(files, wall: Self.stale(0), at: 0)
            Self.ride(d, from: 60_000, to: 120_000) { t in
                guard t == 90_000 else { return }
                if gps {
                    d.runtime.handle(.sensor(.clock(Self.trueTime(t), at: ms(t))))
                } else {
                    d.runtime.wallClock(Self.trueTime(t), at: ms(t))
                }
            }
            try Self.expectDated(d, true: true, version: 1, "gps \(gps)")
            #expect(files.pending.isEmpty, "nothing waits: the ride's journal held the trusted anchor")
        }
    }

    @Test func trustAfterTheRideReDatesItsFilesNameAndListEntry() throws {
        for gps in [false, true] {
            let files = Files()
            let d = Self.start(files, wall: Self.stale(0), at: 0)
            Self.ride(d, from: 60_000, to: 120_000)
            try Self.expectDated(d, true: false, version: 1, "saved at once with the board's guess")
            #expect(files.pending == ["/data/undated/\(try Self.saved(d).entry.rideID).rec"])
            // An untrusted reading changes nothing.
            d.runtime.wallClock(Self.stale(200_000), at: ms(200_000))
            try Self.expectDated(d, true: false, version: 1)
            // Ten minutes after the ride, NTP (or a GPS fix) sets the clock.
            if gps {
                for s: Int64 in 0..<3 { d.runtime.handle(.sensor(.clock(Self.trueTime(700_000 + s * 1000), at: ms(700_000 + s * 1000)))) }
            } else {
                d.runtime.wallClock(Self.trueTime(700_000), at: ms(700_000))
            }
            try Self.expectDated(d, true: true, version: 2, "gps \(gps)")
            #expect(files.pending.isEmpty)
            #expect(try d.library.list().count == 1, "one entry in the ride list, the dated one")
            #expect(files.files.keys.filter { $0.hasSuffix("_v1.fit") }.isEmpty, "the stale version is gone")
            #expect(d.archive.ridesRedated == 1)
            #expect(Self.logged(d.log, "dated now that the clock is set (+400 d 0 h 0 min 1 s)"))
            // A later trusted correction does not date it again.
            d.runtime.wallClock(Self.trueTime(800_000 + 60_000), at: ms(800_000))
            try Self.expectDated(d, true: true, version: 2)
        }
    }

    @Test func theBoardsSteppedSaveGoesThroughTheDatingArchive() throws {
        // The board writes ride files one bounded step per loop turn: the dating archive must
        // keep the library's steps (not one step doing everything) and still keep the undated
        // ride's records once its files are durable, and date it when the clock is set.
        let files = Files()
        let d = Self.start(files, wall: Self.stale(0), at: 0)
        d.runtime.stepsRideFiles = true
        Self.ride(d, from: 60_000, to: 120_000)
        #expect(try d.library.list().isEmpty, "nothing written before the loop steps")
        var steps = 0
        while d.runtime.workOnRideFiles(at: ms(121_000)) && steps < 100 { steps += 1 }
        #expect(steps > 3, "the save took \(steps + 1) steps")
        try Self.expectDated(d, true: false, version: 1)
        #expect(files.pending == ["/data/undated/\(try Self.saved(d).entry.rideID).rec"])
        // Setting the clock only queues the dating (issue 27): the loop's steps do it.
        d.runtime.wallClock(Self.trueTime(700_000), at: ms(700_000))
        try Self.expectDated(d, true: false, version: 1)
        steps = 0
        while d.runtime.rideFilesPending > 0 && steps < 100 {
            _ = d.runtime.workOnRideFiles(at: ms(700_000))
            steps += 1
        }
        try Self.expectDated(d, true: true, version: 2)
        #expect(steps > 3, "the dating took \(steps) steps")
    }

    @Test func neverTrustedKeepsTheBoardsGuessAndWaits() throws {
        let files = Files()
        let d = Self.start(files, wall: Self.stale(0), at: 0)
        Self.ride(d, from: 60_000, to: 120_000)
        for t in stride(from: Int64(121_000), through: 3_600_000, by: 60_000) { d.runtime.wallClock(Self.stale(t), at: ms(t)) }
        try Self.expectDated(d, true: false, version: 1)
        #expect(files.pending.count == 1)
        #expect(d.archive.ridesRedated == 0)
    }

    @Test func aRideWhoseClockWasTrustedIsNeverReDated() throws {
        let files = Files()
        let d = Self.start(files, wall: Self.trueTime(0), at: 0)
        Self.ride(d, from: 60_000, to: 120_000)
        #expect(files.pending.isEmpty)
        // The clock is corrected forward by a minute after the ride: the ride keeps its date.
        d.runtime.wallClock(WallClockTime(unixMs: Self.trueAtZeroMs + 300_000 + 60_000, trusted: true), at: ms(300_000))
        try Self.expectDated(d, true: true, version: 1)
    }

    /// The app restarts (a crash, an update) between the ride and the clock being set: the same
    /// boot, so the monotonic clock carries on and the offset is still known.
    @Test func anAppRestartInTheSameBootStillDatesTheRide() throws {
        let files = Files()
        let first = Self.start(files, wall: Self.stale(0), at: 0)
        Self.ride(first, from: 60_000, to: 120_000)
        let second = Self.start(files, wall: Self.stale(300_000), at: 300_000)
        #expect(files.pending.count == 1)
        second.runtime.wallClock(Self.trueTime(400_000), at: ms(400_000))
        try Self.expectDated(second, true: true, version: 2)
        #expect(files.pending.isEmpty)
        // Or the clock was set while the app was down: the next start finds it trusted at once.
        let files2 = Files()
        Self.ride(Self.start(files2, wall: Self.stale(0), at: 0), from: 60_000, to: 120_000)
        let third = Self.start(files2, wall: Self.trueTime(500_000), at: 500_000)
        try Self.expectDated(third, true: true, version: 2)
        #expect(files2.pending.isEmpty)
    }

    /// The board reboots before the clock is set: the new boot's clock starts again at a saved
    /// time, and how long the board was off is unknown. The ride keeps its date; that is logged
    /// and counted, and nothing is left waiting.
    @Test func aRebootBeforeTheClockIsSetLeavesTheRideAsItWas() throws {
        let files = Files()
        Self.ride(Self.start(files, wall: Self.stale(0), at: 0), from: 60_000, to: 120_000)
        let after = Self.start(files, boot: "0b5e2a7e-0000-4000-8000-000000000002", wall: Self.stale(130_000), at: 5_000)
        #expect(files.pending.isEmpty)
        #expect(after.archive.ridesUndatable == 1)
        #expect(Self.logged(after.log, "cannot be dated: the board restarted before its clock was set"))
        after.runtime.wallClock(Self.trueTime(700_000), at: ms(10_000))
        try Self.expectDated(after, true: false, version: 1)
    }

    /// A power cut mid-ride on a trusted clock; the board is off for an hour and boots again on
    /// its stale saved clock (unsynchronised), its monotonic clock from 0. The recovered ride goes
    /// on on its own trusted time line (gap 0: the time off is unknown) and ends. The next ride in
    /// that boot is recorded on the unset clock: named by the board's clock and kept for dating,
    /// then dated by the true time once the clock is set. (Found by Tests/vm/test_vm_clock.py: it
    /// took the recovered ride's time line as trusted, off by the hour the board was off, and was
    /// never corrected.)
    @Test func theNextRideAfterARecoveryWaitsForTheClockToBeSet() throws {
        let files = Files()
        let flash = SimulatedFlash()
        let first = Self.start(files, wall: Self.trueTime(0), at: 0, flash: flash)
        _ = first.runtime.control("start", at: ms(60_000), status: { "{}" })
        for t in stride(from: Int64(60_000), through: 120_000, by: 1000) {
            first.runtime.handle(.tick(ms(t)))
            if t >= 63_000 { first.runtime.handle(.sensor(.sample(Sample(.power, 200, at: ms(t))))) }
        }
        // The plug pulled at 120 s; back an hour later, at device instant 5 s of the new boot.
        let offMs: Int64 = 3_600_000
        let boardAt = { (t: Int64) in Self.stale(120_000 + offMs + t) } // the new boot's clock at its instant t
        let second = Self.start(files, boot: "0b5e2a7e-0000-4000-8000-000000000004", wall: boardAt(5_000), at: 5_000,
                                flash: flash, seed: 12)
        #expect(second.runtime.core.state == .running, "the ride recovered and going on")
        second.runtime.wallClock(boardAt(8_000), at: ms(8_000))
        _ = second.runtime.control("end", at: ms(10_000), status: { "{}" })
        let recovered = try #require(try second.library.list().first).rideID
        #expect(files.pending.isEmpty, "the recovered ride holds its trusted anchor")
        _ = second.runtime.control("dismiss", at: ms(15_000), status: { "{}" })
        Self.ride(second, from: 20_000, to: 80_000) { t in second.runtime.wallClock(boardAt(t), at: ms(t)) }
        let next = try #require(try second.library.list().first { $0.rideID != recovered })
        #expect(next.startText == RideLibrary.startText(unixMs: boardAt(Self.rideStart - 40_000).unixMs), "named by the board's clock")
        #expect(files.pending == ["/data/undated/\(next.rideID).rec"], "kept for dating")
        second.runtime.wallClock(Self.trueTime(120_000 + offMs + 100_000), at: ms(100_000))
        let dated = try #require(try second.library.list().first { $0.rideID == next.rideID })
        #expect(dated.version == 2)
        #expect(dated.startText == RideLibrary.startText(unixMs: Self.trueAtZeroMs + 120_000 + offMs + Self.rideStart - 40_000),
                "dated by the true time, the hour off included")
        #expect(files.pending.isEmpty)
        #expect(try second.library.list().first { $0.rideID == recovered }?.version == 1, "the recovered ride is not re-dated")
    }

    /// The clock is set, the offset is written, and the power goes before the ride's files are
    /// written again (here: the card refuses them). The offset is on the card: the next start,
    /// even after a reboot, dates the ride.
    @Test func theOffsetOnTheCardSurvivesAPowerCutBeforeTheRewrite() throws {
        let files = Files()
        let d = Self.start(files, wall: Self.stale(0), at: 0)
        Self.ride(d, from: 60_000, to: 120_000)
        files.failWrites = true
        d.runtime.wallClock(Self.trueTime(700_000), at: ms(700_000))
        #expect(files.pending.count == 2, "the records and the offset: \(files.pending)")
        #expect(d.archive.datingFailures == 1)
        try Self.expectDated(d, true: false, version: 1)
        files.failWrites = false
        let rebooted = Self.start(files, boot: "0b5e2a7e-0000-4000-8000-000000000003", wall: Self.stale(50_000), at: 4_000)
        try Self.expectDated(rebooted, true: true, version: 2)
        #expect(files.pending.isEmpty)
    }

    /// A ride deleted before the clock is set (`bikecomputer rides delete` goes to the library
    /// directly) is not brought back by its dating.
    @Test func aRideDeletedBeforeTheClockIsSetStaysDeleted() throws {
        let files = Files()
        let d = Self.start(files, wall: Self.stale(0), at: 0)
        Self.ride(d, from: 60_000, to: 120_000)
        let id = try Self.saved(d).entry.rideID
        try RideLibrary(dataDirectory: Self.data, ops: files).delete(rideID: id)
        d.runtime.wallClock(Self.trueTime(700_000), at: ms(700_000))
        #expect(try d.library.list().isEmpty)
        #expect(files.pending.isEmpty)
        #expect(Self.logged(d.log, "was deleted before its clock was set"))
    }

    /// A ride's records survive the `.rec` file exactly (samples, events, anchors, metadata).
    @Test func keptRecordsDecodeToTheSameRide() throws {
        let files = Files()
        let d = Self.start(files, wall: Self.stale(0), at: 0)
        Self.ride(d, from: 60_000, to: 120_000)
        guard let path = files.pending.first, let bytes = files.files[path] else { Issue.record("nothing kept"); return }
        let decoded = try #require(DatingRideArchive.decodeRecords(bytes))
        let id = try Self.saved(d).entry.rideID
        #expect(!decoded.isEmpty)
        // The stored FIT from the kept records equals the one written from the journal.
        let other = RideLibrary(dataDirectory: "/other", ops: Files())
        try other.store(rideID: id, records: decoded)
        let e = try #require(try other.list().first)
        #expect(try other.bytes(e, .fit) == (try d.library.bytes(try Self.saved(d).entry, .fit)))
        // A damaged file is refused, never half read.
        var bad = bytes
        bad[bad.count - 3] ^= 0xFF
        #expect(DatingRideArchive.decodeRecords(bad) == nil)
    }
}
