import AppCore
import BoardIO
import Device
import DeviceAdapters
import Display
import Foundation
import Journal
import RideModel
import Testing

struct BoardFileAdapterTests {
    func temporaryDirectory() throws -> String {
        let d = FileManager.default.temporaryDirectory.appendingPathComponent("adapters-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        return d
    }

    @Test func rideActiveFlagFollowsTheState() throws {
        let d = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: d) }
        let flag = RideActiveFlag(path: d + "/run/ride-active")
        #expect(flag.set(true))
        #expect(FileManager.default.fileExists(atPath: d + "/run/ride-active"))
        #expect(flag.set(true))
        #expect(flag.set(false))
        #expect(!FileManager.default.fileExists(atPath: d + "/run/ride-active"))
        #expect(flag.errors == 0)
    }

    @Test func aStaleRideActiveFileIsRemovedAtStartUp() throws {
        let d = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: d) }
        FileManager.default.createFile(atPath: d + "/ride-active", contents: Data("stale".utf8))
        let flag = RideActiveFlag(path: d + "/ride-active")
        flag.removeStale()
        #expect(!FileManager.default.fileExists(atPath: d + "/ride-active"))
        #expect(!flag.isSet)
        flag.removeStale() // nothing there: no error
        #expect(flag.errors == 0)
    }

    @Test func rideActiveFlagInAnUnwritablePlaceIsCountedNotFatal() {
        let flag = RideActiveFlag(path: "/proc/bikecomputer-test/ride-active")
        #expect(!flag.set(true))
        #expect(flag.errors == 1 && !flag.isSet)
        #expect(flag.lastError?.contains("/proc/bikecomputer-test") == true)
    }

    @Test func boardJournalCreatesItsDirectoryAndRecoversAnInterruptedRide() throws {
        let d = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: d) }
        let dir = d + "/data/journal"
        var opened = try BoardJournal.open(directory: dir, configuration: AppConfiguration(), randomSeed: 7,
                                           deviceNow: MonotonicInstant(milliseconds: 0), wallNow: nil, policy: CommitPolicy())
        #expect(opened.report.recoveredRide == nil)
        var core = opened.core
        func feed(_ input: AppInput) {
            core.handle(input)
            while let e = core.drainEffect() { _ = opened.journal.apply(e, at: input.instant) }
        }
        feed(.command(.start, at: MonotonicInstant(milliseconds: 0)))
        for s in 1...10 {
            let t = MonotonicInstant(milliseconds: Int64(s) * 1000)
            feed(.sample(Sample(.heartRate, 140, at: t)))
            feed(.tick(t))
            opened.journal.tick(at: t)
        }
        // The board's syncs complete in the background (io_uring); the run loop takes their
        // completions. Without a loop here, wait for them, as shutdown does.
        opened.journal.flush(at: MonotonicInstant(milliseconds: 10_000))
        #expect(opened.journal.writer.pendingCount == 0)
        let id = core.header?.rideID
        #expect(id != nil)
        // "Crash": open again on the same directory.
        opened = try BoardJournal.open(directory: dir, configuration: AppConfiguration(), randomSeed: 8,
                                       deviceNow: MonotonicInstant(milliseconds: 500), wallNow: nil, policy: CommitPolicy())
        #expect(opened.report.recoveredRide == id)
        #expect(opened.core.state == .running)
        #expect(opened.report.recordsReplayed > 10)
    }
}
