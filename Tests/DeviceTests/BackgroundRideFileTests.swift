import AppCore
import Device
import DeviceAdapters
import Foundation
import Journal
import RideFiles
import RideModel
import Testing

/// The end of a ride on the board's loop (issue 17 item 6): the ride files' fsyncs (each file's
/// and the directory's) and the dating records' go to an io_uring of their own; the loop polls
/// for completions between turns and never waits for the card. "RIDE SAVED" (the durable file)
/// still comes only once every file and its directory entry are durable and the FIT read back.
struct BackgroundRideFileTests {
    static func directory() throws -> String {
        let d = FileManager.default.temporaryDirectory.appendingPathComponent("ridefiles-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        return d
    }

    @Test func rideFilesAreSyncedInTheBackgroundAndSavedOnlyOnceDurable() throws {
        let data = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let files = BoardRideFiles(backgroundSyncs: true)
        let log = MemoryLog()
        // An unset clock: the ride's records are also kept for dating (a fourth file).
        let wall = WallClockTime(unixMs: 1_700_000_000_000, trusted: false)
        let archive = DatingRideArchive(library: RideLibrary(dataDirectory: data, ops: files), ops: files, dataDirectory: data,
                                        bootID: "7d4b4b52-3c1a-4a8e-9a53-6d1f0c2f6b11", wall: wall, at: ms(0), log: log)
        let opened = FlashJournal.open(storage: SimulatedFlash(), randomSeed: 11, deviceNow: ms(0), wallNow: wall)
        let d = DeviceRuntime.boot((opened.journal, opened.core, opened.report), archive: archive, log: log,
                                   stepsRideFiles: true, wall: wall, at: ms(0))
        _ = d.control("start", at: ms(1_000), status: { "{}" })
        var t: Int64 = 1_000
        while t <= 20_000 {
            d.handle(.tick(ms(t)))
            if t >= 4_000 { d.handle(.sensor(.sample(Sample(.power, 200, at: ms(t))))) }
            t += 1_000
        }
        _ = d.control("end", at: ms(t), status: { "{}" })
        #expect(d.rideFilesPending == 1)
        var waits = 0
        for _ in 0..<5_000 where d.rideFilesPending > 0 {
            t += 1
            guard let due = d.rideFileDeadline, ms(t) >= due else { usleep(200); continue }
            d.workOnRideFiles(at: ms(t))
            if let next = d.rideFileDeadline, next.milliseconds(since: ms(t)) == DeviceRuntime.rideFilePollMs {
                waits += 1
                #expect(d.rideFilesWritten == 0, "saved while a sync was still running")
            }
        }
        #expect(d.rideFilesPending == 0, "the ride file was not written: \(d.lastRideFileError ?? "-")")
        #expect(d.rideFilesWritten == 1)
        #expect(files.syncMode == "io_uring")
        #expect(files.backgroundWrites == 4, "three ride files and the dating records through the ring")
        #expect(files.blockingWrites == 0)
        #expect(waits >= 4, "each background write waited at least once for its completion: \(waits)")
        let names = try FileManager.default.subpathsOfDirectory(atPath: data)
        #expect(!names.contains { $0.hasSuffix(".tmp") }, "\(names)")
        let list = try RideLibrary(dataDirectory: data, ops: files).list()
        #expect(list.count == 1)
        #expect(list.first?.formats.count == 3)
        #expect(names.contains { $0.hasSuffix(".rec") }, "the undated ride's records are kept: \(names)")
    }

    /// A file whose directory is gone fails the step (no crash, no temporary left), the write
    /// is retried by the caller as before.
    @Test func aBackgroundWriteThatCannotBeCreatedFails() throws {
        let files = BoardRideFiles(backgroundSyncs: true)
        #expect(throws: (any Error).self) { try files.beginWriteAtomically("/nonexistent-\(getpid())/x.fit", [1, 2, 3]) }
    }

    @Test func aBackgroundWriteReplacesTheFileDurably() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let files = BoardRideFiles(backgroundSyncs: true)
        try files.writeAtomically(dir + "/a.fit", [9])
        let w = try #require(try files.beginWriteAtomically(dir + "/a.fit", [1, 2, 3]))
        #expect(try files.read(dir + "/a.fit") == [9], "the old file stays until the new one is synced")
        var done = false
        for _ in 0..<2_000 where !done {
            done = try w.poll()
            if !done { usleep(500) }
        }
        #expect(done)
        #expect(try files.read(dir + "/a.fit") == [1, 2, 3])
        #expect(try files.list(dir) == ["a.fit"])
    }
}
