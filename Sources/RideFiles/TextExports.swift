import RideModel

/// Decimal text without Foundation: `v` rounded to `decimals` places, trailing zeros kept off.
public func decimalText(_ v: Double, decimals: Int) -> String {
    guard v.isFinite else { return "0" }
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let scaled = (abs(v) * scale).rounded()
    guard scaled < 9e15 else { return String(Int64(v.rounded())) }
    let n = Int64(scaled)
    let p = Int64(scale)
    let whole = n / p
    var frac = decimals > 0 ? String(n % p) : ""
    if decimals > 0 { frac = String(repeating: "0", count: decimals - frac.count) + frac }
    while frac.hasSuffix("0") { frac.removeLast() }
    let sign = (v < 0 && n != 0) ? "-" : ""
    return sign + String(whole) + (frac.isEmpty ? "" : "." + frac)
}

/// Escapes text for XML content and attributes.
func xmlEscaped(_ s: String) -> String {
    var out = ""
    out.reserveCapacity(s.utf8.count)
    for ch in s {
        switch ch {
        case "&": out += "&amp;"
        case "<": out += "&lt;"
        case ">": out += "&gt;"
        case "\"": out += "&quot;"
        case "'": out += "&apos;"
        default: out.append(ch)
        }
    }
    return out
}

extension RideExport {
    /// "2026-11-22T08:30:00Z" for `instant`.
    func utcText(_ instant: MonotonicInstant) -> String { UTCDateTime(unixMs: unixMs(instant)).iso8601 }

    /// For each row, whether a pause or gap lies between it and the previous row (a new segment).
    func segmentBreaks() -> [Bool] {
        var breaks = Array(repeating: false, count: rowCount)
        let events = builder.events
        var ei = 0
        for r in 0..<rowCount {
            let at = rowInstant(r)
            while ei < events.count, events[ei].instant <= at {
                if events[ei].kind == .pause || events[ei].kind == .gap { breaks[r] = true }
                ei += 1
            }
        }
        if rowCount > 0 { breaks[0] = false }
        return breaks
    }
}

/// GPX 1.1 export: one track, one segment per running stretch, heart rate and cadence in
/// Garmin's TrackPointExtension v1, power as a `<power>` extension. GPX track points need a
/// position, so only rows with latitude and longitude become points (an indoor ride gives an
/// empty track with its metadata).
public enum GPXEncoder {
    public static func encode(records: [RideRecord]) throws(RideFileError) -> String {
        encode(try RideExport(records: records))
    }

    public static func encode(_ ride: RideExport) -> String {
        var s = ""
        s.reserveCapacity(600 + ride.rowCount * 260)
        s += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        s += "<gpx version=\"1.1\" creator=\"\(xmlEscaped(ride.metadataValue(RideMetadataKey.deviceName) ?? "bikecomputer"))\""
        s += " xmlns=\"http://www.topografix.com/GPX/1/1\""
        s += " xmlns:gpxtpx=\"http://www.garmin.com/xmlschemas/TrackPointExtension/v1\""
        s += " xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\""
        s += " xsi:schemaLocation=\"http://www.topografix.com/GPX/1/1 http://www.topografix.com/GPX/1/1/gpx.xsd"
        s += " http://www.garmin.com/xmlschemas/TrackPointExtension/v1 http://www.garmin.com/xmlschemas/TrackPointExtensionv1.xsd\">\n"
        s += " <metadata><time>\(ride.utcText(ride.startInstant))</time></metadata>\n"
        s += " <trk>\n  <name>Ride \(ride.utcText(ride.startInstant))</name>\n  <type>\(xmlEscaped(ride.header.activity))</type>\n"
        let breaks = ride.segmentBreaks()
        var open = false
        for r in 0..<ride.rowCount {
            guard let lat = ride.value(r, .latitude), let lon = ride.value(r, .longitude) else { continue }
            if open && breaks[r] { s += "  </trkseg>\n"; open = false }
            if !open { s += "  <trkseg>\n"; open = true }
            s += "   <trkpt lat=\"\(decimalText(lat, decimals: 7))\" lon=\"\(decimalText(lon, decimals: 7))\">"
            if let e = ride.value(r, .altitude) { s += "<ele>\(decimalText(e, decimals: 1))</ele>" }
            s += "<time>\(ride.utcText(ride.rowInstant(r)))</time>"
            let hr = ride.value(r, .heartRate), cad = ride.value(r, .cadence), pw = ride.value(r, .power)
            let temp = ride.value(r, .temperature)
            if hr != nil || cad != nil || pw != nil || temp != nil {
                s += "<extensions>"
                if let pw { s += "<power>\(decimalText(pw, decimals: 0))</power>" }
                if hr != nil || cad != nil || temp != nil {
                    s += "<gpxtpx:TrackPointExtension>"
                    if let temp { s += "<gpxtpx:atemp>\(decimalText(temp, decimals: 1))</gpxtpx:atemp>" }
                    if let hr { s += "<gpxtpx:hr>\(decimalText(min(255, max(0, hr)), decimals: 0))</gpxtpx:hr>" }
                    if let cad { s += "<gpxtpx:cad>\(decimalText(min(254, max(0, cad)), decimals: 0))</gpxtpx:cad>" }
                    s += "</gpxtpx:TrackPointExtension>"
                }
                s += "</extensions>"
            }
            s += "</trkpt>\n"
        }
        if open { s += "  </trkseg>\n" }
        s += " </trk>\n</gpx>\n"
        return s
    }
}

/// TCX (Training Center Database v2) export: one Activity (Biking), one Lap per lap with its
/// statistics, track points with time, position (if any), altitude, distance, heart rate,
/// cadence, and speed/power in ActivityExtension v2.
public enum TCXEncoder {
    public static func encode(records: [RideRecord]) throws(RideFileError) -> String {
        encode(try RideExport(records: records))
    }

    static func triggerMethod(_ t: Trigger?) -> String {
        switch t {
        case .distance: "Distance"
        case .time: "Time"
        default: "Manual"
        }
    }

    public static func encode(_ ride: RideExport) -> String {
        var s = ""
        s.reserveCapacity(1000 + ride.rowCount * 300)
        s += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        s += "<TrainingCenterDatabase xmlns=\"http://www.garmin.com/xmlschemas/TrainingCenterDatabase/v2\""
        s += " xmlns:ns3=\"http://www.garmin.com/xmlschemas/ActivityExtension/v2\""
        s += " xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\""
        s += " xsi:schemaLocation=\"http://www.garmin.com/xmlschemas/TrainingCenterDatabase/v2 http://www.garmin.com/xmlschemas/TrainingCenterDatabasev2.xsd\">\n"
        s += " <Activities>\n  <Activity Sport=\"Biking\">\n"
        s += "   <Id>\(ride.utcText(ride.startInstant))</Id>\n"
        var r = 0
        let laps = ride.builder.laps
        for (li, lap) in laps.enumerated() {
            let st = lap.statistics
            let end = lap.endInstant ?? ride.stopInstant
            s += "   <Lap StartTime=\"\(ride.utcText(lap.startInstant))\">\n"
            s += "    <TotalTimeSeconds>\(decimalText(Double(st.timerTimeMs) / 1000, decimals: 3))</TotalTimeSeconds>\n"
            s += "    <DistanceMeters>\(decimalText(st[.distance].hasData ? st.distanceM : 0, decimals: 2))</DistanceMeters>\n"
            if let v = st[.speed].max { s += "    <MaximumSpeed>\(decimalText(v, decimals: 3))</MaximumSpeed>\n" }
            s += "    <Calories>\(decimalText(max(0, st.energyKJ), decimals: 0))</Calories>\n"
            if let v = st[.heartRate].average, v >= 0.5 { s += "    <AverageHeartRateBpm><Value>\(decimalText(min(255, v), decimals: 0))</Value></AverageHeartRateBpm>\n" }
            if let v = st[.heartRate].max, v >= 0.5 { s += "    <MaximumHeartRateBpm><Value>\(decimalText(min(255, v), decimals: 0))</Value></MaximumHeartRateBpm>\n" }
            s += "    <Intensity>Active</Intensity>\n"
            if let v = st[.cadence].average { s += "    <Cadence>\(decimalText(min(254, max(0, v)), decimals: 0))</Cadence>\n" }
            s += "    <TriggerMethod>\(triggerMethod(lap.trigger))</TriggerMethod>\n"
            s += "    <Track>\n"
            let isLast = li == laps.count - 1
            while r < ride.rowCount, isLast || ride.rowInstant(r) < end {
                trackpoint(&s, ride, r)
                r += 1
            }
            s += "    </Track>\n"
            s += "    <Extensions><ns3:LX>"
            if let v = st.averageSpeedMps { s += "<ns3:AvgSpeed>\(decimalText(v, decimals: 3))</ns3:AvgSpeed>" }
            if let v = st[.cadence].max { s += "<ns3:MaxBikeCadence>\(decimalText(min(254, max(0, v)), decimals: 0))</ns3:MaxBikeCadence>" }
            if let v = st[.power].average { s += "<ns3:AvgWatts>\(decimalText(max(0, v), decimals: 0))</ns3:AvgWatts>" }
            if let v = st[.power].max { s += "<ns3:MaxWatts>\(decimalText(max(0, v), decimals: 0))</ns3:MaxWatts>" }
            s += "</ns3:LX></Extensions>\n"
            s += "   </Lap>\n"
        }
        let version = ride.softwareVersionHundredths ?? 0
        s += "   <Creator xsi:type=\"Device_t\"><Name>\(xmlEscaped(ride.metadataValue(RideMetadataKey.deviceName) ?? "bikecomputer"))</Name>"
        s += "<UnitId>\(ride.serialNumber)</UnitId><ProductID>\(ride.product)</ProductID>"
        s += "<Version><VersionMajor>\(version / 100)</VersionMajor><VersionMinor>\(version % 100)</VersionMinor></Version></Creator>\n"
        s += "  </Activity>\n </Activities>\n</TrainingCenterDatabase>\n"
        return s
    }

    static func trackpoint(_ s: inout String, _ ride: RideExport, _ r: Int) {
        s += "     <Trackpoint><Time>\(ride.utcText(ride.rowInstant(r)))</Time>"
        if let lat = ride.value(r, .latitude), let lon = ride.value(r, .longitude) {
            s += "<Position><LatitudeDegrees>\(decimalText(lat, decimals: 7))</LatitudeDegrees><LongitudeDegrees>\(decimalText(lon, decimals: 7))</LongitudeDegrees></Position>"
        }
        if let v = ride.value(r, .altitude) { s += "<AltitudeMeters>\(decimalText(v, decimals: 1))</AltitudeMeters>" }
        if let v = ride.value(r, .distance) { s += "<DistanceMeters>\(decimalText(v, decimals: 2))</DistanceMeters>" }
        if let v = ride.value(r, .heartRate), v >= 0.5 { s += "<HeartRateBpm><Value>\(decimalText(min(255, v), decimals: 0))</Value></HeartRateBpm>" }
        if let v = ride.value(r, .cadence) { s += "<Cadence>\(decimalText(min(254, max(0, v)), decimals: 0))</Cadence>" }
        let sp = ride.value(r, .speed), pw = ride.value(r, .power)
        if sp != nil || pw != nil {
            s += "<Extensions><ns3:TPX>"
            if let sp { s += "<ns3:Speed>\(decimalText(sp, decimals: 3))</ns3:Speed>" }
            if let pw { s += "<ns3:Watts>\(decimalText(max(0, pw), decimals: 0))</ns3:Watts>" }
            s += "</ns3:TPX></Extensions>"
        }
        s += "</Trackpoint>\n"
    }
}
