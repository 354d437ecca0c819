import AppCore
import Device
import Journal
import RideModel
import Testing

struct InspectionTests {
    @Test func inspectionShowsRidesAndTheRebuildWithoutTouchingTheJournal() {
        let flash = SimulatedFlash(segmentBytes: 8 * 1024)
        let rig = Rig(flash: flash)
        let inputs = Script.inputs(seconds: 150)
        for input in inputs.prefix(inputs.count / 2) { rig.feed(input) }
        let before = (try! flash.list()).map { flash.contents($0)! }
        let i = JournalInspection(storage: flash)
        #expect(i.scan.segments.count >= 1)
        #expect(i.rides.count == 1)
        #expect(i.rides[0].records == Int(rig.journal.counters.recordsDurable))
        #expect(i.rebuild?.state == rig.core.state)
        #expect(i.rebuild?.laps == rig.core.builder?.laps.count)
        #expect(i.rebuild?.events == rig.core.builder?.events.count)
        #expect(i.rebuild?.distanceM == rig.core.builder?.ride.distanceM)
        #expect((try! flash.list()).map { flash.contents($0)! } == before, "inspection changed the journal")
    }
}
