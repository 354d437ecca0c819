import AppCore
import BoardIO
import CourseImport
import Device
import Glibc
import Navigation

/// The courses on the card (docs/navigation.md, "Where courses come from"): `<data dir>/courses/`
/// holds the compact course files (`NAME.course`, written atomically) and whatever GPX, TCX or FIT
/// files the rider put there. A file is keyed by its name without extension (`alps.gpx` becomes
/// `alps.course`); `load` takes that key or the course's own name, in any case.
public final class DirectoryCourseStore: CourseStorePort {
    public static let subdirectory = "courses"
    public static let compactExtension = "course"
    public static let sourceExtensions = ["gpx", "tcx", "fit"]
    /// Courses listed at most.
    public static let coursesMax = CoursesMenu.listMax
    /// Bytes of a key at most (the rest of the file name is cut).
    public static let keyBytesMax = CourseImport.keyBytesMax

    public let directory: String

    public init(dataDirectory: String) {
        directory = dataDirectory + "/" + Self.subdirectory
    }

    func path(_ key: String) -> String { "\(directory)/\(key).\(Self.compactExtension)" }

    /// The key a file is stored under (`CourseImport.key(forFile:)`, shared with the companion's
    /// upload).
    public static func key(forFile fileName: String) -> String { CourseImport.key(forFile: fileName) }

    /// The keys of the compact files there are, sorted.
    public func keys() -> [String] {
        guard let names = try? AtomicFiles.list(directory) else { return [] }
        return names.filter { $0.hasSuffix("." + Self.compactExtension) }.map { String($0.dropLast(Self.compactExtension.count + 1)) }.sorted()
    }

    /// Reads and checks one compact file.
    public func read(key: String) -> Result<Course, CourseStoreError> {
        let p = path(key)
        let bytes: [UInt8]
        do { bytes = try AtomicFiles.readAll(p) } catch {
            return .failure(CourseStoreError("cannot read \(p): \(error)", short: "NOT READABLE"))
        }
        do { return .success(try CourseCodec.decode(bytes)) } catch {
            return .failure(CourseStoreError("\(p): \(error)", short: "DAMAGED"))
        }
    }

    public func list() -> Result<[CourseListing], CourseStoreError> {
        var out: [CourseListing] = []
        for key in keys().prefix(Self.coursesMax) {
            guard case .success(let c) = read(key: key) else { continue } // a damaged file is said by `courses list`
            out.append(CourseListing(name: key, lengthM: c.lengthM, ascentM: c.hasAltitude ? c.totalAscentM : nil,
                                     cueCount: c.cues.count, climbCount: c.climbs.count))
        }
        return .success(out)
    }

    public func load(_ name: String) -> Result<Course, CourseStoreError> {
        let keys = keys()
        if let k = keys.first(where: { $0 == name }) ?? keys.first(where: { $0.lowercased() == name.lowercased() }) { return read(key: k) }
        for k in keys {
            if case .success(let c) = read(key: k), c.name.lowercased() == name.lowercased() { return .success(c) }
        }
        return .failure(CourseStoreError("no course named '\(name)' in \(directory) (bikecomputer courses list shows them)", short: "NOT FOUND"))
    }

    /// Imports a course file (its bytes, named `fileName`) and stores its compact form under the
    /// file's key, replacing a course of that key. Returns the key, the course and the import's
    /// report.
    public func importFile(_ bytes: [UInt8], fileName: String) throws -> (key: String, course: Course, report: ImportReport, replaced: Bool) {
        let (course, report) = try CourseImport.course(from: bytes, fileName: fileName)
        let key = Self.key(forFile: fileName)
        try AtomicFiles.makeDirectories(directory)
        let replaced = (try? AtomicFiles.size(path(key))) != nil
        try AtomicFiles.write(path(key), CourseCodec.encode(course))
        return (key, course, report, replaced)
    }

    /// Removes a course and the GPX, TCX or FIT files of the folder it was imported from (left
    /// there, they would be imported again at the next start). Returns those files' names.
    @discardableResult
    public func remove(key: String) throws -> [String] {
        guard keys().contains(key) else { throw CourseStoreError("no course '\(key)' in \(directory)", short: "NOT FOUND") }
        var sources: [String] = []
        for n in (try? AtomicFiles.list(directory))?.sorted() ?? [] where Self.key(forFile: n) == key {
            guard let dot = n.lastIndex(of: "."), Self.sourceExtensions.contains(n[n.index(after: dot)...].lowercased()) else { continue }
            try AtomicFiles.remove("\(directory)/\(n)")
            sources.append(n)
        }
        try AtomicFiles.remove(path(key))
        return sources
    }

    /// GPX, TCX and FIT files in the folder whose compact form is missing or older than they are.
    public func pendingSources() -> [String] {
        guard let names = try? AtomicFiles.list(directory) else { return [] }
        var out: [String] = []
        for n in names.sorted() {
            guard let dot = n.lastIndex(of: "."), Self.sourceExtensions.contains(n[n.index(after: dot)...].lowercased()) else { continue }
            let source = "\(directory)/\(n)"
            if let s = Self.modified(source), let c = Self.modified(path(Self.key(forFile: n))), c >= s { continue }
            out.append(source)
        }
        return out
    }

    /// Imports every pending source file (`bikecomputer run` does at start, before the ride
    /// loop; `courses import` with no file). One line per file: what was done or what is wrong.
    public func importPending() -> [(ok: Bool, line: String)] {
        var out: [(Bool, String)] = []
        for source in pendingSources() {
            do {
                let bytes = try AtomicFiles.readAll(source)
                let r = try importFile(bytes, fileName: source)
                out.append((true, "\(source): imported as \(r.key) (\(r.course))"))
            } catch {
                out.append((false, "\(error)"))
            }
        }
        return out
    }

    static func modified(_ path: String) -> Int64? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec)
    }
}
