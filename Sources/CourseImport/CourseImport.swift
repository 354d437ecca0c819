// CourseImport: course files in — GPX 1.0/1.1 (tracks, routes, waypoints near the route as cues),
// TCX courses (Trackpoints, CoursePoints) and FIT course files (records, course_point), read with
// a bounded tokenizer of its own (no DTD, no entity expansion) and RideFiles' FIT reader, then
// prepared once into a `Course` (simplified with Ramer–Douglas–Peucker, cues projected onto the
// route in order or derived from its bends, climbs found) for the compact file. Pure; it
// allocates as it reads (it runs off the ride's run loop). docs/navigation.md.
//
// Must not import: Foundation, Glibc, Training, Sensors, AppCore, Journal, Display, Screens, Configuration, Control, Device, BoardIO, BoardHardware, BoardWiring, DeviceAdapters, Simulation.
import Navigation
import RideFiles

/// The formats read, found from the bytes (a FIT header; the XML root element).
public enum CourseFormat: String, Sendable, Hashable {
    case gpx, tcx, fit
}

/// A course as a file describes it, before preparation: the points in course order (degrees,
/// altitude m or nil), the cues the file names, and the name.
public struct RawCourse: Sendable {
    public struct Point: Sendable, Hashable {
        public var latDeg: Double
        public var lonDeg: Double
        public var altitudeM: Double?
        /// The file's own distance along the course (TCX DistanceMeters, FIT distance), m.
        public var distanceM: Double?

        public init(latDeg: Double, lonDeg: Double, altitudeM: Double? = nil, distanceM: Double? = nil) {
            self.latDeg = latDeg
            self.lonDeg = lonDeg
            self.altitudeM = altitudeM
            self.distanceM = distanceM
        }
    }

    /// A cue as the file has it: a position (GPX waypoint, TCX CoursePoint, FIT course_point), or
    /// for a FIT course_point without one its distance along the course.
    public struct RawCue: Sendable, Hashable {
        public var latDeg: Double?
        public var lonDeg: Double?
        public var distanceM: Double?
        public var type: CueType
        public var name: String
        public var notes: String
        /// In course order (TCX, FIT), or anywhere (GPX waypoints).
        public var ordered: Bool
    }

    public var format: CourseFormat
    public var name: String?
    public var points: [Point] = []
    public var cues: [RawCue] = []
    /// GPX waypoints farther than `CueRules.waypointMaxDistanceM` from the route (not cues).
    public var waypointsAway = 0
    public var warnings: [String] = []

    public init(format: CourseFormat) { self.format = format }
}

/// What went wrong importing a file: the file and the problem, in words that say what to do.
public struct CourseImportError: Error, Sendable, CustomStringConvertible {
    public enum Problem: Sendable {
        case tooLarge(bytes: Int)
        case notACourseFile
        case xml(XMLTokenizer.Failure)
        case wrongRoot(String)
        case fit(String)
        case fitNotACourse(UInt8)
        case noPoints(CourseFormat)
        case pointOutOfRange(index: Int, latDeg: Double, lonDeg: Double)
        case tooManyPoints(Int)
        case tooManyCues(Int)
        case course(CourseError)
    }

    public var file: String
    public var problem: Problem

    public init(file: String, _ problem: Problem) {
        self.file = file
        self.problem = problem
    }

    public var description: String {
        let what: String
        switch problem {
        case .tooLarge(let n): what = "\(n) bytes is larger than a course file can be (\(CourseImport.fileBytesMax) bytes); split the course"
        case .notACourseFile: what = "not a GPX, TCX or FIT course file (neither a FIT header nor an XML document)"
        case .xml(let f): what = "not well-formed XML, \(f)"
        case .wrongRoot(let r): what = "an XML file, but its root element is <\(r)>, not <gpx> or <TrainingCenterDatabase>"
        case .fit(let m): what = "not a readable FIT file: \(m)"
        case .fitNotACourse(let t): what = "a FIT file of type \(FITActivity.fileTypeName(t)), not a course (6) or an activity (4)"
        case .noPoints(let f): what = "no points: a \(f.rawValue.uppercased()) course needs a track, route or course with positions"
        case .pointOutOfRange(let i, let lat, let lon): what = "point \(i + 1) is not a position on Earth (latitude \(lat), longitude \(lon))"
        case .tooManyPoints(let n): what = "\(n) points is more than \(CourseImport.inputPointsMax) (a course this long does not fit in the unit); split it"
        case .tooManyCues(let n): what = "\(n) cues is more than \(Course.cuesMax)"
        case .course(let e): what = e.description
        }
        return "\(file): \(what)"
    }
}

/// What an import did, for the rider (`courses import` prints it).
public struct ImportReport: Sendable {
    public var format: CourseFormat
    public var pointsRead: Int
    public var pointsKept: Int
    public var cuesFromFile: Int
    public var cuesDerived: Int
    public var waypointsAway: Int
    public var warnings: [String]
}

public enum CourseImport {
    /// Files larger than this are refused before reading (a 300 km GPX track at one point a
    /// second with extensions is ~10 MB).
    public static let fileBytesMax = 64 << 20
    /// Points read at most (before simplification).
    public static let inputPointsMax = 2_000_000

    /// Reads a course file (GPX, TCX or FIT, found from its content) and prepares it. `fileName`
    /// names the file in errors and gives the course its name when the file has none.
    public static func course(from bytes: [UInt8], fileName: String,
                              settings: PreparationSettings = PreparationSettings()) throws(CourseImportError) -> (course: Course, report: ImportReport) {
        let raw = try read(bytes, fileName: fileName)
        return try CoursePreparation.prepare(raw, fallbackName: stem(fileName), fileName: fileName, settings: settings)
    }

    /// Reads a course file into its raw points and cues.
    public static func read(_ bytes: [UInt8], fileName: String) throws(CourseImportError) -> RawCourse {
        guard bytes.count <= fileBytesMax else { throw CourseImportError(file: fileName, .tooLarge(bytes: bytes.count)) }
        if bytes.count >= 12, bytes[8] == 0x2E, bytes[9] == 0x46, bytes[10] == 0x49, bytes[11] == 0x54 {
            return try FITCourseReader.read(bytes, fileName: fileName)
        }
        do throws(ReaderProblem) {
            var first = try XMLCursor(bytes)
            var root: String?
            while root == nil, let e = try first.next() {
                if case .start(let name, _) = e { root = name }
            }
            // Read again from the start with the reader for that root.
            var cursor = try XMLCursor(bytes)
            switch root {
            case "gpx": return try GPXReader.read(&cursor)
            case "TrainingCenterDatabase": return try TCXReader.read(&cursor)
            case let other?: throw ReaderProblem(problem: .wrongRoot(other))
            case nil: throw ReaderProblem(problem: .notACourseFile)
            }
        } catch {
            if case .xml = error.problem, !looksLikeXML(bytes) {
                throw CourseImportError(file: fileName, .notACourseFile)
            }
            throw CourseImportError(file: fileName, error.problem)
        }
    }

    /// Whether the file starts like an XML document (after a BOM and white space).
    static func looksLikeXML(_ bytes: [UInt8]) -> Bool {
        var i = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x09 || bytes[i] == 0x0A || bytes[i] == 0x0D { i += 1 }
        return i < bytes.count && bytes[i] == UInt8(ascii: "<")
            || bytes.starts(with: [0xFE, 0xFF]) || bytes.starts(with: [0xFF, 0xFE])
    }

    /// "rides/alps.gpx" → "alps".
    public static func stem(_ path: String) -> String {
        let last = path.split(separator: "/", omittingEmptySubsequences: true).last.map(String.init) ?? path
        guard let dot = last.lastIndex(of: "."), dot != last.startIndex else { return last }
        return String(last[..<dot])
    }

    /// Bytes of a course's key at most (the rest of the file name is cut).
    public static let keyBytesMax = 48

    /// The key a course file is stored under on the card (`<data dir>/courses/KEY.course`): its
    /// name without directory and extension, anything but letters, digits, '-', '_' and '.' made
    /// '-', no leading '.', at most `keyBytesMax` bytes ("My Alps.gpx" → "My-Alps").
    public static func key(forFile fileName: String) -> String {
        var out = ""
        for c in stem(fileName).unicodeScalars {
            let ok = (c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || (c >= "0" && c <= "9") || c == "-" || c == "_" || c == "."
            out.unicodeScalars.append(ok ? c : "-")
            if out.utf8.count >= keyBytesMax { break }
        }
        while out.hasPrefix(".") { out.removeFirst() }
        return out.isEmpty ? "course" : out
    }
}

/// A reader's problem before it knows the file's name.
struct ReaderProblem: Error {
    var problem: CourseImportError.Problem
}

/// The tokenizer for the readers: its failures as a reader's problem.
struct XMLCursor {
    var tokens: XMLTokenizer

    init(_ bytes: [UInt8]) throws(ReaderProblem) {
        do { tokens = try XMLTokenizer(bytes) } catch { throw ReaderProblem(problem: .xml(error)) }
    }

    mutating func next() throws(ReaderProblem) -> XMLTokenizer.Event? {
        do { return try tokens.next() } catch { throw ReaderProblem(problem: .xml(error)) }
    }
}

/// The XML course readers' shared steps.
enum XMLReading {
    /// A decimal number as XML writes it (leading/trailing space allowed); nil otherwise.
    static func number(_ s: String) -> Double? {
        var t = Substring(s)
        while let f = t.first, f == " " || f == "\n" || f == "\t" || f == "\r" { t = t.dropFirst() }
        while let l = t.last, l == " " || l == "\n" || l == "\t" || l == "\r" { t = t.dropLast() }
        guard !t.isEmpty, let v = Double(t), v.isFinite else { return nil }
        return v
    }

    static func trimmed(_ s: String) -> String {
        var t = Substring(s)
        while let f = t.first, f.isWhitespace { t = t.dropFirst() }
        while let l = t.last, l.isWhitespace { t = t.dropLast() }
        return String(t)
    }

    /// Text clipped to at most `bytes` bytes of UTF-8 (at a character boundary).
    static func clipped(_ s: String, bytes: Int) -> String {
        guard s.utf8.count > bytes else { return s }
        var out = ""
        for c in s {
            guard out.utf8.count + String(c).utf8.count <= bytes else { break }
            out.append(c)
        }
        return out
    }

    static func point(_ lat: Double?, _ lon: Double?, index: Int) throws(ReaderProblem) -> (Double, Double) {
        guard let lat, let lon, lat.isFinite, lon.isFinite, abs(lat) <= 90, abs(lon) <= 180 else {
            throw ReaderProblem(problem: .pointOutOfRange(index: index, latDeg: lat ?? .nan, lonDeg: lon ?? .nan))
        }
        return (lat, lon)
    }

    static func checkCount(_ n: Int) throws(ReaderProblem) {
        guard n < CourseImport.inputPointsMax else { throw ReaderProblem(problem: .tooManyPoints(n + 1)) }
    }
}
