import AppCore
import Control
import Testing

/// `course …` on the control socket (docs/navigation.md): the name keeps its case and spaces.
struct CourseControlTests {
    @Test func courseLinesParse() {
        #expect(ControlProtocol.parse("course") == .success(.command(.courseStatus)))
        #expect(ControlProtocol.parse("course status") == .success(.command(.courseStatus)))
        #expect(ControlProtocol.parse("COURSE list") == .success(.courseList))
        #expect(ControlProtocol.parse("course clear") == .success(.command(.clearCourse)))
        #expect(ControlProtocol.parse("course load Col du Galibier") == .success(.courseLoad("Col du Galibier")))
        #expect(ControlProtocol.parse("course  load\tAlps-2") == .success(.courseLoad("Alps-2")))
        for bad in ["course load", "course fly", "course list all", "course clear now"] {
            guard case .failure(.badArguments(let c, _)) = ControlProtocol.parse(bad) else {
                Issue.record("\(bad) parsed")
                continue
            }
            #expect(c == "course")
        }
        #expect(ControlProtocol.parse(ControlProtocol.word(.clearCourse)) == .success(.command(.clearCourse)))
        #expect(ControlProtocol.parse(ControlProtocol.word(.courseStatus)) == .success(.command(.courseStatus)))
    }
}
