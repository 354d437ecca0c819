import ArgumentParser
import BoardIO
import Control
import CourseImport
import DeviceAdapters
import Navigation

/// `bikecomputer courses`: the courses on the card (docs/navigation.md).
struct Courses: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Import, list, show and remove the courses a ride can follow.",
        discussion: """
        Courses live in <data dir>/courses/ as compact files the device loads in a moment; GPX, \
        TCX and FIT files put in that folder are imported when bikecomputer starts, or by \
        'courses import' with no file. On the unit: LAP on the idle screen; from a shell: \
        'bikecomputer ctl course load NAME'.
        """,
        subcommands: [Import.self, List.self, Show.self, Remove.self])

    struct DataDir: ParsableArguments {
        @Option(name: .customLong("data-dir"), help: "The data directory holding courses/.")
        var dataDirectory = "/var/lib/bikecomputer"

        var store: DirectoryCourseStore { DirectoryCourseStore(dataDirectory: dataDirectory) }
    }

    struct Import: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Import GPX, TCX or FIT course files (without FILE: those waiting in <data dir>/courses/).")
        @OptionGroup var data: DataDir
        @Argument(help: "Course files (GPX 1.0/1.1, TCX, FIT).") var files: [String] = []
        @Flag(help: "Print one JSON object per file (what was read and kept, the cues) instead of text.") var json = false

        func run() throws {
            let store = data.store
            var failed = 0
            if files.isEmpty {
                let results = store.importPending()
                if results.isEmpty { print("no course files waiting in \(store.directory)") }
                for r in results {
                    if r.ok { print(r.line) } else { printError("courses: \(r.line)"); failed += 1 }
                }
            }
            for path in files {
                do {
                    // A file too large is refused before it is read (bounded memory).
                    let size = try AtomicFiles.size(path)
                    guard size <= Int64(CourseImport.fileBytesMax) else {
                        throw CourseImportError(file: path, .tooLarge(bytes: Int(clamping: size)))
                    }
                    let bytes = try AtomicFiles.readAll(path)
                    let r = try store.importFile(bytes, fileName: path)
                    let c = r.course
                    if json {
                        var w = JSONWriter(pretty: false)
                        w.beginObject()
                        w.string("file", path); w.string("key", r.key); w.string("name", c.name); w.string("format", r.report.format.rawValue)
                        w.int("points_read", Int64(r.report.pointsRead)); w.int("points_kept", Int64(c.pointCount))
                        w.number("length_m", c.lengthM, decimals: 2)
                        w.int("cues_from_file", Int64(r.report.cuesFromFile)); w.int("cues_derived", Int64(r.report.cuesDerived))
                        w.int("waypoints_away", Int64(r.report.waypointsAway))
                        w.beginArray("cues")
                        for q in c.cues {
                            let p = c.position(atAlongM: q.alongM)
                            w.beginObject()
                            w.number("distance_m", q.alongM, decimals: 2); w.string("type", q.type.name); w.string("name", q.name)
                            w.number("lat", p.latDeg, decimals: 7); w.number("lon", p.lonDeg, decimals: 7)
                            w.endObject()
                        }
                        w.endArray()
                        w.int("climbs", Int64(c.climbs.count))
                        w.endObject()
                        print(w.text)
                        continue
                    }
                    print("\(path): \(r.replaced ? "replaced" : "imported as") \(r.key): \"\(c.name)\", \(CoursesText.km(c.lengthM)) km, "
                          + "\(r.report.pointsRead) points read, \(r.report.pointsKept) kept, \(c.cues.count) cues"
                          + (r.report.cuesDerived > 0 ? " (from the route's bends)" : "")
                          + ", \(c.climbs.count) climbs" + (c.hasAltitude ? ", +\(Int(c.totalAscentM.rounded())) m" : ", no altitude"))
                    if r.report.waypointsAway > 0 {
                        print("  \(r.report.waypointsAway) waypoints farther than \(Int(CueRules.waypointMaxDistanceM)) m from the route are not cues")
                    }
                    for w in r.report.warnings { print("  note: \(w)") }
                } catch {
                    printError("courses: \(error)")
                    failed += 1
                }
            }
            if failed > 0 { throw ExitCode(1) }
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the courses on the card.")
        @OptionGroup var data: DataDir
        @Flag(help: "Print JSON.") var json = false

        func run() throws {
            let store = data.store
            var w = JSONWriter()
            if json { w.beginArray() }
            for key in store.keys() {
                switch store.read(key: key) {
                case .success(let c):
                    if json {
                        w.beginObject()
                        w.string("key", key)
                        w.string("name", c.name)
                        w.int("points", Int64(c.pointCount))
                        w.number("length_m", c.lengthM, decimals: 1)
                        w.number("ascent_m", c.hasAltitude ? c.totalAscentM : nil, decimals: 1)
                        w.int("cues", Int64(c.cues.count))
                        w.int("climbs", Int64(c.climbs.count))
                        w.endObject()
                    } else {
                        print("\(key)  \"\(c.name)\"  \(CoursesText.km(c.lengthM)) km  \(c.cues.count) cues  \(c.climbs.count) climbs")
                    }
                case .failure(let e):
                    printError("courses: \(e.message)")
                }
            }
            if json {
                w.endArray()
                print(w.text)
            } else {
                let pending = store.pendingSources()
                if !pending.isEmpty { print("waiting to be imported (bikecomputer courses import): " + pending.joined(separator: ", ")) }
            }
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show a course: its figures, cues and climbs.")
        @OptionGroup var data: DataDir
        @Argument(help: "The course's key or name.") var name: String
        @Flag(help: "Print JSON.") var json = false

        func run() throws {
            let c: Course
            switch data.store.load(name) {
            case .success(let course): c = course
            case .failure(let e): throw CommandFailure(e.message)
            }
            if json {
                var w = JSONWriter()
                w.beginObject()
                w.string("name", c.name)
                w.int("points", Int64(c.pointCount))
                w.number("length_m", c.lengthM, decimals: 1)
                w.number("ascent_m", c.hasAltitude ? c.totalAscentM : nil, decimals: 1)
                w.number("descent_m", c.hasAltitude ? c.totalDescentM : nil, decimals: 1)
                w.beginArray("cues")
                for q in c.cues {
                    w.beginObject()
                    w.number("distance_m", q.alongM, decimals: 2)
                    w.string("type", q.type.name)
                    w.string("name", q.name)
                    w.string("notes", q.notes)
                    w.endObject()
                }
                w.endArray()
                w.beginArray("climbs")
                for k in c.climbs {
                    w.beginObject()
                    for f in k.figures { w.number(f.key, f.value, decimals: f.decimals) }
                    w.int("category", k.category.map(Int64.init))
                    w.endObject()
                }
                w.endArray()
                w.endObject()
                print(w.text)
                return
            }
            print("\"\(c.name)\": \(CoursesText.km(c.lengthM)) km, \(c.pointCount) points"
                  + (c.hasAltitude ? ", +\(Int(c.totalAscentM.rounded())) m / -\(Int(c.totalDescentM.rounded())) m" : ", no altitude"))
            print("cues (\(c.cues.count)):")
            for q in c.cues {
                print("  \(CoursesText.km(q.alongM)) km  \(q.type.name)" + (q.name.isEmpty ? "" : "  \(q.name)") + (q.notes.isEmpty ? "" : "  (\(q.notes))"))
            }
            print("climbs (\(c.climbs.count)):")
            for (i, k) in c.climbs.enumerated() {
                print("  \(i + 1): at \(CoursesText.km(k.startAlongM)) km, \(CoursesText.km(k.lengthM)) km at \(CoursesText.tenths(k.gradePercent)) %, "
                      + "+\(Int(k.gainM.rounded())) m, score \(Int(k.score.rounded()))" + (k.category.map { $0 == 0 ? ", HC" : ", cat \($0)" } ?? ""))
            }
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove a course from the card, with the GPX, TCX or FIT file it was imported from in <data dir>/courses/ (else it would be imported again).")
        @OptionGroup var data: DataDir
        @Argument(help: "The course's key (as `courses list` shows).") var key: String

        func run() throws {
            let sources: [String]
            do { sources = try data.store.remove(key: key) } catch { throw CommandFailure("\(error)") }
            print("removed \(key)" + (sources.isEmpty ? "" : " and " + sources.joined(separator: ", ")))
        }
    }
}

enum CoursesText {
    static func km(_ m: Double) -> String { tenths(m / 1000) }

    static func tenths(_ v: Double) -> String {
        let t = Int((v * 10).rounded())
        return "\(t < 0 ? "-" : "")\(abs(t) / 10).\(abs(t) % 10)"
    }
}
