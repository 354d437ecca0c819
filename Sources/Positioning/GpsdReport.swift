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
        try fields.finish(&r, c)
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

/// What parsing collects before the report is checked: values are kept as JSON gave them and
/// interpreted (ranges, types) only once the class is known, since other classes use the same
/// names for other things (AIS reports `lat` in 1/600000 minutes, for one).
private struct FieldBag {
    /// A number, a string (its byte range) or something else, as found.
    enum Value {
        case number(Double)
        case string(Range<Int>)
        case other
    }

    var sawClass = false
    var reportClass: GpsdReportClass = .other
    /// One slot per key, as stored properties (an array here would be allocated per report).
    var slots: (Value?, Value?, Value?, Value?, Value?, Value?, Value?, Value?, Value?, Value?, Value?, Value?, Value?, Value?, Value?)
        = (nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil)
    var satellitesUsed: Int?
    var satellitesCount: Int?
    var satellitesMistyped = false

    /// The keys read (by their position here).
    enum Key: Int, CaseIterable { case mode, time, lat, lon, altMSL, alt, speed, track, eph, epx, epy, epv, uSat, nSat, protoMajor }

    subscript(k: Key) -> Value? {
        get {
            switch k {
            case .mode: slots.0
            case .time: slots.1
            case .lat: slots.2
            case .lon: slots.3
            case .altMSL: slots.4
            case .alt: slots.5
            case .speed: slots.6
            case .track: slots.7
            case .eph: slots.8
            case .epx: slots.9
            case .epy: slots.10
            case .epv: slots.11
            case .uSat: slots.12
            case .nSat: slots.13
            case .protoMajor: slots.14
            }
        }
        set {
            switch k {
            case .mode: slots.0 = newValue
            case .time: slots.1 = newValue
            case .lat: slots.2 = newValue
            case .lon: slots.3 = newValue
            case .altMSL: slots.4 = newValue
            case .alt: slots.5 = newValue
            case .speed: slots.6 = newValue
            case .track: slots.7 = newValue
            case .eph: slots.8 = newValue
            case .epx: slots.9 = newValue
            case .epy: slots.10 = newValue
            case .epv: slots.11 = newValue
            case .uSat: slots.12 = newValue
            case .nSat: slots.13 = newValue
            case .protoMajor: slots.14 = newValue
            }
        }
    }

    static func key(_ c: JSONCursor, _ k: Range<Int>) -> Key? {
        switch k.count {
        case 3:
            if c.equals(k, "lat") { return .lat }
            if c.equals(k, "lon") { return .lon }
            if c.equals(k, "alt") { return .alt }
            if c.equals(k, "eph") { return .eph }
            if c.equals(k, "epx") { return .epx }
            if c.equals(k, "epy") { return .epy }
            if c.equals(k, "epv") { return .epv }
        case 4:
            if c.equals(k, "mode") { return .mode }
            if c.equals(k, "time") { return .time }
            if c.equals(k, "uSat") { return .uSat }
            if c.equals(k, "nSat") { return .nSat }
        case 5:
            if c.equals(k, "speed") { return .speed }
            if c.equals(k, "track") { return .track }
        case 6:
            if c.equals(k, "altMSL") { return .altMSL }
        case 11:
            if c.equals(k, "proto_major") { return .protoMajor }
        default: break
        }
        return nil
    }

    mutating func read(key: Range<Int>, _ c: inout JSONCursor, into r: inout GpsdReport) throws(GpsdReportError) {
        if c.equals(key, "class") {
            guard try c.nextKind() == .string else { throw .absurd(.reportClass) }
            reportClass = Self.reportClass(c, try c.string())
            sawClass = true
        } else if c.equals(key, "satellites") {
            try satellites(&c)
        } else if let k = Self.key(c, key) {
            switch try c.nextKind() {
            case .number: self[k] = .number(try c.number())
            case .string: self[k] = .string(try c.string())
            default: try c.skipValue(depth: 1); self[k] = .other
            }
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

    /// SKY's satellite list: counts the entries and those with `"used":true`. Anything else
    /// under that name is skipped and marked (an error only for a SKY report).
    mutating func satellites(_ c: inout JSONCursor) throws(GpsdReportError) {
        guard try c.nextKind() == .array else { try c.skipValue(depth: 1); satellitesMistyped = true; return }
        try c.expect(UInt8(ascii: "["))
        var count = 0, used = 0
        if !c.consume(UInt8(ascii: "]")) {
            repeat {
                guard try c.nextKind() == .object else { try c.skipValue(depth: 2); satellitesMistyped = true; continue }
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
        satellitesCount = count
        satellitesUsed = used
    }

    func number(_ k: Key, _ f: GpsdField, in range: ClosedRange<Double>? = nil) throws(GpsdReportError) -> Double? {
        guard let v = self[k] else { return nil }
        guard case .number(let x) = v, x.isFinite else { throw .absurd(f) }
        if let range, !range.contains(x) { throw .absurd(f) }
        return x
    }

    func count(_ k: Key, _ f: GpsdField) throws(GpsdReportError) -> Int? {
        guard let v = try number(k, f, in: 0...Double(GpsdReport.satellitesMax)) else { return nil }
        guard v == v.rounded() else { throw .absurd(f) }
        return Int(v)
    }

    /// "2005-06-09T14:34:44.280Z" (gpsd ≥ 3.10), or Unix seconds as a number (older gpsd).
    func time(_ c: JSONCursor) throws(GpsdReportError) -> Int64? {
        guard let v = self[.time] else { return nil }
        let ms: Int64
        switch v {
        case .number(let s):
            guard s.isFinite, s >= 0, s < 1e11 else { throw .absurd(.time) }
            ms = Int64((s * 1000).rounded())
        case .string(let range):
            guard let x = ISO8601.unixMs(c.bytes, range) else { throw .absurd(.time) }
            ms = x
        case .other:
            throw .absurd(.time)
        }
        guard ms >= GpsdReport.timeMinUnixMs, ms <= GpsdReport.timeMaxUnixMs else { throw .absurd(.time) }
        return ms
    }

    /// Fills the report with what its class means; fields of other classes are not read.
    func finish(_ r: inout GpsdReport, _ c: JSONCursor) throws(GpsdReportError) {
        r.reportClass = reportClass
        switch reportClass {
        case .tpv:
            if let m = try number(.mode, .mode) {
                guard m == m.rounded(), m >= 0, m <= 3 else { throw .absurd(.mode) }
                r.mode = Int(m)
            }
            r.timeUnixMs = try time(c)
            r.latitudeDeg = try number(.lat, .lat, in: -90...90)
            r.longitudeDeg = try number(.lon, .lon, in: -180...180)
            let alt = try number(.alt, .altMSL, in: GpsdReport.altitudeRangeM)
            r.altitudeMSLM = try number(.altMSL, .altMSL, in: GpsdReport.altitudeRangeM) ?? alt
            r.speedMps = try number(.speed, .speed, in: 0...GpsdReport.speedMaxMps)
            r.trackDeg = try number(.track, .track, in: 0...360)
            let epx = try number(.epx, .eph, in: 0...GpsdReport.errorEstimateMaxM)
            let epy = try number(.epy, .eph, in: 0...GpsdReport.errorEstimateMaxM)
            r.horizontalErrorM = try number(.eph, .eph, in: 0...GpsdReport.errorEstimateMaxM)
            if r.horizontalErrorM == nil, let x = epx, let y = epy { r.horizontalErrorM = (x * x + y * y).squareRoot() }
            r.verticalErrorM = try number(.epv, .epv, in: 0...GpsdReport.errorEstimateMaxM)
        case .sky:
            if satellitesMistyped { throw .absurd(.satellitesUsed) }
            r.satellitesUsed = try count(.uSat, .satellitesUsed) ?? satellitesUsed
            r.satellitesVisible = try count(.nSat, .satellitesVisible) ?? satellitesCount
            if let u = r.satellitesUsed, let n = r.satellitesVisible, u > n { throw .absurd(.satellitesUsed) }
        case .version:
            r.protocolMajor = try count(.protoMajor, .reportClass)
        case .devices, .device, .watch, .error, .other:
            break
        }
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
