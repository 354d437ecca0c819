import BoardIO
import Control
import CourseImport
import Dispatch
import Hummingbird
import Navigation
import NIOCore
import Synchronization

/// Courses from the phone (docs/companion.md, "Courses"; docs/navigation.md): the courses on the
/// card, a GPX, TCX or FIT file uploaded and imported as `bikecomputer courses import` imports it
/// (into `<data dir>/courses/KEY.course`, in this process: never on the unit's run loop), and the
/// course for the ride chosen or cleared over the control socket (`course load KEY`,
/// `course clear`), so the unit checks and loads it as from its own Courses screen.
extension CompanionServer {
    /// The largest course file the phone may upload (a 300 km GPX track of 50 000 points with
    /// elevations is about 3 MB). Larger: 413 before the body is read.
    static let courseUploadBytesMax = 8 << 20
    /// Courses listed at most (as the unit's Courses screen).
    static let coursesListedMax = 200
    /// Characters of a course key or name a client may send to `select` (keys are at most
    /// CourseImport.keyBytesMax bytes; a course's own name at most 64).
    static let courseKeyCharactersMax = 64

    func addCourseRoutes(_ router: Router<CompanionContext>) {
        let server = self

        router.get("/api/courses") { request, _ in
            guard server.authorize(request) != nil else { return Self.json(Self.pairingRequired, status: .unauthorized) }
            let dir = server.coursesDirectory
            let listed = await CourseImportQueue.shared.run { Self.listCourses(dir) }
            return Self.json(["courses": .array(listed), "directory": .string(dir)])
        }

        router.post("/api/courses") { request, _ in
            guard server.authorize(request) != nil else { return Self.json(Self.pairingRequired, status: .unauthorized) }
            guard let name = request.uri.queryParameters["name"].map(String.init), !name.isEmpty, name.utf8.count <= 255 else {
                return Self.json(["error": "say the file's name: POST /api/courses?name=alps.gpx with the file as the body (GPX, TCX or FIT, at most \(Self.courseUploadBytesMax >> 20) MiB)"],
                                 status: .badRequest)
            }
            if let length = request.headers[.contentLength].flatMap({ Int($0) }), length > Self.courseUploadBytesMax {
                return Self.courseTooLarge(length)
            }
            guard CourseImportQueue.shared.enter() else {
                return Self.retryLater("another course is being imported; try again in a few seconds", 2)
            }
            defer { CourseImportQueue.shared.leave() }
            let body: ByteBuffer
            do { body = try await request.body.collect(upTo: Self.courseUploadBytesMax) } catch {
                return Self.courseTooLarge(nil)
            }
            let bytes = Array(body.readableBytesView)
            let dir = server.coursesDirectory
            let (status, obj) = await CourseImportQueue.shared.run { Self.importCourse(bytes, fileName: name, into: dir) }
            server.log("course upload \(name) (\(bytes.count) bytes): \(obj["error"]?.string ?? "imported as \(obj["key"]?.string ?? "?")")")
            return Self.json(obj, status: status)
        }

        router.post("/api/courses/select") { request, _ in
            guard server.authorize(request) != nil else { return Self.json(Self.pairingRequired, status: .unauthorized) }
            let body = try await request.body.collect(upTo: Self.requestBodyBytesMax)
            let obj = JSONValue.parse(body.readableBytesView)?.object ?? [:]
            guard let key = obj["key"]?.string, Self.isCourseKey(key) else {
                return Self.json(["error": "send {\"key\": \"alps\"}: a course's key or name from GET /api/courses (at most \(Self.courseKeyCharactersMax) characters, one line)"],
                                 status: .badRequest)
            }
            return Self.json(await server.deviceReply("course load \(key)"))
        }

        router.post("/api/courses/clear") { request, _ in
            guard server.authorize(request) != nil else { return Self.json(Self.pairingRequired, status: .unauthorized) }
            return Self.json(await server.deviceReply("course clear"))
        }
    }

    func deviceReply(_ line: String) async -> [String: JSONValue] {
        let reply = DeviceReply(await link.request(line))
        log("\(line): \(reply.message)")
        var out = reply.json
        out["request"] = .string(line)
        return out
    }

    static func courseTooLarge(_ length: Int?) -> Response {
        json(["error": "the course file is \(length.map { "\($0) bytes, " } ?? "")larger than \(courseUploadBytesMax >> 20) MiB, the most the companion takes; split the course, or copy it to the unit's courses/ folder",
              "bytes_max": .integer(courseUploadBytesMax)], status: .contentTooLarge)
    }

    /// A key or name the control line can carry: 1 to `courseKeyCharactersMax` characters (code
    /// points, as the OpenAPI schema counts), not only spaces, no control characters (a line
    /// break would be a second control line).
    static func isCourseKey(_ s: String) -> Bool {
        let u = s.unicodeScalars
        return (1...courseKeyCharactersMax).contains(u.count) && u.contains { $0 != " " } && !u.contains { $0.value < 0x20 || $0.value == 0x7F }
    }

    /// Imports a course file and stores its compact form under the file's key (replacing a course
    /// of that key), as `bikecomputer courses import` does. (status, JSON) for the phone.
    static func importCourse(_ bytes: [UInt8], fileName: String, into dir: String) -> (HTTPResponse.Status, [String: JSONValue]) {
        let course: Course, report: ImportReport
        do { (course, report) = try CourseImport.course(from: bytes, fileName: fileName) } catch {
            // What is wrong with the file, naming it (docs/navigation.md, "Limits").
            return (.unprocessableContent, ["error": .string(error.description)])
        }
        let key = CourseImport.key(forFile: fileName)
        let path = "\(dir)/\(key).course"
        let replaced = (try? AtomicFiles.size(path)) != nil
        do {
            try AtomicFiles.makeDirectories(dir)
            try AtomicFiles.write(path, CourseCodec.encode(course))
        } catch {
            return (.init(code: 507, reasonPhrase: "Insufficient Storage"), ["error": "cannot store the course in \(dir): \(error)"])
        }
        return (replaced ? .ok : .created, [
            "key": .string(key), "name": .string(course.name), "format": .string(report.format.rawValue), "replaced": .bool(replaced),
            "points_read": .integer(report.pointsRead), "points_kept": .integer(course.pointCount), "length_m": .number((course.lengthM * 10).rounded() / 10),
            "cues_from_file": .integer(report.cuesFromFile), "cues_derived": .integer(report.cuesDerived), "climbs": .integer(course.climbs.count),
            "warnings": .array(report.warnings.map(JSONValue.string)),
        ])
    }

    /// The compact courses in `dir` (a damaged one is left out, as the unit's list leaves it out).
    static func listCourses(_ dir: String) -> [JSONValue] {
        let names = (try? AtomicFiles.list(dir)) ?? []
        var out: [JSONValue] = []
        for n in names.sorted() where n.hasSuffix(".course") {
            guard out.count < coursesListedMax else { break }
            guard let bytes = try? AtomicFiles.readAll("\(dir)/\(n)"), let c = try? CourseCodec.decode(bytes) else { continue }
            out.append(["key": .string(String(n.dropLast(".course".count))), "name": .string(c.name), "length_m": .number((c.lengthM * 10).rounded() / 10),
                        "ascent_m": c.hasAltitude ? .number((c.totalAscentM * 10).rounded() / 10) : .null,
                        "cues": .integer(c.cues.count), "climbs": .integer(c.climbs.count)])
        }
        return out
    }
}

/// One course import at a time, on its own thread (an import of a long course takes a few
/// hundred milliseconds and some megabytes): the server's event loops stay free, and the memory
/// of at most one upload is held.
final class CourseImportQueue: Sendable {
    static let shared = CourseImportQueue()
    private let queue = DispatchQueue(label: "bikecompanion.course-import")
    private let busy = Mutex(false)

    func enter() -> Bool { busy.withLock { isBusy in if isBusy { return false }; isBusy = true; return true } }
    func leave() { busy.withLock { $0 = false } }

    func run<T>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { (cont: CheckedContinuation<T, Never>) in
            queue.async { cont.resume(returning: work()) }
        }
    }
}
