import CourseImport
import Navigation
import RideFiles
import TestSupport
import Testing

@Suite struct XMLTokenizerTests {
    static func events(_ s: String) throws(XMLTokenizer.Failure) -> [XMLTokenizer.Event] {
        var t = try XMLTokenizer(Array(s.utf8))
        var out: [XMLTokenizer.Event] = []
        while let e = try t.next() { out.append(e) }
        return out
    }

    @Test func elementsAttributesTextAndReferences() throws {
        let e = try Self.events("""
        <?xml version="1.0" encoding="UTF-8"?>
        <!-- a comment -->
        <gpx:root a="1 &amp; 2" b='&#x41;&#66;'><x/><y>t &lt;&gt; &quot;&apos;<![CDATA[<raw> & ]]></y></gpx:root>
        """)
        #expect(e == [
            .start(name: "root", attributes: [.init(name: "a", value: "1 & 2"), .init(name: "b", value: "AB")]),
            .start(name: "x", attributes: []), .end(name: "x"),
            .start(name: "y", attributes: []), .text("t <> \"'"), .text("<raw> & "), .end(name: "y"),
            .end(name: "root"),
        ])
    }

    /// The billion laughs: the DOCTYPE is skipped unread and the first reference to one of its
    /// entities is an error that says so — nothing is expanded, nothing grows.
    @Test func entityBombsAreInert() throws {
        var bomb = "<?xml version=\"1.0\"?>\n<!DOCTYPE lolz [\n <!ENTITY lol \"lol\">\n"
        bomb += " <!ENTITY lol1 \"&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;\">\n"
        for k in 2...9 { bomb += " <!ENTITY lol\(k) \"" + String(repeating: "&lol\(k - 1);", count: 10) + "\">\n" }
        bomb += "]>\n<gpx><trk><name>&lol9;</name></trk></gpx>\n"
        do throws(XMLTokenizer.Failure) {
            _ = try Self.events(bomb)
            Issue.record("the bomb parsed")
        } catch {
            #expect(error.description.contains("&lol9;") && error.description.contains("not expanded"))
            #expect(error.line == 14)
        }
        // An external entity: never read.
        let xxe = "<!DOCTYPE gpx [<!ENTITY xxe SYSTEM \"file:///etc/passwd\">]><gpx><name>&xxe;</name></gpx>"
        #expect(throws: XMLTokenizer.Failure.self) { _ = try Self.events(xxe) }
        // A DOCTYPE whose entities are never used is harmless.
        #expect(try Self.events("<!DOCTYPE gpx [<!ENTITY a 'b'>]><gpx/>").count == 2)
    }

    @Test func malformedDocumentsFailWithTheirLine() throws {
        let bad: [(String, String)] = [
            ("<a><b></a>", "closes <b>"), ("<a>", "ends inside <a>"), ("<a></a><b/>", "second root"),
            ("text", "not an XML document"), ("<a x=1/>", "no quoted value"), ("<a>&bogus;</a>", "not expanded"),
            ("<a>&#0;</a>", "no character"), ("<a>&#x110000;</a>", "beyond Unicode"), ("<a><!-- x</a>", "unterminated comment"),
            ("<a>\n\n</b>", "line 3"), ("", "no root element"),
        ]
        for (doc, words) in bad {
            do throws(XMLTokenizer.Failure) {
                _ = try Self.events(doc)
                Issue.record("\(doc) parsed")
            } catch {
                #expect(error.description.contains(words), "\(doc): \(error)")
            }
        }
        #expect(throws: XMLTokenizer.Failure.self) { _ = try XMLTokenizer([0xFF, 0xFE, 0x3C, 0x00]) }
        let deep = String(repeating: "<a>", count: 100) + String(repeating: "</a>", count: 100)
        #expect(throws: XMLTokenizer.Failure.self) { _ = try Self.events(deep) }
    }

    /// Random bytes and random mutations of a real document: an error or a parse, never a
    /// crash, and the output never larger than the input.
    @Test func mutationsNeverCrash() throws {
        let gpx = Array(ImportTests.gpxTrack.utf8)
        var rng = SeededRandom(seed: 21)
        for _ in 0..<3_000 {
            var b = gpx
            for _ in 0..<rng.int(1...8) {
                let i = rng.int(0...(b.count - 1))
                switch rng.int(0...2) {
                case 0: b[i] = UInt8(rng.int(0...255))
                case 1: b.remove(at: i)
                default: b.insert(Array("<>&;\"'/![]".utf8)[rng.int(0...9)], at: i)
                }
            }
            guard var t = try? XMLTokenizer(b) else { continue }
            var size = 0
            while let e = try? t.next() {
                if case .text(let s) = e { size += s.utf8.count }
            }
            #expect(size <= b.count)
            _ = try? CourseImport.course(from: b, fileName: "mutant.gpx")
        }
    }
}

@Suite struct ImportTests {
    /// A 2 km track north then 1 km east, a point every 10 m, with a waypoint 20 m off the
    /// route at the corner (a cue) and one 500 m off (not a cue).
    static var gpxTrack: String {
        var s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<gpx version=\"1.1\" creator=\"test\" xmlns=\"http://www.topografix.com/GPX/1/1\">\n"
        s += " <metadata><name>Lake loop</name></metadata>\n"
        let (wlat, wlon) = Drawn.latLon(20, 2_000)
        s += " <wpt lat=\"\(wlat)\" lon=\"\(wlon)\"><name>Bakery</name><desc>fresh bread</desc><sym>Food</sym></wpt>\n"
        let (flat, flon) = Drawn.latLon(500, 500)
        s += " <wpt lat=\"\(flat)\" lon=\"\(flon)\"><name>Far away</name></wpt>\n"
        s += " <trk><name>Track name</name><trkseg>\n"
        for k in 0...300 {
            let (e, n) = k <= 200 ? (0.0, Double(k) * 10) : (Double(k - 200) * 10, 2_000.0)
            let (la, lo) = Drawn.latLon(e, n)
            s += "  <trkpt lat=\"\(la)\" lon=\"\(lo)\"><ele>\(400 + Double(k) * 0.1)</ele></trkpt>\n"
        }
        return s + " </trkseg></trk>\n</gpx>\n"
    }

    @Test func gpxTrackWithWaypoints() throws {
        let (c, report) = try CourseImport.course(from: Array(Self.gpxTrack.utf8), fileName: "lake.gpx")
        #expect(c.name == "Track name")
        #expect(report.format == .gpx && report.pointsRead == 301)
        #expect(report.pointsKept < 20) // straight lines: their ends and the corner
        #expect(abs(c.lengthM - 3_000) < 3)
        #expect(c.cues.count == 1 && report.waypointsAway == 1)
        #expect(c.cues[0].name == "Bakery" && c.cues[0].type == .food && c.cues[0].notes == "fresh bread")
        #expect(abs(c.cues[0].alongM - 2_000) < 25)
        #expect(abs(c.totalAscentM - 30) < 0.5)
    }

    /// A route (rtept) without waypoints: its bends give the cues.
    @Test func gpxRouteDerivesCues() throws {
        var s = "<gpx version=\"1.0\"><rte><name>Errand</name>"
        for (e, n) in [(0.0, 0.0), (0.0, 800.0), (600.0, 800.0), (600.0, 1_600.0), (0.0, 1_600.0)] {
            let (la, lo) = Drawn.latLon(e, n)
            s += "<rtept lat=\"\(la)\" lon=\"\(lo)\"/>"
        }
        s += "</rte></gpx>"
        let (c, report) = try CourseImport.course(from: Array(s.utf8), fileName: "errand.gpx")
        #expect(c.name == "Errand")
        #expect(report.cuesDerived == 3)
        #expect(c.cues.map(\.type) == [.right, .left, .left])
        for (cue, at) in zip(c.cues, [800.0, 1_400, 2_200]) { #expect(abs(cue.alongM - at) < 5) }
    }

    @Test func tcxCourseWithCoursePoints() throws {
        var s = "<?xml version=\"1.0\"?><TrainingCenterDatabase xmlns=\"http://www.garmin.com/xmlschemas/TrainingCenterDatabase/v2\"><Courses><Course><Name>Hill</Name><Track>"
        for k in 0...100 {
            let (la, lo) = Drawn.latLon(0, Double(k) * 20)
            s += "<Trackpoint><Position><LatitudeDegrees>\(la)</LatitudeDegrees><LongitudeDegrees>\(lo)</LongitudeDegrees></Position>"
            s += "<AltitudeMeters>\(100 + Double(k) * 1.2)</AltitudeMeters><DistanceMeters>\(Double(k) * 20)</DistanceMeters></Trackpoint>"
        }
        s += "</Track>"
        for (n, name, type) in [(500.0, "Turn", "Left"), (1_990.0, "Top", "Summit")] {
            let (la, lo) = Drawn.latLon(3, n)
            s += "<CoursePoint><Name>\(name)</Name><Position><LatitudeDegrees>\(la)</LatitudeDegrees><LongitudeDegrees>\(lo)</LongitudeDegrees></Position><PointType>\(type)</PointType><Notes>n</Notes></CoursePoint>"
        }
        s += "</Course></Courses></TrainingCenterDatabase>"
        let (c, report) = try CourseImport.course(from: Array(s.utf8), fileName: "hill.tcx")
        #expect(c.name == "Hill" && report.format == .tcx)
        #expect(c.cues.map(\.type) == [.left, .summit] && c.cues.map(\.name) == ["Turn", "Top"])
        #expect(abs(c.cues[0].alongM - 500) < 1 && abs(c.cues[1].alongM - 1_990) < 1)
        // 2 km at 6 %: one climb, found at import.
        #expect(c.climbs.count == 1)
        #expect(abs(c.climbs[0].gradePercent - 6) < 0.3 && c.climbs[0].lengthM > 1_800)
    }

    /// A FIT course (file_id type 6, course name, records, course points with distances).
    @Test func fitCourseWithCoursePoints() throws {
        var f = FITBytes()
        f.define(0, global: 0, [.u8(0)])
        f.message(0, [6])
        f.data += [0x41, 0, 0, 31, 0, 1, 5, 8, 0x07] // course: name, string[8]
        f.data += [0x01] + Array("Ridge\0\0\0".utf8)
        f.define(2, global: 20, [.u32(0), .u32(1), .u16(2), .u32(5)])
        for k in 0...50 {
            let (la, lo) = Drawn.latLon(Double(k) * 30, 0)
            f.message(2, [UInt64(UInt32(bitPattern: Int32((la / 180 * 2_147_483_648).rounded()))),
                          UInt64(UInt32(bitPattern: Int32((lo / 180 * 2_147_483_648).rounded()))), UInt64((300.0 + 500) * 5),
                          UInt64(k * 3_000)])
        }
        f.define(3, global: 32, [.u32(4), .u8(5)])
        f.message(3, [120_000, 7]) // right at 1 200 m
        f.message(3, [90_000, 6])  // out of order: after the one before (course order wins)
        let bytes = f.file()
        let (c, report) = try CourseImport.course(from: bytes, fileName: "ridge.fit")
        #expect(report.format == .fit && c.name == "Ridge" && c.pointCount == 2)
        #expect(abs(c.lengthM - 1_500) < 2)
        #expect(c.cues.count == 2 && c.cues[0].type == .right && abs(c.cues[0].alongM - 1_200) < 1)
        #expect(c.cues[1].alongM > c.cues[0].alongM)
    }

    /// Course points whose distance is wrong (Garmin Connect's export writes 0 for each, listed in
    /// no route order: Tests/oracle/courses/cptr003_connect.fit) are placed by their positions, in
    /// route order, with a warning; a point whose distance agrees with its position keeps it.
    @Test func fitCoursePointsWithWrongDistancesArePlacedByPosition() throws {
        func semicircles(_ deg: Double) -> UInt64 { UInt64(UInt32(bitPattern: Int32((deg / 180 * 2_147_483_648).rounded()))) }
        var f = FITBytes()
        f.define(0, global: 0, [.u8(0)])
        f.message(0, [6])
        f.define(2, global: 20, [.u32(0), .u32(1), .u32(5)])
        for k in 0...100 {
            let (la, lo) = Drawn.latLon(Double(k) * 30, 0)
            f.message(2, [semicircles(la), semicircles(lo), UInt64(k * 3_000)])
        }
        f.define(3, global: 32, [.u32(2), .u32(3), .u32(4), .u8(5)])
        for (east, distanceCm, type) in [(2_400.0, 0, 4), (600.0, 0, 7), (1_500.0, 150_000, 6), (2_700.0, 0, 3)] {
            let (la, lo) = Drawn.latLon(east, 5)
            f.message(3, [semicircles(la), semicircles(lo), UInt64(distanceCm), UInt64(type)])
        }
        let (c, report) = try CourseImport.course(from: f.file(), fileName: "connect.fit")
        #expect(abs(c.lengthM - 3_000) < 3)
        #expect(c.cues.map(\.type) == [.right, .left, .food, .water])
        for (cue, at) in zip(c.cues, [600.0, 1_500, 2_400, 2_700]) { #expect(abs(cue.alongM - at) < 1, "\(cue)") }
        #expect(report.warnings.contains { $0.contains("3 course points' distances") && $0.contains("placed by position") })
    }

    @Test func badFilesSayWhatIsWrong() throws {
        func problem(_ s: String, _ name: String = "f.gpx") -> String {
            do {
                _ = try CourseImport.course(from: Array(s.utf8), fileName: name)
                return "imported"
            } catch {
                return error.description
            }
        }
        #expect(problem("hello") == "f.gpx: not a GPX, TCX or FIT course file (neither a FIT header nor an XML document)")
        #expect(problem("<gpx></gpx>").contains("no points"))
        #expect(problem("<kml></kml>").contains("root element is <kml>"))
        #expect(problem("<gpx><trk><trkseg><trkpt lat=\"NaN\" lon=\"7\"/></trkseg></trk></gpx>").contains("point 1 is not a position on Earth"))
        #expect(problem("<gpx><trk><trkseg><trkpt lat=\"46\" lon=\"7\"/><trkpt lat=\"91\" lon=\"7\"/></trkseg></trk></gpx>").contains("point 2 is not a position"))
        #expect(problem("<gpx><trk><trkseg><trkpt lat=\"46\" lon=\"7\"/></trkseg></trk></gpx>").contains("at least 2 distinct points"))
        #expect(problem("<gpx><trk><trkseg><trkpt lat=\"46\" lon=\"7\">").contains("line 1: the file ends inside"))
        #expect(problem(String(ImportTests.gpxTrack.prefix(2_000))).contains("unterminated attribute"))
        let full = ImportTests.gpxTrack
        #expect(problem(String(full.dropLast(" </trkseg></trk>\n</gpx>\n".count))).contains("the file ends inside <trkseg>"))
        let fit = Array(repeating: UInt8(0), count: 8) + Array(".FIT".utf8) + [0, 0]
        #expect(problem(String(decoding: fit, as: UTF8.self), "x.fit").hasPrefix("x.fit: not a readable FIT file"))
    }

    /// A 50 000-point 300 km track is simplified under the limit and keeps its length.
    @Test func aLongTrackIsSimplified() throws {
        var points: [RawCourse.Point] = []
        var e = 0.0, n = 0.0, heading = 0.0
        var rng = SeededRandom(seed: 3)
        for _ in 0..<50_000 {
            heading += rng.double(-0.08...0.08)
            e += 6 * heading.sinApprox
            n += 6 * heading.cosApprox
            let (la, lo) = Drawn.latLon(e, n)
            points.append(RawCourse.Point(latDeg: la, lonDeg: lo, altitudeM: 500 + 300 * (e / 9_000).sinApprox))
        }
        var raw = RawCourse(format: .gpx)
        raw.points = points
        let (c, report) = try CoursePreparation.prepare(raw, fallbackName: "long", fileName: "long.gpx")
        #expect(report.pointsKept < 50_000 && report.pointsKept > 1_000)
        #expect(abs(c.lengthM - 300_000) / 300_000 < 0.005)
    }
}

@Suite struct ClimbTests {
    static func course(_ profile: @escaping (Double) -> Double, length: Double) throws -> Course {
        try Drawn.course([(0, 0), (0, length)], spacing: 10, altitude: profile)
    }

    /// A 10 km gentle rise at 1 % ending in 1.5 km at 7 %: the climb found is the steep end (with
    /// as much of the rise as keeps its mean at 3 %), not the whole 11.5 km at 1.8 %.
    @Test func aSteepEndAfterAGentleRiseIsAClimb() throws {
        let c = try Self.course({ a in a < 10_000 ? 100 + 0.01 * a : a < 11_500 ? 200 + 0.07 * (a - 10_000) : 305 }, length: 13_000)
        let climbs = CoursePreparation.findClimbs(c, settings: PreparationSettings())
        #expect(climbs.count == 1)
        let k = try #require(climbs.first)
        #expect(k.gradePercent >= 3 && k.gradePercent < 3.3)
        #expect(abs(k.endAlongM - 11_500) <= PreparationSettings().climbSmoothM) // the top rounded by the smoothing
        #expect(k.startAlongM > 7_000 && k.startAlongM < 9_500)
    }

    /// A ramp's ends are where it was drawn, not where the smoothing moved them: 2 km flat, 1.2 km
    /// at 6 %, flat; the climb is 2 000–3 200 m at 6 % (before: about 1 950–3 290 m at 5.4 %).
    @Test func aClimbsEndsAreOnTheRawProfile() throws {
        let c = try Self.course({ a in 500 + 0.06 * min(max(a - 2_000, 0), 1_200) }, length: 4_200)
        let climbs = CoursePreparation.findClimbs(c, settings: PreparationSettings())
        #expect(climbs.count == 1, "\(climbs)")
        let k = try #require(climbs.first)
        #expect(abs(k.startAlongM - 2_000) <= 10 && abs(k.endAlongM - 3_200) <= 10, "\(k)")
        #expect(abs(k.gradePercent - 6) < 0.1 && abs(k.gainM - 72) < 1, "\(k)")
    }

    /// Two climbs with a 1 km plateau and a 30 m drop between them are two; a 6 m dip in a climb
    /// is not the end of it; a 400 m ramp and a 1 km rise at 2 % are no climbs.
    @Test func climbsAreSplitByDescentsNotByDips() throws {
        let profile: (Double) -> Double = { a in
            switch a {
            case ..<1_000: 300
            case ..<3_000: 300 + 0.05 * (a - 1_000)                                   // 2 km at 5 %
            case ..<3_300: 400 - 0.1 * (a - 3_000)                                    // 30 m down
            case ..<4_300: 370
            case ..<5_300: 370 + 0.04 * (a - 4_300)                                   // 1 km at 4 %...
            case ..<5_400: 410 - 0.06 * (a - 5_300)                                   // ...a 6 m dip...
            case ..<6_400: 404 + 0.04 * (a - 5_400)                                   // ...1 km more at 4 %
            case ..<6_800: 444 + 0.08 * (a - 6_400) - 0.08 * max(0, a - 6_600) * 2   // a 200 m ramp
            case ..<8_000: 444
            default: 444 + 0.02 * (a - 8_000)                                         // 1 km at 2 %
            }
        }
        let c = try Self.course(profile, length: 9_000)
        let climbs = CoursePreparation.findClimbs(c, settings: PreparationSettings())
        #expect(climbs.count == 2, "\(climbs)")
        #expect(abs(climbs[0].startAlongM - 1_000) < 80 && abs(climbs[0].endAlongM - 3_000) < 60)
        #expect(abs(climbs[1].startAlongM - 4_300) < 80 && abs(climbs[1].endAlongM - 6_400) < 260)
        #expect(climbs.allSatisfy { $0.gradePercent >= 3 && $0.lengthM >= 500 && $0.score >= 1_500 })
    }
}
