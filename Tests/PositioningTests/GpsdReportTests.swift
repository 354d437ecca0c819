import RideModel
import TestSupport
import Testing
@testable import Positioning

/// The gpsd JSON report parser: the fields the app reads, gpsd's older field names, every kind
/// of garbage, numbers exact against Swift's own parser, and a seeded fuzz run.
@Suite struct GpsdReportTests {
    static let tpv = #"{"class":"TPV","device":"/dev/ttyAMA0","mode":3,"time":"2024-06-09T14:34:45.280Z","ept":0.005,"lat":46.498293369,"lon":7.567411672,"altHAE":1391.3096,"altMSL":1345.72,"alt":1345.72,"epx":25.475,"epy":25.404,"epv":80.249,"track":10.3788,"magvar":2.3,"speed":0.091,"climb":-0.085,"eps":50.95,"eph":45.6}"#
    static let sky = #"{"class":"SKY","device":"/dev/ttyAMA0","xdop":1.70,"hdop":2.40,"nSat":3,"uSat":2,"satellites":[{"PRN":23,"el":6.5,"az":84.0,"ss":0.0,"used":false},{"PRN":8,"el":66.0,"az":189.0,"ss":44.2,"used":true},{"PRN":10,"el":51.0,"az":304.5,"ss":29.2,"used":true}]}"#

    @Test func tpvFields() throws {
        let r = try GpsdReport.parse(Self.tpv)
        #expect(r.reportClass == .tpv)
        #expect(r.mode == 3)
        #expect(r.timeUnixMs == UTCDateTime.unixMs(year: 2024, month: 6, day: 9, hour: 14, minute: 34, second: 45) + 280)
        #expect(r.latitudeDeg == 46.498293369)
        #expect(r.longitudeDeg == 7.567411672)
        #expect(r.altitudeMSLM == 1345.72)
        #expect(r.speedMps == 0.091)
        #expect(r.trackDeg == 10.3788)
        #expect(r.horizontalErrorM == 45.6)
        #expect(r.verticalErrorM == 80.249)
        #expect(r.satellitesUsed == nil)
    }

    @Test func olderGpsdFieldNames() throws {
        // gpsd before 3.19/3.20: `alt` (MSL) instead of altMSL, epx/epy instead of eph, time
        // as Unix seconds in protocol 3.0–3.9.
        let r = try GpsdReport.parse(#"{"class":"TPV","tag":"RMC","mode":2,"time":1118327685.28,"lat":-33.5,"lon":-70.25,"alt":512.5,"epx":3.0,"epy":4.0}"#)
        #expect(r.altitudeMSLM == 512.5)
        #expect(r.horizontalErrorM == 5.0)
        #expect(r.timeUnixMs == 1_118_327_685_280)
        #expect(r.mode == 2)
        // altMSL wins over alt whatever the order.
        let both = try GpsdReport.parse(#"{"altMSL":10.5,"class":"TPV","alt":99,"mode":3}"#)
        #expect(both.altitudeMSLM == 10.5)
    }

    @Test func skySatellites() throws {
        let r = try GpsdReport.parse(Self.sky)
        #expect(r.reportClass == .sky)
        #expect(r.satellitesUsed == 2)
        #expect(r.satellitesVisible == 3)
        // Without uSat/nSat (gpsd before 3.20) the list is counted.
        let old = try GpsdReport.parse(#"{"class":"SKY","satellites":[{"PRN":1,"used":true},{"PRN":2,"used":false},{"PRN":3,"used":true},{"PRN":4,"used":true}]}"#)
        #expect(old.satellitesUsed == 3)
        #expect(old.satellitesVisible == 4)
        let none = try GpsdReport.parse(#"{"class":"SKY","satellites":[]}"#)
        #expect(none.satellitesUsed == 0)
    }

    @Test func otherClasses() throws {
        #expect(try GpsdReport.parse(#"{"class":"VERSION","release":"3.22","rev":"3.22","proto_major":3,"proto_minor":14}"#).protocolMajor == 3)
        #expect(try GpsdReport.parse(#"{"class":"DEVICES","devices":[{"class":"DEVICE","path":"/dev/ttyAMA0","activated":"2024-06-09T14:34:45.280Z","native":0,"bps":9600}]}"#).reportClass == .devices)
        #expect(try GpsdReport.parse(#"{"class":"WATCH","enable":true,"json":true,"nmea":false}"#).reportClass == .watch)
        #expect(try GpsdReport.parse(#"{"class":"ERROR","message":"Unrecognized request"}"#).reportClass == .error)
        #expect(try GpsdReport.parse(#"{"class":"GST","time":"2024-06-09T14:34:45.280Z","rms":1.2}"#).reportClass == .other)
        #expect(try GpsdReport.parse(#"{"class":"TPVX","mode":3}"#).reportClass == .other)
        #expect(try GpsdReport.parse("  {\"class\":\"PPS\"}\r\n").reportClass == .other)
        // Other classes use the same names for other things: AIS gives lat/lon in 1/600000'.
        let ais = try GpsdReport.parse(#"{"class":"AIS","type":1,"speed":1,"lon":6735818,"lat":38915277,"time":"n/a","satellites":3}"#)
        #expect(ais.reportClass == .other && ais.latitudeDeg == nil && ais.speedMps == nil)
        // ...and the class may come last.
        #expect(try GpsdReport.parse(#"{"lat":45.5,"lon":7.25,"mode":2,"class":"TPV"}"#).latitudeDeg == 45.5)
    }

    static func error(_ text: String) -> GpsdReportError? {
        do { _ = try GpsdReport.parse(text); return nil } catch { return error }
    }

    @Test func garbageIsATypedError() {
        #expect(Self.error("") == .empty)
        #expect(Self.error("   \r\n") == .empty)
        #expect(Self.error("$GPRMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W*6A") == .notAnObject)
        #expect(Self.error("[1,2]") == .notAnObject)
        #expect(Self.error(#"{"class":"TPV","mode":3}}"#) == .trailingBytes)
        #expect(Self.error(#"{"class":"TPV","mode":3} x"#) == .trailingBytes)
        #expect(Self.error(#"{"mode":3}"#) == .noClass)
        #expect(Self.error(#"{"class":"TPV","mode":NaN}"#) == .syntax(offset: 22))
        #expect(Self.error(#"{"class":"TPV",,"mode":3}"#) == .syntax(offset: 15))
        #expect(Self.error(#"{"class":"TPV","mode" 3}"#) == .syntax(offset: 22))
        #expect(Self.error("{\"class\":\"TP\u{1}V\"}") == .syntax(offset: 12))
        let deep = "{\"class\":\"X\",\"a\":" + String(repeating: "[", count: 20) + String(repeating: "]", count: 20) + "}"
        #expect(Self.error(deep) == .tooDeep)
    }

    @Test func absurdValuesAreRefused() {
        let cases: [(String, GpsdField)] = [
            (#"{"class":"TPV","mode":3,"lat":91.0}"#, .lat),
            (#"{"class":"TPV","mode":3,"lat":-90.000001}"#, .lat),
            (#"{"class":"TPV","mode":3,"lon":180.5}"#, .lon),
            (#"{"class":"TPV","mode":3,"lat":"46.5"}"#, .lat),
            (#"{"class":"TPV","mode":3,"lat":1e400}"#, .lat),
            (#"{"class":"TPV","mode":4}"#, .mode),
            (#"{"class":"TPV","mode":2.5}"#, .mode),
            (#"{"class":"TPV","mode":-1}"#, .mode),
            (#"{"class":"TPV","mode":true}"#, .mode),
            (#"{"class":"TPV","speed":-0.5}"#, .speed),
            (#"{"class":"TPV","speed":9000}"#, .speed),
            (#"{"class":"TPV","altMSL":123456}"#, .altMSL),
            (#"{"class":"TPV","alt":-5000}"#, .altMSL),
            (#"{"class":"TPV","track":361}"#, .track),
            (#"{"class":"TPV","eph":-1}"#, .eph),
            (#"{"class":"TPV","epv":-0.1}"#, .epv),
            (#"{"class":"TPV","time":"1970-01-01T00:00:00.000Z"}"#, .time),
            (#"{"class":"TPV","time":"2024-13-01T00:00:00.000Z"}"#, .time),
            (#"{"class":"TPV","time":"2023-02-29T00:00:00.000Z"}"#, .time),
            (#"{"class":"TPV","time":"2024-06-09T24:00:00.000Z"}"#, .time),
            (#"{"class":"TPV","time":"2024-06-09T14:34:45.280"}"#, .time),
            (#"{"class":"TPV","time":"2024-06-09 14:34:45Z"}"#, .time),
            (#"{"class":"TPV","time":"2024-06-09T14:34:45.Z"}"#, .time),
            (#"{"class":"TPV","time":true}"#, .time),
            (#"{"class":"SKY","uSat":12,"nSat":8}"#, .satellitesUsed),
            (#"{"class":"SKY","uSat":1000}"#, .satellitesUsed),
            (#"{"class":"SKY","satellites":{"PRN":1}}"#, .satellitesUsed),
            (#"{"class":7}"#, .reportClass),
        ]
        for (line, field) in cases {
            #expect(Self.error(line) == .absurd(field), "\(line)")
        }
        // A leap day and a fraction of any length are fine.
        #expect(Self.error(#"{"class":"TPV","time":"2024-02-29T23:59:59.999999Z"}"#) == nil)
        #expect(Self.error(#"{"class":"TPV","time":"2024-02-29T23:59:59Z"}"#) == nil)
    }

    /// Every proper prefix of a valid report is a truncation (what a gpsd killed mid-line or a
    /// short read leaves), never a crash and never a report.
    @Test func everyPrefixIsTruncated() {
        for line in [Self.tpv, Self.sky, #"{"class":"SKY","satellites":[{"used":true},{"used":false}]}"#] {
            let bytes = Array(line.utf8)
            for n in 1..<bytes.count {
                let e = bytes[0..<n].withUnsafeBytes { p -> GpsdReportError? in
                    do throws(GpsdReportError) { _ = try GpsdReport.parse(p); return nil } catch { return error }
                }
                #expect(e == .truncated, "prefix of \(n) bytes: \(String(describing: e)) — \(String(decoding: bytes[0..<n], as: UTF8.self))")
            }
        }
    }

    static func number(_ text: String) throws -> Double {
        let bytes = Array(text.utf8)
        return try bytes.withUnsafeBytes { p in
            var c = JSONCursor(p)
            let v = try c.number()
            #expect(c.atEnd, "\(text) not consumed whole")
            return v
        }
    }

    /// Numbers parse to exactly what Swift's own (correctly rounded) parser gives for the
    /// decimal forms gpsd prints, and within one part in 10¹⁵ for anything else.
    @Test func numbersMatchSwiftsParser() throws {
        var rng = SeededRandom(seed: 0x6A50)
        for i in 0..<20_000 {
            let intDigits = rng.int(0...6)
            let fracDigits = rng.int(0...(i % 3 == 0 ? 22 : 9))
            var text = rng.chance(0.3) ? "-" : ""
            text += intDigits == 0 ? "0" : String(rng.int(1...9)) + String((1..<intDigits).map { _ in Character(String(rng.int(0...9))) })
            if fracDigits > 0 { text += "." + String((0..<fracDigits).map { _ in Character(String(rng.int(0...9))) }) }
            if i % 5 == 0 { text += "e" + String(rng.int(-30...30)) }
            let ours = try Self.number(text)
            let swift = try #require(Double(text))
            let digits = intDigits + fracDigits
            if digits <= 15 && i % 5 != 0 {
                #expect(ours == swift, "\(text): \(ours) vs \(swift)")
            } else {
                #expect(abs(ours - swift) <= abs(swift) * 1e-15, "\(text): \(ours) vs \(swift)")
            }
        }
    }

    /// Seeded mutations of real-looking reports: never a crash; whatever parses is in range.
    @Test func fuzzedReportsNeverCrashAndStayInRange() {
        var rng = SeededRandom(seed: UInt64(0xF022))
        let seeds = [Self.tpv, Self.sky, #"{"class":"VERSION","proto_major":3}"#, #"{"class":"TPV","mode":1,"time":"2024-06-09T14:34:45Z"}"#]
            .map { Array($0.utf8) }
        let alphabet = Array(#"{}[]":,.-+eE0123456789 truefalsnl\"#.utf8)
        var parsed = 0
        for iteration in 0..<50_000 {
            var b = seeds[rng.int(0...seeds.count - 1)]
            for _ in 0..<rng.int(1...4) {
                switch rng.int(0...4) {
                case 0: if !b.isEmpty { b[rng.int(0...b.count - 1)] = alphabet[rng.int(0...alphabet.count - 1)] }
                case 1: if !b.isEmpty { b.remove(at: rng.int(0...b.count - 1)) }
                case 2: b.insert(alphabet[rng.int(0...alphabet.count - 1)], at: rng.int(0...b.count))
                case 3: b = Array(b.prefix(rng.int(0...b.count)))
                default: if !b.isEmpty { b[rng.int(0...b.count - 1)] = UInt8(rng.int(0...255)) }
                }
            }
            let result: GpsdReport? = b.withUnsafeBytes { p in try? GpsdReport.parse(p) }
            guard let r = result else { continue }
            parsed += 1
            if let v = r.latitudeDeg { #expect((-90...90).contains(v), "iteration \(iteration)") }
            if let v = r.longitudeDeg { #expect((-180...180).contains(v), "iteration \(iteration)") }
            if let v = r.speedMps { #expect(v >= 0 && v.isFinite, "iteration \(iteration)") }
            if let v = r.altitudeMSLM { #expect(GpsdReport.altitudeRangeM.contains(v), "iteration \(iteration)") }
            if let v = r.horizontalErrorM { #expect(v >= 0 && v.isFinite, "iteration \(iteration)") }
            if let t = r.timeUnixMs { #expect(t >= GpsdReport.timeMinUnixMs && t <= GpsdReport.timeMaxUnixMs, "iteration \(iteration)") }
            #expect((0...3).contains(r.mode), "iteration \(iteration)")
        }
        #expect(parsed > 1_000, "the mutations should leave many reports valid (got \(parsed))")
    }
}
