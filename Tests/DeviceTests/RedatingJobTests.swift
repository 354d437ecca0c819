import AppCore
import Device
import Journal
import RideFiles
import RideModel
import Testing

/// Re-dating off the loop (issue 27): when the clock becomes trusted the rides waiting for their
/// date are dated as ordinary ride-file steps, one bounded piece of work each, not inside the
/// input that set the clock; and a ride whose file is being written at that moment is dated too.
struct RedatingJobTests {
    typealias R = RideDatingTests

    /// `RideDatingTests.Files` counting what each call does.
    final class CountingFiles: RideFileOperations {
        let inner = R.Files()
        var writes = 0
        var removes = 0
        func list(_ directory: String) throws -> [String] { try inner.list(directory) }
        func read(_ path: String) throws -> [UInt8] { try inner.read(path) }
        func writeAtomically(_ path: String, _ bytes: [UInt8]) throws { writes += 1; try inner.writeAtomically(path, bytes) }
        func remove(_ path: String) throws { removes += 1; try inner.remove(path) }
        func makeDirectories(_ path: String) throws {}
        func size(_ path: String) throws -> Int64 { try inner.size(path) }
    }

    static func start(_ files: CountingFiles, at t: Int64) -> (DeviceRuntime, DatingRideArchive) {
        let log = MemoryLog()
        let archive = DatingRideArchive(library: RideLibrary(dataDirectory: R.data, ops: files), ops: files, dataDirectory: R.data,
                                        bootID: R.boot, wall: R.stale(t), at: ms(t), log: log)
        let opened = FlashJournal.open(storage: SimulatedFlash(), randomSeed: 5, deviceNow: ms(t), wallNow: R.stale(t))
        let runtime = DeviceRuntime.boot((opened.journal, opened.core, opened.report), archive: archive, log: log,
                                         stepsRideFiles: true, wall: R.stale(t), at: ms(t))
        return (runtime, archive)
    }

    static func ride(_ runtime: DeviceRuntime, from: Int64, to: Int64) {
        _ = runtime.control("start", at: ms(from), status: { "{}" })
        var t = from
        while t <= to {
            runtime.handle(.tick(ms(t)))
            if t >= from + 3000 { runtime.handle(.sensor(.sample(Sample(.power, 200, at: ms(t))))) }
            t += 1000
        }
        _ = runtime.control("end", at: ms(to + 10), status: { "{}" })
        _ = runtime.control("dismiss", at: ms(to + 20), status: { "{}" })
    }

    /// Steps until no ride file waits; returns the most file writes and removals one step did.
    @discardableResult
    static func drain(_ runtime: DeviceRuntime, _ files: CountingFiles, at t: Int64) -> (steps: Int, writes: Int, removes: Int) {
        var most = (steps: 0, writes: 0, removes: 0)
        while runtime.rideFilesPending > 0 && most.steps < 1_000 {
            let (w, r) = (files.writes, files.removes)
            _ = runtime.workOnRideFiles(at: ms(t))
            most.steps += 1
            most.writes = max(most.writes, files.writes - w)
            most.removes = max(most.removes, files.removes - r)
        }
        return most
    }

    @Test func settingTheClockDoesNoFileWorkAndEachDatingStepIsBounded() throws {
        let files = CountingFiles()
        let (runtime, archive) = Self.start(files, at: 0)
        let rides = 5
        for k in 0..<rides {
            Self.ride(runtime, from: 60_000 + Int64(k) * 100_000, to: 120_000 + Int64(k) * 100_000)
            Self.drain(runtime, files, at: 150_000 + Int64(k) * 100_000)
        }
        #expect(files.inner.pending.count == rides)
        let (w, r) = (files.writes, files.removes)
        runtime.wallClock(R.trueTime(900_000), at: ms(900_000))
        #expect(files.writes == w && files.removes == r, "the input that set the clock wrote nothing (before issue 27: every ride, fsyncs and all)")
        #expect(runtime.rideFilesPending == 1, "one dating at a time in the queue")
        let most = Self.drain(runtime, files, at: 900_000)
        #expect(most.writes <= 1, "a step writes one file at most")
        #expect(most.removes <= 3, "a step removes one ride's kept files or one older version at most")
        #expect(most.steps >= rides * (RideFileWrite.stepsPerWrite + 3))
        #expect(archive.ridesRedated == UInt64(rides) && runtime.ridesRedated == UInt64(rides))
        #expect(files.inner.pending.isEmpty)
        for e in try archive.library.list() {
            #expect(e.version == 2 && e.startText.hasPrefix(String(RideLibrary.startText(unixMs: R.trueAtZeroMs).prefix(4))))
        }
    }

    /// The clock is set while the ride's file is being written (after its first steps, before its
    /// records are kept for dating): the ride is dated in this start all the same. Before issue
    /// 27 it was missed (the clock's announcement listed the rides waiting at that moment) and
    /// given up at the next boot.
    @Test func aRideBeingWrittenWhenTheClockIsSetIsDated() throws {
        let files = CountingFiles()
        let (runtime, archive) = Self.start(files, at: 0)
        Self.ride(runtime, from: 60_000, to: 120_000)
        for _ in 0..<3 { _ = runtime.workOnRideFiles(at: ms(121_000)) }
        #expect(try archive.library.list().isEmpty && files.inner.pending.isEmpty, "being written, not kept yet")
        runtime.wallClock(R.trueTime(122_000), at: ms(122_000))
        Self.drain(runtime, files, at: 123_000)
        let entry = try #require(try archive.library.list().first)
        #expect(entry.version == 2)
        #expect(entry.startText == RideLibrary.startText(unixMs: R.trueAtZeroMs + R.rideStart))
        #expect(files.inner.pending.isEmpty)
        #expect(archive.ridesRedated == 1)
    }

    /// A dating whose step keeps failing is given up for this start after a few tries (the ride
    /// is saved; its kept records wait for the next start) and the next ride's dating goes on.
    @Test func aFailingDatingIsRetriedThenLeftForTheNextStart() throws {
        let files = CountingFiles()
        let (runtime, archive) = Self.start(files, at: 0)
        Self.ride(runtime, from: 60_000, to: 120_000)
        Self.drain(runtime, files, at: 130_000)
        files.inner.failWrites = true
        runtime.wallClock(R.trueTime(200_000), at: ms(200_000))
        var t: Int64 = 200_000
        while runtime.rideFilesPending > 0 && t < 300_000 {
            _ = runtime.workOnRideFiles(at: ms(t))
            t += 500
        }
        #expect(runtime.rideFilesPending == 0)
        #expect(runtime.redatingsDeferred == 1)
        #expect(files.inner.pending.count == 2, "its records and its offset stay for the next start")
        #expect(archive.datingFailures >= 1)
        #expect(runtime.core.screen.overlay != .rideNotSaved, "the ride is saved: nothing says otherwise")
    }
}
