import AppCore
import Device
import Journal
import Navigation
import RideModel
import Testing

/// The runtime and the courses on the card: `course list` / `course load NAME` / `course clear`
/// on the control socket, the Courses screen's requests carried out after the input that asked,
/// and a device without a course store that asks nothing of one.
struct CourseRuntimeTests {
    static func course(_ name: String) throws -> Course {
        try Course(name: name, latE7: [460_000_000, 460_100_000], lonE7: [70_000_000, 70_000_000], altitudeM: [.nan, .nan], cues: [], climbs: [])
    }

    static func device() -> DeviceRuntime {
        let opened = FlashJournal.open(storage: SimulatedFlash(), randomSeed: 3, deviceNow: .zero)
        return DeviceRuntime.boot((opened.journal, opened.core, opened.report), archive: DiscardingArchive(), log: MemoryLog(), wall: nil, at: .zero)
    }

    @Test func controlLinesReadTheCard() throws {
        let d = Self.device()
        #expect(d.control("course list", at: ms(1)) { "{}" }.line == "error this device has no course storage")
        d.courseStore = MemoryCourseStore([try Self.course("Col du Test")])
        #expect(d.control("course list", at: ms(2)) { "{}" }.line == "ok 1 courses: Col du Test (1.1 km)")
        let load = d.control("course load col du test", at: ms(3)) { "{}" }
        #expect(!load.isError && load.line.contains("course Col du Test loaded"), "\(load.line)")
        #expect(d.core.course?.name == "Col du Test")
        let missing = d.control("course load Alps", at: ms(4)) { "{}" }
        #expect(missing.isError && missing.line.contains("no course named 'Alps'"))
        #expect(d.control("course", at: ms(5)) { "{}" }.line.contains("not followed until a ride starts"))
        #expect(d.control("course clear", at: ms(6)) { "{}" }.line.contains("cleared"))
        #expect(d.core.course == nil)
    }

    @Test func theCoursesScreenIsServedByTheStore() throws {
        let d = Self.device()
        d.courseStore = MemoryCourseStore([try Self.course("A"), try Self.course("B")])
        d.buttonEdge(.lap, pressed: true, at: ms(10))
        d.buttonEdge(.lap, pressed: false, at: ms(20))
        #expect(d.core.screen.mode == .courses)
        #expect(d.core.screen.coursesMenu.courses.map(\.name) == ["A", "B"])
        for (t, b) in [(30, Button.page), (50, .page), (70, .lap)] {
            d.buttonEdge(b, pressed: true, at: ms(Int64(t)))
            d.buttonEdge(b, pressed: false, at: ms(Int64(t) + 10))
        }
        #expect(d.core.course?.name == "B")
        #expect(d.core.screen.coursesMenu.page == .course)
    }

    func ms(_ v: Int64) -> MonotonicInstant { MonotonicInstant(milliseconds: v) }
}
