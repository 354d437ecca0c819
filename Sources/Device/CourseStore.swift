import AppCore
import Control
import Navigation
import RideModel

/// The courses on the card (docs/navigation.md, "Where courses come from"): the compact course
/// files a ride loads. `DirectoryCourseStore` (DeviceAdapters) keeps them in
/// `<data dir>/courses/`; the simulator and the tests keep them in memory.
public protocol CourseStorePort: AnyObject {
    /// The courses there are, by name.
    func list() -> Result<[CourseListing], CourseStoreError>
    /// A course read and checked (`CourseCodec.decode`): `name` as listed, any case.
    func load(_ name: String) -> Result<Course, CourseStoreError>
}

/// Why a course could not be had, in words for the rider (`short` for the 128-pixel screen).
public struct CourseStoreError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var short: String

    public init(_ message: String, short: String) {
        self.message = message
        self.short = short
    }

    public var description: String { message }
}

/// Courses in memory (the simulator's `--course`, tests).
public final class MemoryCourseStore: CourseStorePort {
    public private(set) var courses: [Course] = []

    public init(_ courses: [Course] = []) { self.courses = courses }

    public func add(_ c: Course) {
        courses.removeAll { $0.name.lowercased() == c.name.lowercased() }
        courses.append(c)
    }

    public func list() -> Result<[CourseListing], CourseStoreError> {
        .success(courses.map { CourseListing(name: $0.name, lengthM: $0.lengthM, ascentM: $0.hasAltitude ? $0.totalAscentM : nil,
                                             cueCount: $0.cues.count, climbCount: $0.climbs.count) })
    }

    public func load(_ name: String) -> Result<Course, CourseStoreError> {
        guard let c = courses.first(where: { $0.name.lowercased() == name.lowercased() }) else {
            return .failure(CourseStoreError("no course named '\(name)' (course list shows them)", short: "NOT FOUND"))
        }
        return .success(c)
    }
}

extension DeviceRuntime {
    /// What the Courses screen or a recovered ride asked (`AppEffect.courses`), carried out
    /// after the input that asked: the list, or the course read from the card, handed back as
    /// `AppInput.courses`.
    func serviceCourseRequests(at now: MonotonicInstant) {
        // Without a store (not set yet at boot, when a recovered ride asks for its course) the
        // requests wait, bounded, for the next input after it is set.
        guard let store = courseStore else { return }
        let requests = courseRequests
        courseRequests = []
        for r in requests {
            switch r {
            case .list:
                switch store.list() {
                case .success(let list): handle(.courses(.listed(list), at: now))
                case .failure(let e):
                    log.log(.error, "courses: \(e.message)")
                    handle(.courses(.listed([]), at: now))
                    handle(.courses(.failed(e.short), at: now))
                }
            case .load(let name):
                switch store.load(name) {
                case .success(let c):
                    log.log(.info, "courses: \(c) loaded")
                    handle(.courses(.loaded(c), at: now))
                case .failure(let e):
                    log.log(.error, "courses: cannot load '\(name)': \(e.message)")
                    handle(.courses(.failed(e.short), at: now))
                }
            }
        }
    }

    /// `course list` and `course load NAME` on the control socket.
    func controlCourse(_ request: ControlProtocolCourse, at now: MonotonicInstant) -> ControlAnswer {
        guard let store = courseStore else { return ControlAnswer("error this device has no course storage", isError: true) }
        switch request {
        case .list:
            switch store.list() {
            case .success(let list):
                if list.isEmpty { return ControlAnswer("ok no courses (bikecomputer courses import FILE adds one)") }
                let rows = list.map { "\($0.name) (\(Int(($0.lengthM / 100).rounded()) / 10).\(Int(($0.lengthM / 100).rounded()) % 10) km)" }
                return ControlAnswer("ok \(list.count) courses: " + rows.joined(separator: ", "))
            case .failure(let e):
                return ControlAnswer("error \(e.message)", isError: true)
            }
        case .load(let name):
            switch store.load(name) {
            case .success(let c):
                let reply = command(.loadCourse(c), at: now)
                return answer(for: .loadCourse(c), reply)
            case .failure(let e):
                return ControlAnswer("error \(e.message)", isError: true)
            }
        }
    }
}

/// The course requests the control socket serves itself (they read the card).
enum ControlProtocolCourse {
    case list
    case load(String)
}
