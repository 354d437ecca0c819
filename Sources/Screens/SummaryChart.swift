import AppCore
import Display
import RideModel

/// A chart page of the ride summary: one quantity's interval averages (`SummaryCharts`, one
/// per 60 s of timer time) as a filled area over the ride's timer time.
///
/// ```
/// 128×64                                   128×32
///  ┌ banner: title, SAVED k/n ─────────┐    ┌ banner ───────────────────────────┐
///   312 │      ▄▄█▄      ▄              ║    312 │   ▄██▄  ▄▄                    ║
///       │   ▄▄█████▄▄▄▄▄██▄▄▄▄          ║     95 │▄▄███████████▄▄                ║
///    95 │▄▄████████████████████▄▄       ║        └───────────────────────────────
///       └───────────────────────────────
///       0                      1:02:03
/// ```
///
/// The labels left of the axis are the chart's top and bottom: the highest and lowest interval
/// average, in the unit of the page's title (km/h, bpm, W, m). On 128×64 the timer time is
/// under the axis (0 at the left, the ride's timer time at the right). Buckets with no data
/// (a sensor dropout) leave a gap. Draws without allocating.
public enum SummaryChartView {
    /// Width of the label column left of the vertical axis on the OLEDs: four characters and
    /// 2 px (`gutterWidth(_:)` on any panel).
    public static let gutterWidthPx = 26

    public static func gutterWidth(_ g: PanelGeometry) -> Int { g.fonts.text.widthPx(count: 4) + g.px(2) }

    /// Page titles and units: the title says the unit the labels are in.
    public static func title(_ q: Quantity) -> String {
        switch q {
        case .speed: "SPEED KM/H"
        case .heartRate: "HR BPM"
        case .power: "POWER W"
        case .cadence: "CADENCE RPM"
        case .altitude: "ALTITUDE M"
        default: q.name.uppercased()
        }
    }

    /// A value in the unit the page shows (speed in km/h; the others as recorded).
    @inline(__always)
    static func shown(_ q: Quantity, _ v: Double) -> Double { q == .speed ? v * 3.6 : v }

    /// Writes an axis label: one decimal for speeds under 100 km/h, whole numbers otherwise.
    public static func writeLabel(_ q: Quantity, _ v: Double, into text: inout TextBuffer) {
        text.clear()
        let s = shown(q, v)
        text.append(s, decimals: q == .speed && abs(s) < 100 ? 1 : 0)
    }

    /// Draws the chart of `q` below `top` (the row under the page's banner), placed and lettered
    /// for the panel's `geometry` (the canvas's size by default), above row `height` (the
    /// canvas's foot by default; a pairing code's status line).
    public static func draw(_ charts: SummaryCharts, _ q: Quantity, timerTimeMs: Int64, top: Int, geometry: PanelGeometry? = nil,
                            height bottom: Int? = nil, into canvas: inout Framebuffer, text: inout TextBuffer) {
        let width = canvas.width, height = bottom ?? canvas.height
        let g = geometry ?? PanelGeometry(width: width, height: canvas.height)
        let tall = g.isTall, small = g.fonts.text, title = g.fonts.title
        guard let series = charts.series(q) else {
            canvas.drawText("NO DATA", font: title, in: Rect(x: 0, y: top + (height - top - title.height) / 2, width: width, height: title.height),
                            alignment: .center)
            return
        }
        var lo = Double.infinity, hi = -Double.infinity
        for v in series where !v.isNaN {
            lo = min(lo, v)
            hi = max(hi, v)
        }
        // Axes: the vertical one right of the labels, the baseline under the plot.
        let axisX = gutterWidth(g), line = g.px(1)
        let baselineY = tall ? height - small.height + line : height - line
        canvas.verticalLine(x: axisX, y: top, length: baselineY - top + line, thickness: line)
        canvas.horizontalLine(x: axisX, y: baselineY, length: width - axisX, thickness: line)
        let plotX = axisX + line
        let plotWidth = width - plotX
        let plotTop = top + 1
        let plotHeight = baselineY - plotTop
        let span = hi - lo
        let n = series.count
        // Each column averages the buckets that fall on it; a short ride's buckets span columns.
        for c in 0..<plotWidth {
            let b0 = c * n / plotWidth
            let b1 = max(b0 + 1, (c + 1) * n / plotWidth)
            var sum = 0.0, count = 0
            for b in b0..<min(b1, n) where !series[b].isNaN {
                sum += series[b]
                count += 1
            }
            guard count > 0 else { continue }
            let v = sum / Double(count)
            let fraction = span > 1e-9 ? (v - lo) / span : 0.5
            let barHeight = 1 + Int((fraction * Double(plotHeight - 1)).rounded())
            canvas.verticalLine(x: plotX + c, y: baselineY - barHeight, length: barHeight)
        }
        // Labels: the top and bottom of the chart, right-aligned against the axis.
        let labelWidth = axisX - g.px(2)
        writeLabel(q, hi, into: &text)
        canvas.drawText(text, font: small, in: Rect(x: 0, y: top - line, width: labelWidth, height: small.height), alignment: .right)
        writeLabel(q, lo, into: &text)
        canvas.drawText(text, font: small, in: Rect(x: 0, y: baselineY - small.height, width: labelWidth, height: small.height),
                        alignment: .right)
        guard tall else { return }
        // Timer time along the baseline: 0 and the ride's timer time.
        text.clear()
        text.append(UInt8(ascii: "0"))
        canvas.drawText(text, font: small, x: plotX, y: baselineY - line)
        text.clear()
        text.append(clockMs: timerTimeMs)
        canvas.drawText(text, font: small, in: Rect(x: plotX, y: baselineY - line, width: plotWidth, height: small.height), alignment: .right)
    }
}
