import TestSupport
import AppCore
import Control
import Device
import Journal
import RideModel
import Testing

/// Issue 27: `ctl end` answered "ride ended and saved" once the journal held the end, while the
/// ride's file could not be written at all (a rides directory the app could not write): every
/// ride ended RIDE NOT SAVED on the screen. Now "saved" means the file is durable; otherwise the
/// reply says the file is not saved, and why (`bikecomputer ctl` exits 3).
final class EndReplyHarness {
    struct Denied: Error, CustomStringConvertible {
        var description = "cannot create /data/rides/x.fit.tmp: Permission denied"
    }

    final class Archive: RideArchivePort {
        var failing: Denied?
        var stored = 0
        func store(rideID: RideID, records: [RideRecord]) throws -> String {
            if let failing { throw failing }
            stored += 1
            return "stored"
        }
        func delete(rideID: RideID) throws {}
    }

    let archive = Archive()
    let runtime: DeviceRuntime
    var sent: [ControlAnswer] = []
    var t: Int64 = 0

    init(steps: Bool = false) {
        let opened = FlashJournal.open(storage: SimulatedFlash(segmentBytes: 16 * 1024), randomSeed: 9, deviceNow: .zero)
        runtime = DeviceRuntime.boot((opened.journal, opened.core, opened.report), archive: archive, log: MemoryLog(),
                                     stepsRideFiles: steps, wall: nil, at: .zero)
        runtime.durableReplySink = { [unowned self] _, a in self.sent.append(a) }
    }

    func control(_ line: String) -> ControlAnswer { runtime.control(line, at: MonotonicInstant(milliseconds: t)) { "{}" } }

    func pausedRide() {
        _ = control("start")
        while runtime.state != .running, t < 10_000 {
            t += 100
            runtime.tick(at: MonotonicInstant(milliseconds: t))
        }
        t += 3_000
        runtime.tick(at: MonotonicInstant(milliseconds: t))
        _ = control("pause")
        t += 500
        sent.removeAll()
    }
}

struct EndReplyTests {
    @Test func aRideWhoseFileCannotBeWrittenIsNotAnsweredSaved() throws {
        let h = EndReplyHarness()
        h.archive.failing = EndReplyHarness.Denied()
        h.pausedRide()
        let a = h.control("end")
        #expect(h.runtime.state == .ended, "the ride ends whatever becomes of its file")
        #expect(h.runtime.rideFilesWritten == 0)
        let line = a.awaitingDurability == nil ? a.line : try #require(h.sent.first?.line)
        #expect(!line.contains("saved") || line.contains("not saved"), "\(line)")
        #expect(line.contains(DeviceRuntime.rideFileNotSavedMessage), "\(line)")
        let why = try #require(ControlProtocol.notDurableReason(line), "ctl must be able to tell (exit 3): \(line)")
        #expect(why.hasPrefix(DeviceRuntime.rideNotSavedWord) && why.contains("STORAGE ERROR") && why.contains("Permission denied"), "\(why)")
    }

    @Test func aRideWhoseFileIsWrittenIsAnsweredSaved() throws {
        let h = EndReplyHarness()
        h.pausedRide()
        let a = h.control("end")
        #expect(h.archive.stored == 1)
        let line = a.awaitingDurability == nil ? a.line : try #require(h.sent.first?.line)
        #expect(line == "ok ended: ride ended and saved", "\(line)")
    }

    /// On the board the file is written in steps on the loop: the reply waits for them, and
    /// says "saved" once they are done, or says the file is not on the card after the bound.
    @Test func theReplyWaitsForTheSteppedFile() throws {
        let h = EndReplyHarness(steps: true)
        h.pausedRide()
        let a = h.control("end")
        _ = try #require(a.awaitingDurability, "no file yet: no reply yet (\(a.line))")
        #expect(h.sent.isEmpty)
        while h.runtime.workOnRideFiles(at: MonotonicInstant(milliseconds: h.t)) {}
        let line = try #require(h.sent.first?.line)
        #expect(line == "ok ended: ride ended and saved", "\(line)")

        let late = EndReplyHarness(steps: true)
        late.pausedRide()
        _ = try #require(late.control("end").awaitingDurability)
        late.t += DeviceRuntime.controlReplyWaitMsMax
        late.runtime.tick(at: MonotonicInstant(milliseconds: late.t))
        // Not written within the bound (a slow card): answered without "saved", and not as a
        // failure (the journal holds the end; the file is on its way).
        let lateLine = try #require(late.sent.first?.line, "answered within the bound")
        #expect(lateLine == "ok ended: " + DeviceRuntime.rideFileWritingMessage, "\(lateLine)")
        #expect(ControlProtocol.notDurableReason(lateLine) == nil, "\(lateLine)")
    }
}
