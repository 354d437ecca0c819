import AppCore
import RideModel

/// A plain-text rendering of the screen value, for logs, tests and terminals without the
/// pixel renderer.
public enum TextScreen {
    public static func format(_ value: Double?, decimals: Int) -> String {
        guard let value, value.isFinite else { return "--" }
        if decimals == 0 { return String(Int(value.rounded())) }
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let scaled = Int((value * scale).rounded())
        let whole = scaled / Int(scale)
        var frac = String(abs(scaled) % Int(scale))
        while frac.count < decimals { frac = "0" + frac }
        return (scaled < 0 && whole == 0 ? "-" : "") + "\(whole).\(frac)"
    }

    public static func clock(_ ms: Int64) -> String {
        let s = max(0, ms) / 1000
        let h = s / 3600, m = (s / 60) % 60, sec = s % 60
        func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return h > 0 ? "\(h):\(two(m)):\(two(sec))" : "\(two(m)):\(two(sec))"
    }

    /// One line describing the screen.
    public static func line(_ s: ScreenModel) -> String {
        var out: String
        switch s.mode {
        case .idle:
            let sensors = SensorRole.allCases.map { "\($0)=\(s.sensor($0))" }.joined(separator: " ")
            out = "IDLE ready \(sensors)"
        case .countdown(let n):
            let ok = SensorRole.allCases.filter { s.sensor($0) == .connected }.map(\.description)
            out = "COUNTDOWN \(n) sensors:\(ok.isEmpty ? "none" : ok.joined(separator: ","))"
        case .running(let page):
            out = "RUNNING p\(page + 1) \(clock(s.timerMs)) spd=\(format(s[.speed].map { $0 * 3.6 }, decimals: 1))km/h "
                + "hr=\(format(s[.heartRate], decimals: 0)) pwr=\(format(s[.power], decimals: 0)) "
                + "cad=\(format(s[.cadence], decimals: 0)) dist=\(format(s[.distance].map { $0 / 1000 }, decimals: 2))km lap\(s.lapNumber)"
        case .paused:
            out = "PAUSED \(clock(s.timerMs)) elapsed \(clock(s.elapsedMs))"
        case .summary(let page):
            if let sum = s.summary {
                out = "SUMMARY p\(page + 1) \(sum.saved == false ? "discarded" : "saved") time=\(clock(sum.timerTimeMs)) "
                    + "dist=\(format(sum.distanceM.map { $0 / 1000 }, decimals: 2))km avgHR=\(format(sum.averageHeartRate, decimals: 0)) "
                    + "avgP=\(format(sum.averagePowerW, decimals: 0)) NP=\(format(sum.normalizedPowerW, decimals: 0)) laps=\(sum.lapCount)"
            } else {
                out = "SUMMARY"
            }
        case .confirmDiscard:
            out = "DISCARD RIDE? start=yes lap=no"
        case .sensors:
            let menu = s.sensorsMenu
            switch menu.page {
            case .list:
                out = "SENSORS " + (menu.paired.isEmpty ? "none paired"
                    : menu.paired.map { "\($0.kind.label)=\($0.state)" }.joined(separator: " "))
            case .confirmForget(let i):
                out = "SENSORS forget \(i < menu.paired.count ? menu.paired[i].id : "?")? lap=yes"
            case .found:
                out = "SENSORS search \(menu.found.count) found"
            }
            if let m = menu.message { out += " \(m)" }
        case .courses:
            let menu = s.coursesMenu
            out = "COURSES " + (menu.courses.isEmpty ? "none" : menu.courses.map(\.name).joined(separator: ", "))
                + " cursor=\(menu.cursor) loaded=\(s.navigation.course?.name ?? "none")"
            if let m = menu.message { out += " \(m)" }
        }
        if case .running = s.mode, s.navigation.course != nil { out += " " + navigation(s) }
        if let o = s.overlay { out += " [\(o)]" }
        return out
    }

    /// The navigation in words: state, the next cue and the distance to go.
    static func navigation(_ s: ScreenModel) -> String {
        let v = s.navigation
        var out = "nav=\(v.state)"
        if let c = v.cue { out += " cue=\(c.type.name)@\(Int(c.distanceM.rounded()))m" }
        if let d = v.distanceToGoM { out += " togo=\(format(d / 1000, decimals: 2))km" }
        if let b = v.backDistanceM, v.state == .offCourse || v.state == .wrongWay { out += " back=\(Int(b.rounded()))m" }
        return out
    }
}
