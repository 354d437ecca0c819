import RideModel

/// The report classes of gpsd's JSON protocol the app tells apart (gpsd_json(5)). Everything else
/// (GST, ATT, PPS, TOFF, POLL, ...) is `other`: counted and ignored.
public enum GpsdReportClass: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case tpv = 0, sky, version, devices, device, watch, error, other

    public var description: String {
        switch self {
        case .tpv: "TPV"
        case .sky: "SKY"
        case .version: "VERSION"
        case .devices: "DEVICES"
        case .device: "DEVICE"
        case .watch: "WATCH"
        case .error: "ERROR"
        case .other: "other"
        }
    }
}

/// The fields of a report the app reads (for error messages and counters).
public enum GpsdField: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case reportClass = 0, mode, time, lat, lon, altMSL, speed, track, eph, epv, satellitesUsed, satellitesVisible

    public var description: String {
        switch self {
        case .reportClass: "class"
        case .mode: "mode"
        case .time: "time"
        case .lat: "lat"
        case .lon: "lon"
        case .altMSL: "altMSL"
        case .speed: "speed"
        case .track: "track"
        case .eph: "eph"
        case .epv: "epv"
        case .satellitesUsed: "uSat"
        case .satellitesVisible: "nSat"
        }
    }
}

/// Why a line from gpsd is not a report the app can use. Every one is counted and logged by the
/// receiver; the line is dropped and the next one is read.
public enum GpsdReportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// An empty line.
    case empty
    /// The line does not start with `{`.
    case notAnObject
    /// The line ends inside the object (a truncated report).
    case truncated
    /// An unexpected byte at this offset.
    case syntax(offset: Int)
    /// Nested deeper than `JSONCursor.depthMax`.
    case tooDeep
    /// Bytes after the object's closing brace.
    case trailingBytes
    /// No `class` member.
    case noClass
    /// A field of the wrong type, or a value no receiver can report (latitude 100°, negative
    /// speed, a time before 1980).
    case absurd(GpsdField)

    public var description: String {
        switch self {
        case .empty: "empty line"
        case .notAnObject: "not a JSON object"
        case .truncated: "truncated JSON"
        case .syntax(let at): "JSON syntax error at byte \(at)"
        case .tooDeep: "JSON nested deeper than \(JSONCursor.depthMax)"
        case .trailingBytes: "bytes after the JSON object"
        case .noClass: "report without a class"
        case .absurd(let f): "absurd or mistyped \(f)"
        }
    }

    /// A small stable code per case (counters are indexed by it).
    public var code: Int {
        switch self {
        case .empty: 0
        case .notAnObject: 1
        case .truncated: 2
        case .syntax: 3
        case .tooDeep: 4
        case .trailingBytes: 5
        case .noClass: 6
        case .absurd: 7
        }
    }

    public static let codeCount = 8
}

/// One gpsd report, as far as the app reads it: TPV (time-position-velocity) and SKY (satellites)
/// fields; the class of anything else. A plain value: parsing allocates nothing.
public struct GpsdReport: Sendable, Hashable {
    /// Valid ranges (a value outside is `absurd`): what any GNSS receiver can report on or near
    /// the ground. Large error estimates are not absurd (the fix rules reject them).
    public static let altitudeRangeM: ClosedRange<Double> = -1_000...20_000
    public static let speedMaxMps = 600.0
    public static let errorEstimateMaxM = 1.0e7
    public static let satellitesMax = 255
    /// The earliest time a GNSS receiver reports (GPS epoch 1980-01-06), Unix ms.
    public static let timeMinUnixMs: Int64 = 315_964_800_000
    /// The latest accepted time (2200-01-01), Unix ms.
    public static let timeMaxUnixMs: Int64 = 7_258_118_400_000

    public var reportClass: GpsdReportClass = .other
    /// TPV: 0 unknown, 1 no fix, 2 2D, 3 3D.
    public var mode: Int = 0
    public var timeUnixMs: Int64?
    public var latitudeDeg: Double?
    public var longitudeDeg: Double?
    /// Altitude above mean sea level (`altMSL`, or `alt` from gpsd before 3.20).
    public var altitudeMSLM: Double?
    public var speedMps: Double?
    public var trackDeg: Double?
    /// Horizontal error estimate (`eph`, or √(epx² + epy²) from gpsd before 3.19), m.
    public var horizontalErrorM: Double?
    /// Vertical error estimate (`epv`), m.
    public var verticalErrorM: Double?
    /// SKY: satellites used in the fix (`uSat`, or the satellites marked `used`).
    public var satellitesUsed: Int?
    /// SKY: satellites seen (`nSat`, or the length of `satellites`).
    public var satellitesVisible: Int?
    /// VERSION: the protocol's major version.
    public var protocolMajor: Int?

    public init() {}

    /// Parses one line (without or with its line end) from gpsd's socket.
    public static func parse(_ line: UnsafeRawBufferPointer) throws(GpsdReportError) -> GpsdReport {
        var c = JSONCursor(line)
        c.skipSpace()
        guard !c.atEnd else { throw .empty }
        guard c.peek() == UInt8(ascii: "{") else { throw .notAnObject }
        var r = GpsdReport()
        var fields = FieldBag()
        try c.expect(UInt8(ascii: "{"))
        if !c.consume(UInt8(ascii: "}")) {
            repeat {
                let key = try c.string()
                try c.expect(UInt8(ascii: ":"))
                try fields.read(key: key, &c, into: &r)
            } while c.consume(UInt8(ascii: ","))
            try c.expect(UInt8(ascii: "}"))
        }
        c.skipSpace()
        guard c.atEnd else { throw .trailingBytes }
        guard fields.sawClass else { throw .noClass }
        try fields.finish(&r)
        return r
    }

    /// Convenience for tests and tools: parses a Swift string.
    public static func parse(_ text: String) throws(GpsdReportError) -> GpsdReport {
        var copy = text
        let result: Result<GpsdReport, GpsdReportError> = copy.withUTF8 { p in
            do throws(GpsdReportError) { return .success(try parse(UnsafeRawBufferPointer(p))) } catch { return .failure(error) }
        }
        return try result.get()
    }
}

/// What parsing collects before the report is checked (fields whose meaning depends on others).
private struct FieldBag {
    var sawClass = false
    var alt: Double?
    var epx: Double?
    var epy: Double?
    var satellitesArrayUsed: Int?
    var satellitesArrayCount: Int?

    mutating func read(key: Range<Int>, _ c: inout JSONCursor, into r: inout GpsdReport) throws(GpsdReportError) {
        if c.equals(key, "class") {
            let v = try stringValue(&c, .reportClass)
            r.reportClass = Self.reportClass(c, v)
            sawClass = true
        } else if c.equals(key, "mode") {
            let m = try numberValue(&c, .mode)
            guard m == m.rounded(), m >= 0, m <= 3 else { throw .absurd(.mode) }
            r.mode = Int(m)
        } else if c.equals(key, "time") {
            r.timeUnixMs = try timeValue(&c)
        } else if c.equals(key, "lat") {
            r.latitudeDeg = try numberValue(&c, .lat, in: -90...90)
        } else if c.equals(key, "lon") {
            r.longitudeDeg = try numberValue(&c, .lon, in: -180...180)
        } else if c.equals(key, "altMSL") {
            r.altitudeMSLM = try numberValue(&c, .altMSL, in: GpsdReport.altitudeRangeM)
        } else if c.equals(key, "alt") {
            alt = try numberValue(&c, .altMSL, in: GpsdReport.altitudeRangeM)
        } else if c.equals(key, "speed") {
            r.speedMps = try numberValue(&c, .speed, in: 0...GpsdReport.speedMaxMps)
        } else if c.equals(key, "track") {
            r.trackDeg = try numberValue(&c, .track, in: 0...360)
        } else if c.equals(key, "eph") {
            r.horizontalErrorM = try numberValue(&c, .eph, in: 0...GpsdReport.errorEstimateMaxM)
        } else if c.equals(key, "epx") {
            epx = try numberValue(&c, .eph, in: 0...GpsdReport.errorEstimateMaxM)
        } else if c.equals(key, "epy") {
            epy = try numberValue(&c, .eph, in: 0...GpsdReport.errorEstimateMaxM)
        } else if c.equals(key, "epv") {
            r.verticalErrorM = try numberValue(&c, .epv, in: 0...GpsdReport.errorEstimateMaxM)
        } else if c.equals(key, "uSat") {
            r.satellitesUsed = try countValue(&c, .satellitesUsed)
        } else if c.equals(key, "nSat") {
            r.satellitesVisible = try countValue(&c, .satellitesVisible)
        } else if c.equals(key, "satellites") {
            try satellites(&c)
        } else if c.equals(key, "proto_major") {
            r.protocolMajor = try countValue(&c, .reportClass)
        } else {
            try c.skipValue(depth: 1)
        }
    }

    static func reportClass(_ c: JSONCursor, _ v: Range<Int>) -> GpsdReportClass {
        if c.equals(v, "TPV") { return .tpv }
        if c.equals(v, "SKY") { return .sky }
        if c.equals(v, "VERSION") { return .version }
        if c.equals(v, "DEVICES") { return .devices }
        if c.equals(v, "DEVICE") { return .device }
        if c.equals(v, "WATCH") { return .watch }
        if c.equals(v, "ERROR") { return .error }
        return .other
    }

    func stringValue(_ c: inout JSONCursor, _ f: GpsdField) throws(GpsdReportError) -> Range<Int> {
        guard try c.nextKind() == .string else { throw .absurd(f) }
        return try c.string()
    }

    func numberValue(_ c: inout JSONCursor, _ f: GpsdField, in range: ClosedRange<Double>? = nil) throws(GpsdReportError) -> Double {
        guard try c.nextKind() == .number else { throw .absurd(f) }
        let v = try c.number()
        guard v.isFinite else { throw .absurd(f) }
        if let range, !range.contains(v) { throw .absurd(f) }
        return v
    }

    func countValue(_ c: inout JSONCursor, _ f: GpsdField) throws(GpsdReportError) -> Int {
        let v = try numberValue(&c, f, in: 0...Double(GpsdReport.satellitesMax))
        guard v == v.rounded() else { throw .absurd(f) }
        return Int(v)
    }

    /// "2005-06-09T14:34:44.280Z" (gpsd ≥ 3.10), or Unix seconds as a number (older gpsd).
    func timeValue(_ c: inout JSONCursor) throws(GpsdReportError) -> Int64 {
        let kind = try c.nextKind()
        let ms: Int64
        if kind == .number {
            let s = try c.number()
            guard s.isFinite, s >= 0, s < 1e11 else { throw .absurd(.time) }
            ms = Int64((s * 1000).rounded())
        } else if kind == .string {
            let range = try c.string()
            guard let v = ISO8601.unixMs(c.bytes, range) else { throw .absurd(.time) }
            ms = v
        } else {
            throw .absurd(.time)
        }
        guard ms >= GpsdReport.timeMinUnixMs, ms <= GpsdReport.timeMaxUnixMs else { throw .absurd(.time) }
        return ms
    }

    /// SKY's satellite list: counts the entries and those with `"used":true`.
    mutating func satellites(_ c: inout JSONCursor) throws(GpsdReportError) {
        guard try c.nextKind() == .array else { throw .absurd(.satellitesUsed) }
        try c.expect(UInt8(ascii: "["))
        var count = 0, used = 0
        if !c.consume(UInt8(ascii: "]")) {
            repeat {
                guard try c.nextKind() == .object else { throw .absurd(.satellitesUsed) }
                try c.expect(UInt8(ascii: "{"))
                if !c.consume(UInt8(ascii: "}")) {
                    repeat {
                        let key = try c.string()
                        try c.expect(UInt8(ascii: ":"))
                        if c.equals(key, "used"), try c.nextKind() == .literal {
                            if try c.literal() == true { used += 1 }
                        } else {
                            try c.skipValue(depth: 3)
                        }
                    } while c.consume(UInt8(ascii: ","))
                    try c.expect(UInt8(ascii: "}"))
                }
                count += 1
            } while c.consume(UInt8(ascii: ","))
            try c.expect(UInt8(ascii: "]"))
        }
        satellitesArrayCount = count
        satellitesArrayUsed = used
    }

    func finish(_ r: inout GpsdReport) throws(GpsdReportError) {
        if r.altitudeMSLM == nil { r.altitudeMSLM = alt }
        if r.horizontalErrorM == nil, let x = epx, let y = epy { r.horizontalErrorM = (x * x + y * y).squareRoot() }
        if r.reportClass == .sky {
            if r.satellitesUsed == nil { r.satellitesUsed = satellitesArrayUsed }
            if r.satellitesVisible == nil { r.satellitesVisible = satellitesArrayCount }
        }
        if let u = r.satellitesUsed, let n = r.satellitesVisible, u > n { throw .absurd(.satellitesUsed) }
    }
}

/// ISO 8601 UTC times as gpsd writes them: `YYYY-MM-DDTHH:MM:SS[.fraction]Z`.
enum ISO8601 {
    /// Unix milliseconds (the fraction truncated to milliseconds), nil when malformed.
    static func unixMs(_ b: UnsafeRawBufferPointer, _ r: Range<Int>) -> Int64? {
        guard r.count >= 20, b[r.upperBound - 1] == UInt8(ascii: "Z") else { return nil }
        let s = r.lowerBound
        func digits(_ at: Int, _ n: Int) -> Int? {
            var v = 0
            for k in 0..<n {
                let d = b[s + at + k]
                guard d >= 0x30, d <= 0x39 else { return nil }
                v = v * 10 + Int(d - 0x30)
            }
            return v
        }
        func sep(_ at: Int, _ ch: UInt8) -> Bool { b[s + at] == ch }
        guard sep(4, UInt8(ascii: "-")), sep(7, UInt8(ascii: "-")), sep(10, UInt8(ascii: "T")),
              sep(13, UInt8(ascii: ":")), sep(16, UInt8(ascii: ":")),
              let year = digits(0, 4), let month = digits(5, 2), let day = digits(8, 2),
              let hour = digits(11, 2), let minute = digits(14, 2), let second = digits(17, 2),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second <= 60
        else { return nil }
        var ms = 0
        let end = r.upperBound - 1 // the Z
        var at = s + 19
        if at < end {
            guard b[at] == UInt8(ascii: ".") else { return nil }
            at += 1
            guard at < end else { return nil }
            var scale = 100
            while at < end {
                let d = b[at]
                guard d >= 0x30, d <= 0x39 else { return nil }
                ms += Int(d - 0x30) * scale
                scale /= 10
                at += 1
            }
        } else if at != end {
            return nil
        }
        guard day <= daysIn(month, year) else { return nil }
        return UTCDateTime.unixMs(year: year, month: month, day: day, hour: hour, minute: minute, second: second) + Int64(ms)
    }

    static func daysIn(_ month: Int, _ year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}
