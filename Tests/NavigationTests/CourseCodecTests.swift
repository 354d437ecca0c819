import Navigation
import TestSupport
import Testing

@Suite struct CourseCodecTests {
    static func sample() throws -> Course {
        let alt: (Double) -> Double = { 300 + 40 * ($0 / 1_000).cosApprox }
        return try Drawn.course([(0, 0), (0, 2_000), (1_500, 2_000), (1_500, 4_000)], name: "Col de Test",
                                cues: [Cue(alongM: 2_000, type: .right, name: "Rue du Lac", notes: "après le pont"),
                                       Cue(alongM: 2_800, type: .water, name: "Fontaine"),
                                       Cue(alongM: 3_500, type: .left)],
                                climbs: [Climb(startAlongM: 100, endAlongM: 900, startAltitudeM: 310, endAltitudeM: 350)],
                                altitude: alt)
    }

    /// zlib's CRC-32 check value.
    @Test func crc32IsZlibs() {
        #expect(CRC32.checksum(Array("123456789".utf8)[...]) == 0xCBF4_3926)
        #expect(CRC32.checksum([UInt8]()[...]) == 0)
    }

    @Test func roundTrip() throws {
        let c = try Self.sample()
        let bytes = CourseCodec.encode(c)
        let d = try CourseCodec.decode(bytes)
        #expect(d.name == "Col de Test")
        #expect(d.latDeg == c.latDeg && d.lonDeg == c.lonDeg && d.alongM == c.alongM)
        #expect(d.altitudeM == c.altitudeM && d.ascentM == c.ascentM)
        #expect(d.cues == c.cues && d.climbs == c.climbs)
        #expect(CourseCodec.encode(d) == bytes)
    }

    /// Every prefix of a file is refused with an error (never a crash), and so is every file
    /// with one byte changed (the CRC-32 sees every single-byte change).
    @Test func truncatedAndDamagedFilesAreRefused() throws {
        let bytes = CourseCodec.encode(try Self.sample())
        for n in stride(from: 0, to: bytes.count, by: 7) {
            #expect(throws: CourseError.self) { _ = try CourseCodec.decode(Array(bytes[0..<n])) }
        }
        var rng = SeededRandom(seed: 5)
        for _ in 0..<300 {
            var b = bytes
            let i = rng.int(0...(b.count - 1))
            b[i] ^= UInt8(rng.int(1...255))
            #expect(throws: CourseError.self) { _ = try CourseCodec.decode(b) }
        }
        #expect(throws: CourseError.notACourseFile) { _ = try CourseCodec.decode(Array("<gpx/>".utf8)) }
    }

    /// A file whose checksum is right but whose contents break an invariant (written by
    /// something else, or a bug) is refused too: the decoder checks what the encoder asserted.
    @Test func invariantsAreCheckedOnDecode() throws {
        let bytes = CourseCodec.encode(try Self.sample())
        // The second point's distance along, moved by a metre, and the CRC fixed up.
        var b = bytes
        let nameLength = Int(b[24])
        let along1 = 25 + nameLength + 24 + 8
        var v = Double(bitPattern: (0..<8).reduce(UInt64(0)) { $0 | UInt64(b[along1 + $1]) << UInt64(8 * $1) })
        v += 1
        for k in 0..<8 { b[along1 + k] = UInt8((v.bitPattern >> UInt64(8 * k)) & 0xFF) }
        let crc = CRC32.checksum(b[0..<(b.count - 4)])
        for k in 0..<4 { b[b.count - 4 + k] = UInt8((crc >> UInt32(8 * k)) & 0xFF) }
        #expect(throws: CourseError.distanceMismatch(index: 1)) { _ = try CourseCodec.decode(b) }
    }

    @Test func coursesCheckTheirParts() throws {
        #expect(throws: CourseError.self) { _ = try Drawn.course([(0, 0), (0, 1_000)], cues: [Cue(alongM: 500, type: .left), Cue(alongM: 500, type: .right)]) }
        #expect(throws: CourseError.self) { _ = try Drawn.course([(0, 0), (0, 1_000)], cues: [Cue(alongM: 1_200, type: .left)]) }
        #expect(throws: CourseError.self) { _ = try Drawn.course([(0, 0), (0, 1_000)], climbs: [Climb(startAlongM: 500, endAlongM: 400, startAltitudeM: 0, endAltitudeM: 10)]) }
        #expect(throws: CourseError.tooFewPoints(1)) { _ = try Course(name: "x", latE7: [1], lonE7: [1], altitudeM: [.nan], cues: [], climbs: []) }
        #expect(throws: CourseError.pointOutOfRange(index: 1)) {
            _ = try Course(name: "x", latE7: [0, 910_000_000], lonE7: [0, 0], altitudeM: [.nan, .nan], cues: [], climbs: [])
        }
        #expect(throws: CourseError.distanceNotIncreasing(index: 1)) {
            _ = try Course(name: "x", latE7: [5, 5], lonE7: [7, 7], altitudeM: [.nan, .nan], cues: [], climbs: [])
        }
    }

    /// The course's lookups: position and altitude by distance, the segment, the first cue.
    @Test func lookups() throws {
        let c = try Self.sample()
        #expect(abs(c.lengthM - 5_500) < 1)
        #expect(c.segment(atAlongM: -5) == 0 && c.segment(atAlongM: 1e9) == c.pointCount - 2)
        let p = c.position(atAlongM: 2_000 + 750)
        let o = Drawn.origin.offset(latDeg: p.latDeg, lonDeg: p.lonDeg)
        #expect(abs(o.east - 750) < 2 && abs(o.north - 2_000) < 2)
        #expect(abs(c.altitude(atAlongM: 1_000)! - (300 + 40 * (1.0).cosApprox)) < 0.5)
        #expect(c.firstCue(atOrAfterM: 2_001) == 1 && c.firstCue(atOrAfterM: 0) == 0 && c.firstCue(atOrAfterM: 9_999) == 3)
        #expect(c.totalAscentM > 0 && c.totalDescentM > 0)
    }
}
