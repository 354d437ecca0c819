import Navigation

/// GPX 1.0 and 1.1 (topografix.com/GPX): the course is every track's points in order
/// (`trk/trkseg/trkpt`), or, in a file without tracks, every route's points (`rte/rtept`);
/// `<ele>` gives altitude. Cues: waypoints (`wpt`) within `CueRules.waypointMaxDistanceM` of
/// the route, typed by their `<type>` or `<sym>` when it names a cue type (else generic), named
/// by `<name>`, with `<desc>` (or `<cmt>`) as notes; and, on a route, route points whose type or
/// symbol names a cue type. Extensions are read past.
enum GPXReader {
    struct Pending {
        var lat: Double
        var lon: Double
        var ele: Double?
        var name = ""
        var desc = ""
        var cmt = ""
        var sym = ""
        var type = ""
    }

    static func read(_ xml: inout XMLCursor) throws(ReaderProblem) -> RawCourse {
        var trackPoints: [RawCourse.Point] = []
        var routePoints: [RawCourse.Point] = []
        var routeCues: [RawCourse.RawCue] = []
        var waypoints: [Pending] = []
        var metadataName: String?, trackName: String?, routeName: String?
        var stack: [String] = []
        var pending: Pending?
        var pointCount = 0
        var text = ""
        while let e = try xml.next() {
            switch e {
            case .start(let name, let attributes):
                stack.append(name)
                text = ""
                if (name == "trkpt" || name == "rtept" || name == "wpt") && stack.count >= 2 {
                    let lat = attributes.first { $0.name == "lat" }.flatMap { XMLReading.number($0.value) }
                    let lon = attributes.first { $0.name == "lon" }.flatMap { XMLReading.number($0.value) }
                    try XMLReading.checkCount(pointCount)
                    let (la, lo) = try XMLReading.point(lat, lon, index: pointCount)
                    pointCount += 1
                    pending = Pending(lat: la, lon: lo)
                }
            case .text(let t):
                if text.utf8.count < XMLTokenizer.Limits.textBytesMax { text += t }
            case .end(let name):
                let parent = stack.count >= 2 ? stack[stack.count - 2] : ""
                if pending != nil && (parent == "trkpt" || parent == "rtept" || parent == "wpt") {
                    switch name {
                    case "ele": pending!.ele = XMLReading.number(text)
                    case "name": pending!.name = XMLReading.trimmed(text)
                    case "desc": pending!.desc = XMLReading.trimmed(text)
                    case "cmt": pending!.cmt = XMLReading.trimmed(text)
                    case "sym": pending!.sym = XMLReading.trimmed(text)
                    case "type": pending!.type = XMLReading.trimmed(text)
                    default: break
                    }
                } else if name == "name" {
                    let n = XMLReading.trimmed(text)
                    if parent == "metadata" || parent == "gpx" { metadataName = metadataName ?? n }
                    if parent == "trk" { trackName = trackName ?? n }
                    if parent == "rte" { routeName = routeName ?? n }
                }
                if let p = pending, name == "trkpt" || name == "rtept" || name == "wpt" {
                    let point = RawCourse.Point(latDeg: p.lat, lonDeg: p.lon, altitudeM: p.ele)
                    switch name {
                    case "trkpt": trackPoints.append(point)
                    case "rtept":
                        routePoints.append(point)
                        if let t = CueType(name: p.type) ?? CueType(name: p.sym), t != .generic {
                            routeCues.append(cue(p, type: t, ordered: true))
                        }
                    default: waypoints.append(p)
                    }
                    pending = nil
                }
                stack.removeLast()
                text = ""
            }
        }
        var raw = RawCourse(format: .gpx)
        if !trackPoints.isEmpty {
            raw.points = trackPoints
            raw.name = trackName ?? metadataName ?? routeName
            if !routePoints.isEmpty { raw.warnings.append("the file has tracks and routes: the course follows its tracks (\(trackPoints.count) points); its routes are not used") }
        } else {
            raw.points = routePoints
            raw.name = routeName ?? metadataName
            raw.cues = routeCues
        }
        for w in waypoints {
            raw.cues.append(cue(w, type: CueType(name: w.type) ?? CueType(name: w.sym) ?? .generic, ordered: false))
        }
        if raw.name?.isEmpty ?? false { raw.name = nil }
        return raw
    }

    static func cue(_ p: Pending, type: CueType, ordered: Bool) -> RawCourse.RawCue {
        RawCourse.RawCue(latDeg: p.lat, lonDeg: p.lon, distanceM: nil, type: type,
                         name: XMLReading.clipped(p.name, bytes: Course.cueNameBytesMax),
                         notes: XMLReading.clipped(p.desc.isEmpty ? p.cmt : p.desc, bytes: Course.cueNotesBytesMax),
                         ordered: ordered)
    }
}
