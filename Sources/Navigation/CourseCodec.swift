/// The compact course file on the card (`<data dir>/courses/NAME.course`), little-endian:
///
///     magic "BIKECRS1" · u16 version · u16 flags (bit 0: altitudes) · u32 points · u32 cues ·
///     u32 climbs · u8 name length · name (UTF-8)
///     points × { i32 latitude 1e-7° · i32 longitude 1e-7° · f64 distance along m ·
///                f32 altitude m (NaN: none) · f32 cumulative ascent m }
///     cues × { f64 distance along m · u8 type (FIT course_point) · u8 name length · name ·
///              u16 notes length · notes }
///     climbs × { f64 foot along m · f64 top along m · f64 foot altitude m · f64 top altitude m }
///     u32 CRC-32 (zlib's) of every byte before it
///
/// A ride loads it into fixed arrays without parsing XML on the run loop. `encode` writes only a
/// `Course` (whose init checked every invariant); `decode` checks the size, the checksum and then
/// the same invariants through `Course.init` (the stored distances and ascents must equal the
/// ones recomputed from the points), so what the follower gets has passed both ends.
public enum CourseCodec {
    public static let magic: [UInt8] = Array("BIKECRS1".utf8)
    public static let version = 1
    static let headerBytes = 8 + 2 + 2 + 4 + 4 + 4 + 1
    static let pointBytes = 24
    static let climbBytes = 32
    /// The largest file `decode` accepts (a course of `Course.pointsMax` points and the most
    /// cues and climbs with the longest texts).
    public static let fileBytesMax = headerBytes + Course.nameBytesMax + Course.pointsMax * pointBytes
        + Course.cuesMax * (8 + 1 + 1 + Course.cueNameBytesMax + 2 + Course.cueNotesBytesMax) + Course.climbsMax * climbBytes + 4

    public static func encode(_ c: Course) -> [UInt8] {
        var w = LittleEndianWriter()
        w.bytes(magic)
        w.u16(UInt16(version))
        w.u16(c.hasAltitude ? 1 : 0)
        w.u32(UInt32(c.pointCount))
        w.u32(UInt32(c.cues.count))
        w.u32(UInt32(c.climbs.count))
        w.text8(c.name)
        for i in 0..<c.pointCount {
            w.i32(Course.quantised(c.latDeg[i])!)
            w.i32(Course.quantised(c.lonDeg[i])!)
            w.f64(c.alongM[i])
            w.f32(c.altitudeM[i])
            w.f32(c.ascentM[i])
        }
        for cue in c.cues {
            w.f64(cue.alongM)
            w.u8(cue.type.rawValue)
            w.text8(cue.name)
            let notes = Array(cue.notes.utf8)
            w.u16(UInt16(notes.count))
            w.bytes(notes)
        }
        for climb in c.climbs {
            w.f64(climb.startAlongM)
            w.f64(climb.endAlongM)
            w.f64(climb.startAltitudeM)
            w.f64(climb.endAltitudeM)
        }
        w.u32(CRC32.checksum(w.out[...]))
        // Both ends: what was written decodes to the same course.
        assert((try? decode(w.out)).map { $0.pointCount == c.pointCount && $0.cues == c.cues && $0.climbs == c.climbs } ?? false,
               "an encoded course decodes to itself")
        return w.out
    }

    /// Reads and checks a compact course file. Allocates the course's arrays (once, at load).
    public static func decode(_ bytes: [UInt8]) throws(CourseError) -> Course {
        guard bytes.count >= magic.count, Array(bytes[0..<magic.count]) == magic else { throw .notACourseFile }
        guard bytes.count >= headerBytes + 4 else { throw .truncated(needed: headerBytes + 4, have: bytes.count) }
        guard bytes.count <= fileBytesMax else { throw .tooManyPoints(bytes.count / pointBytes) }
        let stored = UInt32(bytes[bytes.count - 4]) | UInt32(bytes[bytes.count - 3]) << 8
            | UInt32(bytes[bytes.count - 2]) << 16 | UInt32(bytes[bytes.count - 1]) << 24
        var r = LittleEndianReader(bytes, end: bytes.count - 4)
        r.offset = magic.count
        let v = Int(try r.u16())
        guard v == version else { throw .unsupportedVersion(v) }
        _ = try r.u16() // flags: altitudes are known from the points themselves
        let points = Int(try r.u32()), cueCount = Int(try r.u32()), climbCount = Int(try r.u32())
        guard points <= Course.pointsMax else { throw .tooManyPoints(points) }
        guard cueCount <= Course.cuesMax else { throw .tooManyCues(cueCount) }
        guard climbCount <= Course.climbsMax else { throw .tooManyClimbs(climbCount) }
        let computed = CRC32.checksum(bytes[0..<(bytes.count - 4)])
        guard computed == stored else { throw .checksumMismatch(stored: stored, computed: computed) }
        let name = try r.text8("the course name")
        var latE7 = [Int32](), lonE7 = [Int32](), along = [Double](), altitude = [Float](), ascent = [Float]()
        try r.need(points * pointBytes)
        latE7.reserveCapacity(points); lonE7.reserveCapacity(points); along.reserveCapacity(points)
        altitude.reserveCapacity(points); ascent.reserveCapacity(points)
        for _ in 0..<points {
            latE7.append(try r.i32())
            lonE7.append(try r.i32())
            along.append(try r.f64())
            altitude.append(try r.f32())
            ascent.append(try r.f32())
        }
        var cues: [Cue] = []
        cues.reserveCapacity(cueCount)
        for i in 0..<cueCount {
            let a = try r.f64()
            let t = CueType(rawValue: try r.u8())
            let n = try r.text8("cue \(i + 1)'s name")
            let notesLength = Int(try r.u16())
            let notes = try r.text(notesLength, "cue \(i + 1)'s notes")
            cues.append(Cue(alongM: a, type: t, name: n, notes: notes))
        }
        var climbs: [Climb] = []
        climbs.reserveCapacity(climbCount)
        for _ in 0..<climbCount {
            let s = try r.f64(), e = try r.f64(), sa = try r.f64(), ea = try r.f64()
            climbs.append(Climb(startAlongM: s, endAlongM: e, startAltitudeM: sa, endAltitudeM: ea))
        }
        guard r.offset == r.end else { throw .trailingBytes(r.end - r.offset) }
        return try Course(name: name, latE7: latE7, lonE7: lonE7, altitudeM: altitude, cues: cues, climbs: climbs,
                          storedAlongM: along, storedAscentM: ascent)
    }
}

struct LittleEndianWriter {
    var out: [UInt8] = []

    mutating func bytes(_ b: [UInt8]) { out += b }
    mutating func u8(_ v: UInt8) { out.append(v) }
    mutating func u16(_ v: UInt16) { out.append(UInt8(v & 0xFF)); out.append(UInt8(v >> 8)) }
    mutating func u32(_ v: UInt32) { for s in stride(from: 0, to: 32, by: 8) { out.append(UInt8((v >> UInt32(s)) & 0xFF)) } }
    mutating func u64(_ v: UInt64) { for s in stride(from: 0, to: 64, by: 8) { out.append(UInt8((v >> UInt64(s)) & 0xFF)) } }
    mutating func i32(_ v: Int32) { u32(UInt32(bitPattern: v)) }
    mutating func f32(_ v: Float) { u32(v.bitPattern) }
    mutating func f64(_ v: Double) { u64(v.bitPattern) }
    /// A text of at most 255 bytes (the course checked the limits).
    mutating func text8(_ s: String) {
        let b = Array(s.utf8)
        precondition(b.count <= 255, "a checked text fits its length byte")
        u8(UInt8(b.count))
        bytes(b)
    }
}

struct LittleEndianReader {
    let bytes: [UInt8]
    let end: Int
    var offset = 0

    init(_ bytes: [UInt8], end: Int) {
        self.bytes = bytes
        self.end = end
    }

    func need(_ n: Int) throws(CourseError) {
        guard n >= 0, offset + n <= end else { throw .truncated(needed: offset + n + 4, have: end + 4) }
    }

    mutating func u8() throws(CourseError) -> UInt8 {
        try need(1)
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func uint(_ n: Int) throws(CourseError) -> UInt64 {
        try need(n)
        var v: UInt64 = 0
        for k in 0..<n { v |= UInt64(bytes[offset + k]) << UInt64(8 * k) }
        offset += n
        return v
    }

    mutating func u16() throws(CourseError) -> UInt16 { UInt16(try uint(2)) }
    mutating func u32() throws(CourseError) -> UInt32 { UInt32(try uint(4)) }
    mutating func i32() throws(CourseError) -> Int32 { Int32(bitPattern: try u32()) }
    mutating func f32() throws(CourseError) -> Float { Float(bitPattern: try u32()) }
    mutating func f64() throws(CourseError) -> Double { Double(bitPattern: try uint(8)) }

    mutating func text(_ n: Int, _ what: String) throws(CourseError) -> String {
        try need(n)
        let slice = bytes[offset..<(offset + n)]
        offset += n
        guard let s = String(validating: slice, as: UTF8.self) else { throw .badText(what) }
        return s
    }

    mutating func text8(_ what: String) throws(CourseError) -> String { try text(Int(try u8()), what) }
}
