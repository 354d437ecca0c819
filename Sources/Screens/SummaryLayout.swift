import AppCore
import RideModel

/// One row of a summary page.
public enum SummaryItem: Sendable, Hashable {
    case timerTime
    case elapsedTime
    /// Moving time: timer time at a speed of at least 3.6 km/h ("--" without speed data).
    case movingTime
    case distance
    case speedAverageMax
    case laps
    case heartRateAverageMax
    case powerAverageMax
    case normalizedPower
    case cadenceAverageMax
    /// Time in heart-rate zones (left) and power zones (right) as bar charts; fills the page.
    case zoneBars
    /// A quantity's interval averages over timer time (`SummaryChartView`); fills the page.
    case chart(Quantity)

    public var label: String {
        switch self {
        case .timerTime: "TIME"
        case .elapsedTime: "ELAPSED"
        case .movingTime: "MOVING"
        case .distance: "KM"
        case .speedAverageMax: "SPD avg/max"
        case .laps: "LAPS"
        case .heartRateAverageMax: "HR avg/max"
        case .powerAverageMax: "W avg/max"
        case .normalizedPower: "NP W"
        case .cadenceAverageMax: "RPM avg/max"
        case .zoneBars: "ZONES"
        case .chart(let q): SummaryChartView.title(q)
        }
    }

    /// Writes the row's value; "--" for figures the ride does not have.
    public func write(_ s: RideSummary, into text: inout TextBuffer) {
        text.clear()
        switch self {
        case .timerTime: text.append(clockMs: s.timerTimeMs)
        case .elapsedTime: text.append(clockMs: s.elapsedTimeMs)
        case .movingTime:
            if let m = s.movingTimeMs { text.append(clockMs: m) } else { text.appendMissing() }
        case .distance: ValueFormat.write(.distance, s.distanceM, into: &text)
        case .speedAverageMax: pair(.averageSpeed, s.averageSpeedMps, s.maxSpeedMps, &text)
        case .laps: text.append(integer: Int64(s.lapCount))
        case .heartRateAverageMax: pair(.averageHeartRate, s.averageHeartRate, s.maxHeartRate, &text)
        case .powerAverageMax: pair(.averagePower, s.averagePowerW, s.maxPowerW, &text)
        case .normalizedPower: ValueFormat.write(.normalizedPower, s.normalizedPowerW, into: &text)
        case .cadenceAverageMax: pair(.averageCadence, s.averageCadence, s.maxCadence, &text)
        case .zoneBars, .chart: break
        }
    }

    private func pair(_ m: Metric, _ a: Double?, _ b: Double?, _ text: inout TextBuffer) {
        ValueFormat.write(m, a, into: &text)
        text.append(UInt8(ascii: "/"))
        ValueFormat.write(m, b, into: &text)
    }
}

/// A summary page: a title and its rows (4 fit on 128x64, 2 on 128x32).
public struct SummaryPage: Sendable, Hashable {
    public var title: String
    public var items: [SummaryItem]

    public init(title: String, items: [SummaryItem]) {
        self.title = title
        self.items = items
    }

    /// Totals; heart rate, power, cadence; time in zones; then one chart page per charted
    /// quantity. `AppConfiguration.summaryPageCount` (AppCore) must equal this list's count.
    public static let standard: [SummaryPage] = [
        // Moving time beside the timer time, as Garmin Connect and Strava show both.
        SummaryPage(title: "RIDE", items: [.timerTime, .movingTime, .distance, .speedAverageMax]),
        SummaryPage(title: "EFFORT", items: [.heartRateAverageMax, .powerAverageMax, .normalizedPower, .cadenceAverageMax]),
        SummaryPage(title: "ZONES", items: [.zoneBars]),
        chart(.speed),
        chart(.heartRate),
        chart(.power),
        // Altitude: the interval table already buckets it; when the GPS lands, add
        // `chart(.altitude)` here and raise AppConfiguration's summaryPageCount to 7.
    ]

    /// A page holding one quantity's chart, titled with its unit.
    public static func chart(_ q: Quantity) -> SummaryPage {
        SummaryPage(title: SummaryChartView.title(q), items: [.chart(q)])
    }
}
