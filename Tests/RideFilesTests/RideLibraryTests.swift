import Testing
import RideFiles
import RideModel

/// An in-memory file system whose writes can be made to fail after a number of calls (a crash
/// or a full card in the middle of storing a ride).
final class MemoryFiles: RideFileOperations {
    struct Failure: Error {}
    var files: [String: [UInt8]] = [:]
    var writesBeforeFailure: Int?
    var writes = 0

    func list(_ directory: String) throws -> [String] {
        files.keys.filter { $0.hasPrefix(directory + "/") }.map { String($0.dropFirst(directory.count + 1)) }
    }
    func read(_ path: String) throws -> [UInt8] {
        guard let b = files[path] else { throw Failure() }
        return b
    }
    func writeAtomically(_ path: String, _ bytes: [UInt8]) throws {
        if let n = writesBeforeFailure, writes >= n { throw Failure() } // atomic: nothing of it lands
        writes += 1
        files[path] = bytes
    }
    func remove(_ path: String) throws {
        if let n = writesBeforeFailure, writes >= n { throw Failure() }
        writes += 1
        files[path] = nil
    }
    func makeDirectories(_ path: String) throws {}
    func size(_ path: String) throws -> Int64 { Int64(try read(path).count) }
}

struct RideLibraryTests {
    func rideID(_ records: [RideRecord]) -> RideID {
        guard case .header(let h) = records[0] else { fatalError("no header") }
        return h.rideID
    }

    @Test func storedRidesAreListedInStartOrderWithIncreasingVersions() throws {
        let fs = MemoryFiles()
        let lib = RideLibrary(dataDirectory: "/data/", ops: fs)
        let rides = (1...5).map { SimulatedRide(seed: UInt64(100 + $0), seconds: 60) }
        for r in rides { try lib.store(rideID: rideID(r.records), records: r.records) }
        let listed = try lib.list()
        #expect(listed.count == 5)
        #expect(listed.map(\.stem) == listed.map(\.stem).sorted())
        let starts = rides.map { $0.startUnixMs }.sorted()
        #expect(listed.map(\.startText) == starts.map { RideLibrary.startText(unixMs: $0) })
        #expect(listed.allSatisfy { $0.version == 1 && $0.formats == [.fit, .gpx, .tcx] })
        for e in listed { #expect(lib.directory == "/data/rides" && fs.files[lib.path(e, .fit)] != nil) }

        // rewrite: version 2 replaces version 1
        let first = rides[0]
        try lib.store(rideID: rideID(first.records), records: first.records)
        let again = try lib.find(rideID(first.records).description)
        #expect(again.version == 2)
        #expect(try lib.list().count == 5)
        #expect(fs.files.keys.filter { $0.contains(rideID(first.records).description) }.count == 3, "old version removed")
        let fit = try lib.bytes(again, .fit)
        #expect(try FITFile(bytes: fit).messages(20).count == first.runningSeconds)
    }

    /// The stepped writer (the board's end of a ride): one encoder or one file per step; a
    /// failure at any write, then `retry()` once the storage takes writes again, leaves exactly
    /// one complete version with the same bytes as an unstepped store, and no half-written one.
    @Test func aSteppedWriteRetriedAfterAFailureGivesOneCompleteVersion() throws {
        let ride = SimulatedRide(seed: 9, seconds: 120)
        let id = rideID(ride.records)
        let reference = MemoryFiles()
        try RideLibrary(dataDirectory: "/d", ops: reference).store(rideID: id, records: ride.records)
        for failAt in 0..<3 {
            let fs = MemoryFiles()
            let lib = RideLibrary(dataDirectory: "/d", ops: fs)
            let w = lib.writing(rideID: id, records: ride.records)
            fs.writesBeforeFailure = failAt
            var failed = false
            var steps = 0
            while steps < 50 {
                steps += 1
                do {
                    if try w.stepTyped() { break }
                } catch {
                    #expect(!failed, "one failure only")
                    failed = true
                    #expect(fs.files.keys.filter { $0.hasSuffix(".fit") }.isEmpty, "no FIT before the last write")
                    fs.writesBeforeFailure = nil
                    w.retry()
                }
            }
            #expect(failed && w.isDone)
            let listed = try lib.list()
            #expect(listed.count == 1 && listed[0].version == (failAt == 0 ? 1 : 2) && listed[0].formats == [.fit, .gpx, .tcx], "\(listed)")
            #expect(fs.files.count == 3, "the half-written version 1 is removed: \(fs.files.keys.sorted())")
            #expect(try lib.bytes(listed[0], .fit) == reference.files.first { $0.key.hasSuffix(".fit") }?.value)
        }
    }

    /// A linear sweep: the storage fails at its 1st, 2nd, ... change (3 writes, then 3 removals of
    /// the old version); every time the library still lists one complete, valid version.
    @Test func aFailedRewriteLeavesThePreviousVersionIntact() throws {
        for failAt in 0..<6 {
            let fs = MemoryFiles()
            let lib = RideLibrary(dataDirectory: "/d", ops: fs)
            let ride = SimulatedRide(seed: 7, seconds: 90)
            let id = rideID(ride.records)
            try lib.store(rideID: id, records: ride.records)
            let before = try lib.find(id.description)
            let beforeBytes = try lib.bytes(before, .fit)
            fs.writesBeforeFailure = fs.writes + failAt
            if failAt < 3 {
                #expect(throws: RideLibraryError.self) { try lib.storeTyped(rideID: id, records: ride.records) }
            } else {
                _ = try lib.storeTyped(rideID: id, records: ride.records) // old-version removal is best effort
            }
            let after = try lib.find(id.description)
            if failAt < 3 {
                #expect(after == before, "fail at change \(failAt): still version 1 with all formats")
                #expect(try lib.bytes(after, .fit) == beforeBytes)
            } else {
                #expect(after.version == 2 && after.formats == [.fit, .gpx, .tcx], "fail at change \(failAt): version 2 complete")
                #expect(try lib.bytes(after, .fit) == beforeBytes, "same ride, same bytes")
            }
            #expect(try lib.list().count == 1)
            fs.writesBeforeFailure = nil
            try lib.store(rideID: id, records: ride.records) // the next store cleans up
            #expect(fs.files.count == 3)
        }
    }

    @Test func findByPrefixDeleteAndBadNames() throws {
        let fs = MemoryFiles()
        let lib = RideLibrary(dataDirectory: "/d", ops: fs)
        let ride = SimulatedRide(seed: 9, seconds: 30)
        let id = rideID(ride.records)
        try lib.store(rideID: id, records: ride.records)
        fs.files["/d/rides/notes.txt"] = [1]
        fs.files["/d/rides/2026-01-01-000000_zzzz_v1.fit"] = [1]
        fs.files["/d/rides/x.fit.123.tmp"] = [1]
        #expect(try lib.list().count == 1)
        #expect(try lib.find(String(id.description.prefix(8))).rideID == id)
        #expect(throws: RideLibraryError.self) { try lib.find("abc") }          // too short
        #expect(throws: RideLibraryError.self) { try lib.find("ffffffff-0000") } // no match
        try lib.deleteTyped(rideID: id)
        #expect(try lib.list().isEmpty)
        #expect(throws: RideLibraryError.self) { try lib.deleteTyped(rideID: id) }
        #expect(RideLibrary.parse("2026-11-22-083000_\(id)_v0.fit") == nil)
        #expect(RideLibrary.parse("2026-11-22-083000_\(id)_v12.gpx")?.version == 12)
    }

    @Test func aRideThatNeverStartedIsNotStored() {
        let lib = RideLibrary(dataDirectory: "/d", ops: MemoryFiles())
        let h = RideHeader(rideID: RideID(high: 1, low: 2), anchor: WallClockAnchor(monotonic: .zero, wall: WallClockTime(unixMs: 0, trusted: false)), settings: RideSettings())
        #expect(throws: RideLibraryError.self) { try lib.storeTyped(rideID: h.rideID, records: [.header(h)]) }
    }
}
