import AppCore
import Display
import RideModel
import Screens
import Testing

/// The summary's chart pages: what a column shows is the average of the interval buckets under
/// it, scaled between the lowest and highest bucket, with the labels saying those two.
@Suite struct SummaryChartTests {
    static func charts(_ q: Quantity, _ series: [Double]) -> SummaryCharts {
        var c = SummaryCharts()
        c.bucketCount = series.count
        c.averages[IntervalTable.chartedQuantities.firstIndex(of: q)!] = series
        return c
    }

    /// Height of the filled column at plot column `c` (pixels lit above the baseline, contiguous).
    static func columnHeight(_ fb: Framebuffer, x: Int, baselineY: Int, top: Int) -> Int {
        var h = 0
        var y = baselineY - 1
        while y > top && fb[x, y] { h += 1; y -= 1 }
        return h
    }

    static func draw(_ charts: SummaryCharts, _ q: Quantity, height: Int) -> Framebuffer {
        var fb = Framebuffer(width: 128, height: height)
        var text = TextBuffer()
        SummaryChartView.draw(charts, q, timerTimeMs: 3_600_000, top: height >= 64 ? 12 : 10, into: &fb, text: &text)
        return fb
    }

    @Test(arguments: [64, 32])
    func columnsFollowTheBucketAveragesBetweenLowestAndHighest(height: Int) {
        // 101 plot columns, 101 buckets: one bucket per column, rising from 100 W to 300 W.
        let series = (0..<101).map { 100 + 2 * Double($0) }
        let fb = Self.draw(Self.charts(.power, series), .power, height: height)
        let top = height >= 64 ? 12 : 10
        let baselineY = height >= 64 ? height - 11 : height - 1
        let plotHeight = baselineY - (top + 1)
        let plotX = SummaryChartView.gutterWidthPx + 1
        for (c, v) in series.enumerated() {
            let expected = 1 + Int(((v - 100) / 200 * Double(plotHeight - 1)).rounded())
            #expect(Self.columnHeight(fb, x: plotX + c, baselineY: baselineY, top: top) == expected, "column \(c) (\(v) W)")
        }
        // The axes.
        for y in top...baselineY { #expect(fb[SummaryChartView.gutterWidthPx, y], "vertical axis at y \(y)") }
        for x in SummaryChartView.gutterWidthPx..<128 { #expect(fb[x, baselineY], "baseline at x \(x)") }
    }

    @Test func aColumnAveragesTheBucketsUnderItAndGapsStayEmpty() {
        // 202 buckets over 101 columns: column c averages buckets 2c and 2c+1.
        var series: [Double] = []
        for c in 0..<101 { series += c == 50 ? [.nan, .nan] : [Double(c % 2 == 0 ? 100 : 140), Double(c % 2 == 0 ? 120 : 160)] }
        let fb = Self.draw(Self.charts(.heartRate, series), .heartRate, height: 64)
        let plotX = SummaryChartView.gutterWidthPx + 1
        // lowest bucket 100, highest 160; column averages 110 (even) and 150 (odd).
        let plotHeight = 53 - 13
        let even = 1 + Int((10.0 / 60 * Double(plotHeight - 1)).rounded())
        let odd = 1 + Int((50.0 / 60 * Double(plotHeight - 1)).rounded())
        for c in 0..<101 where c != 50 {
            #expect(Self.columnHeight(fb, x: plotX + c, baselineY: 53, top: 12) == (c % 2 == 0 ? even : odd), "column \(c)")
        }
        #expect(Self.columnHeight(fb, x: plotX + 50, baselineY: 53, top: 12) == 0, "no data: a gap")
    }

    @Test func noDataSaysSo() {
        let fb = Self.draw(SummaryCharts(), .power, height: 64)
        var lit = 0
        for y in 12..<64 { for x in 0..<128 where fb[x, y] { lit += 1 } }
        #expect(lit > 0, "NO DATA is written")
        // No axes without data.
        #expect((SummaryChartView.gutterWidthPx..<128).contains { !fb[$0, 53] }, "no baseline")
    }

    @Test func labelsAreTheHighestAndLowestInThePagesUnit() {
        var text = TextBuffer()
        SummaryChartView.writeLabel(.speed, 10, into: &text)
        #expect(String(decoding: Array(text), as: UTF8.self) == "36.0", "m/s shown as km/h")
        SummaryChartView.writeLabel(.power, 312.4, into: &text)
        #expect(String(decoding: Array(text), as: UTF8.self) == "312")
        // The top label is drawn: the label column has ink on the top label's rows.
        let fb = Self.draw(Self.charts(.power, [120, 312]), .power, height: 64)
        var ink = 0
        for y in 12..<22 { for x in 0..<(SummaryChartView.gutterWidthPx - 1) where fb[x, y] { ink += 1 } }
        #expect(ink > 0)
    }

    /// AppCore pages through the summary; the renderer draws its pages: the two must agree.
    @Test func appCorePagesThroughEverySummaryPage() {
        #expect(AppConfiguration().summaryPageCount == SummaryPage.standard.count)
    }
}
