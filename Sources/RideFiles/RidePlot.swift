import RideModel

/// A ride as an SVG picture (`bikecomputer rides show ID --plot FILE.svg`): one panel per channel
/// the ride has (speed, heart rate, power, cadence, altitude) over elapsed time, the laps as
/// vertical lines across every panel, and the heart-rate and power zones as shaded bands.
///
/// Pure text generation (no Foundation): the picture is read from the ride's FIT file, so it
/// works for any ride in the library. Each panel's x axis runs from the first record to the last;
/// a channel is averaged over equal slices of time, one per `columnsMax` (so a ten-hour ride
/// stays a small file), and a slice without data breaks the line (a pause, a dropout).
///
/// Structure, for tools and tests: `<g class="channel" data-channel="power" data-min=".."
/// data-max="..">` holds the panel's `line class="axis"` pair (x axis first), its zone
/// `rect class="zone" data-zone="N" data-from=".." data-below=".."`, and one `path
/// class="series"`. Laps are `line class="lap" data-lap="N"` at each lap's start time.
public enum RidePlot {
    public static let widthPx = 1000
    public static let panelHeightPx = 140
    public static let panelGapPx = 34
    public static let marginLeftPx = 64
    public static let marginRightPx = 16
    public static let marginTopPx = 54
    /// Slices of time per channel (points of a path at most).
    public static let columnsMax = 900

    public struct Channel: Sendable, Hashable {
        public var key: String
        public var title: String
        public var unit: String
        public var color: String
        public var value: @Sendable (FITActivity.Record) -> Double?

        public static func == (a: Channel, b: Channel) -> Bool { a.key == b.key }
        public func hash(into h: inout Hasher) { h.combine(key) }
    }

    /// The channels in the order they are drawn.
    public static let channels: [Channel] = [
        Channel(key: "speed", title: "Speed", unit: "km/h", color: "#1f77b4", value: { $0.speedMps.map { $0 * 3.6 } }),
        Channel(key: "heart_rate", title: "Heart rate", unit: "bpm", color: "#d62728", value: { $0.heartRate }),
        Channel(key: "power", title: "Power", unit: "W", color: "#9467bd", value: { $0.power }),
        Channel(key: "cadence", title: "Cadence", unit: "rpm", color: "#2ca02c", value: { $0.cadence }),
        Channel(key: "altitude", title: "Altitude", unit: "m", color: "#8c564b", value: { $0.altitudeM }),
    ]

    /// Zone upper bounds from the FIT file's hr_zone (8) and power_zone (9) messages: the zones
    /// the ride was recorded with.
    public static func zoneHighs(_ file: FITFile, global: UInt16) -> [Double] {
        file.messages(global).compactMap { $0.value(1) }.filter { $0 > 0 && $0 < 10_000 }
    }

    public static func svg(_ file: FITFile, title: String = "") -> String {
        let activity = FITActivity(file)
        let records = activity.records.sorted { $0.timestamp < $1.timestamp }
        guard let first = records.first, let last = records.last, last.timestamp > first.timestamp else {
            return document(height: 120, body: "<text x=\"20\" y=\"60\" class=\"empty\">This ride has no records over time to plot.</text>", title: title)
        }
        let t0 = Double(first.timestamp), t1 = Double(last.timestamp)
        let plotWidth = widthPx - marginLeftPx - marginRightPx
        let columns = min(columnsMax, max(1, Int(t1 - t0) + 1))
        let present = channels.filter { c in records.contains { c.value($0).map(\.isFinite) == true } }
        func x(_ t: Double) -> Double { Double(marginLeftPx) + (t - t0) / (t1 - t0) * Double(plotWidth) }

        var body = ""
        let zones: [String: [Double]] = ["heart_rate": zoneHighs(file, global: 8), "power": zoneHighs(file, global: 9)]
        for (i, channel) in present.enumerated() {
            let top = marginTopPx + i * (panelHeightPx + panelGapPx)
            let bottom = top + panelHeightPx
            // Averages per slice of time.
            var sums = [Double](repeating: 0, count: columns), counts = [Int](repeating: 0, count: columns)
            for r in records {
                guard let v = channel.value(r), v.isFinite else { continue }
                let c = min(columns - 1, Int((Double(r.timestamp) - t0) / (t1 - t0) * Double(columns)))
                sums[c] += v
                counts[c] += 1
            }
            var lo = Double.infinity, hi = -Double.infinity
            for c in 0..<columns where counts[c] > 0 {
                let v = sums[c] / Double(counts[c])
                lo = min(lo, v)
                hi = max(hi, v)
            }
            // A little room above and below; a flat line sits in the middle.
            if hi - lo < 1e-9 { lo -= 1; hi += 1 } else { let pad = (hi - lo) * 0.05; lo -= pad; hi += pad }
            if channel.key != "altitude" && channel.key != "heart_rate" { lo = max(0, lo) }
            func y(_ v: Double) -> Double { Double(bottom) - (v - lo) / (hi - lo) * Double(panelHeightPx) }

            body += "<g class=\"channel\" data-channel=\"\(channel.key)\" data-min=\"\(num(lo, 3))\" data-max=\"\(num(hi, 3))\">\n"
            // Zones first, under the line.
            if let highs = zones[channel.key], !highs.isEmpty {
                var from = -Double.infinity
                for (z, high) in (highs + [Double.infinity]).enumerated() {
                    let a = max(from, lo), b = min(high, hi)
                    defer { from = high }
                    guard b > a else { continue }
                    let shade = z % 2 == 0 ? "#f2f2f2" : "#e0e0e0"
                    body += "<rect class=\"zone\" data-zone=\"\(z + 1)\" data-from=\"\(num(from, 1))\" data-below=\"\(high.isFinite ? num(high, 1) : "inf")\" x=\"\(marginLeftPx)\" y=\"\(num(y(b), 2))\" width=\"\(plotWidth)\" height=\"\(num(y(a) - y(b), 2))\" fill=\"\(shade)\"/>\n"
                    body += "<text class=\"zone-label\" x=\"\(widthPx - marginRightPx - 4)\" y=\"\(num(min(y(a) - 3, y(b) + 12), 2))\" text-anchor=\"end\">Z\(z + 1)</text>\n"
                }
            }
            // Axes: x (the baseline), then y.
            body += "<line class=\"axis\" x1=\"\(marginLeftPx)\" y1=\"\(bottom)\" x2=\"\(marginLeftPx + plotWidth)\" y2=\"\(bottom)\"/>\n"
            body += "<line class=\"axis\" x1=\"\(marginLeftPx)\" y1=\"\(top)\" x2=\"\(marginLeftPx)\" y2=\"\(bottom)\"/>\n"
            body += "<text class=\"title\" x=\"\(marginLeftPx + 4)\" y=\"\(top - 6)\">\(channel.title) (\(channel.unit))</text>\n"
            body += "<text class=\"tick\" x=\"\(marginLeftPx - 6)\" y=\"\(top + 10)\" text-anchor=\"end\">\(num(hi, channel.key == "speed" ? 1 : 0))</text>\n"
            body += "<text class=\"tick\" x=\"\(marginLeftPx - 6)\" y=\"\(bottom)\" text-anchor=\"end\">\(num(lo, channel.key == "speed" ? 1 : 0))</text>\n"
            // The line, broken where a slice has no data.
            var d = ""
            var pen = false
            for c in 0..<columns {
                guard counts[c] > 0 else { pen = false; continue }
                let t = t0 + (Double(c) + 0.5) / Double(columns) * (t1 - t0)
                d += (pen ? "L" : "M") + num(x(t), 2) + " " + num(y(sums[c] / Double(counts[c])), 2) + " "
                pen = true
            }
            body += "<path class=\"series\" data-channel=\"\(channel.key)\" d=\"\(d)\" fill=\"none\" stroke=\"\(channel.color)\" stroke-width=\"1.5\"/>\n"
            body += "</g>\n"
        }
        let panelsBottom = marginTopPx + present.count * (panelHeightPx + panelGapPx) - panelGapPx
        // Laps: a line at every lap's start but the first (the ride's start).
        for (n, lap) in activity.laps.enumerated() where n > 0 {
            guard let s = lap.startTime, Double(s) >= t0, Double(s) <= t1 else { continue }
            let lx = num(x(Double(s)), 2)
            body += "<line class=\"lap\" data-lap=\"\(n + 1)\" x1=\"\(lx)\" y1=\"\(marginTopPx - 14)\" x2=\"\(lx)\" y2=\"\(panelsBottom)\"/>\n"
            body += "<text class=\"lap-label\" x=\"\(lx)\" y=\"\(marginTopPx - 18)\" text-anchor=\"middle\">lap \(n + 1)</text>\n"
        }
        // Elapsed time under the last panel: start, middle and end.
        for f in [0.0, 0.5, 1.0] {
            let t = f * (t1 - t0)
            let anchor = f == 0 ? "start" : f == 1 ? "end" : "middle"
            body += "<text class=\"tick\" x=\"\(num(x(t0 + t), 2))\" y=\"\(panelsBottom + 16)\" text-anchor=\"\(anchor)\">\(clock(t))</text>\n"
        }
        body += "<text class=\"tick\" x=\"\(marginLeftPx + plotWidth / 2)\" y=\"\(panelsBottom + 30)\" text-anchor=\"middle\">elapsed time (h:mm:ss)</text>\n"
        return document(height: panelsBottom + 40, body: body, title: title)
    }

    static func document(height: Int, body: String, title: String) -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <svg xmlns="http://www.w3.org/2000/svg" width="\(widthPx)" height="\(height)" viewBox="0 0 \(widthPx) \(height)" font-family="sans-serif" font-size="11">
        <style>.axis{stroke:#333;stroke-width:1}.lap{stroke:#ff7f0e;stroke-width:1;stroke-dasharray:4 3}.title{font-size:12px;font-weight:bold}.lap-label{fill:#ff7f0e}.zone-label{fill:#999}</style>
        <rect x="0" y="0" width="\(widthPx)" height="\(height)" fill="white"/>
        <text x="\(marginLeftPx)" y="16" font-size="14">\(escape(title))</text>
        \(body)</svg>

        """
    }

    /// XML text escape.
    static func escape(_ s: String) -> String {
        var out = ""
        for c in s {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            default: out.append(c)
            }
        }
        return out
    }

    /// `v` with `decimals` decimals (no Foundation).
    static func num(_ v: Double, _ decimals: Int) -> String {
        guard v.isFinite else { return "0" }
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let scaled = (abs(v) * scale).rounded()
        let whole = Int64(scaled / scale)
        var text = (v < 0 && scaled != 0 ? "-" : "") + String(whole)
        if decimals > 0 {
            var frac = String(Int64(scaled) - whole * Int64(scale))
            while frac.count < decimals { frac = "0" + frac }
            text += "." + frac
        }
        return text
    }

    static func clock(_ seconds: Double) -> String {
        let s = Int(seconds.rounded())
        let m = (s / 60) % 60, sec = s % 60
        return "\(s / 3600):" + (m < 10 ? "0" : "") + "\(m):" + (sec < 10 ? "0" : "") + "\(sec)"
    }
}
