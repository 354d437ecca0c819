import AppCore
import ArgumentParser
import BoardIO
import Display
import Glibc
import Screens

/// `bikesim screens`: renders every screen and overlay through the SSD1306 driver and emulator
/// and writes them as PNG (docs/screens), and measures the bytes the driver sends.
struct ScreensCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "screens",
        abstract: "Write every screen as a PNG rendered through the SSD1306 driver and emulator.")

    @Option(help: "Directory for the PNG files (created if missing).")
    var out: String = "docs/screens"

    @Option(help: "Each panel pixel becomes a square of this many image pixels (1-16).")
    var scale: Int = 2

    @Flag(help: "Also write plain PBM files next to the PNGs.")
    var pbm = false

    @Option(help: "Also write a Markdown page showing every picture (e.g. docs/screens.md).")
    var markdown: String?

    @Option(help: "Also write the README's picture of the demo (running page 1, 4x) to this PNG (e.g. docs/demo.png).")
    var demo: String?

    @Flag(help: "Measure the I2C bytes sent per second on a running page at 1 Hz, and print them.")
    var measure = false

    @Option(help: "Seconds of riding to measure.")
    var seconds: Int = 600

    func validate() throws {
        guard (1...16).contains(scale) else { throw ValidationError("--scale must be 1...16") }
        guard seconds >= 1 && seconds <= 86_400 else { throw ValidationError("--seconds must be 1...86400") }
    }

    func run() throws {
        if measure {
            printMeasurement()
            return
        }
        if mkdir(out, 0o755) != 0 && errno != EEXIST {
            throw ValidationError("cannot create \(out): \(SystemError.current("mkdir", out).message)")
        }
        var panels: [String: EmulatedPanel] = [:]
        for entry in ScreenCatalogue.entries() {
            let key = "\(entry.width)x\(entry.height)"
            var panel = panels[key] ?? entry.emulatedPanel()
            let image = panel.show(entry.model)
            panels[key] = panel
            // The large panel's pictures at half the scale: about the same size on the page.
            let s = entry.width > 128 ? max(1, scale / 2) : scale
            try write(ImageEncoding.png(image, scale: s), to: "\(out)/\(entry.name).png")
            if pbm { try write(ImageEncoding.pbm(image), to: "\(out)/\(entry.name).pbm") }
            print("\(out)/\(entry.name).png  \(entry.caption)")
        }
        if let markdown { try write(Array(gallery(markdownPath: markdown).utf8), to: markdown) }
        if let demo, let entry = ScreenCatalogue.entries().first(where: { $0.name == "running-1" }) {
            var panel = entry.emulatedPanel()
            try write(ImageEncoding.png(panel.show(entry.model), scale: 4), to: demo)
            print("\(demo)  the demo's running page (README)")
        }
    }

    /// docs/screens.md: every picture under a heading per screen kind, with the commands that
    /// regenerate the pictures and the goldens.
    private func gallery(markdownPath: String) -> String {
        var directory = ""
        if let slash = markdownPath.lastIndex(of: "/") { directory = String(markdownPath[..<slash]) + "/" }
        let relative = !directory.isEmpty && out.hasPrefix(directory) ? String(out.dropFirst(directory.count)) : out
        var md = """
        # Screens

        Every screen and alert overlay of the bike computer, as each panel shows it: the 128x64 OLED
        (the default), the 0.91" 128x32 OLED and the 2.7" 400x240 memory LCD. Each picture is
        rendered by the real code path: `ScreenRenderer` draws the app core's `ScreenModel` into a
        framebuffer, `DisplayDriver` turns the changed pages into SSD1306 I²C transactions (the
        memory LCD: `SharpMemoryDriver`, its changed lines as SPI transactions), and
        `SSD1306Emulator` (`SharpMemoryEmulator`) interprets that byte stream into the panel image
        (\(scale)x scale for the OLEDs, \(max(1, scale / 2))x for the 400x240 panel; 1-bit PNG).
        The same screens at the three sizes are the golden images of `Tests/DisplayTests` (PBM files
        in `Tests/DisplayTests/Goldens/`), so a changed pixel fails the tests.

        Regenerate the pictures and this page:

        ```sh
        swift run bikesim screens --out docs/screens --markdown docs/screens.md --demo docs/demo.png
        ```

        Regenerate the goldens after an intended change to a screen (then review the diff of the PBM
        files, which are plain text, before committing):

        ```sh
        UPDATE_GOLDENS=1 swift test --filter DisplayTests
        ```

        A metric with no live data shows `--` (never the last value, never 0); the timer is shown on
        every running page. Each running page is described once for every panel (`PageDesign` in
        `Sources/Screens/PageDesign.swift`, the pages in `RunningPages` and `PositionPages`): rows of
        fields (content, value size, caption placement) or a graphic, each row and field shown on
        the size classes it names (compact 128x32, regular 128x64 and 128x128, large 400x240),
        laid out from the panel's size and fonts (`PanelGeometry`). The 400x240 panel shows more
        fields at once (averages, NP, the lap's figures) and a row of fields under the map. A value
        that does not fit its frame is drawn a font size smaller (a caption beside it gives way to
        its short form first); nothing is drawn outside its field or the panel
        (`LayoutPropertyTests`). The dots at the right edge show which data page is on screen.

        The summary ends with chart pages (`SummaryChartView` in `Sources/Screens/SummaryChart.swift`):
        speed, heart rate and power over the ride's timer time, drawn from the ride's interval table
        (`IntervalTable`, one time-weighted average per 60 s of timer time). The labels left of the
        axis are the chart's top and bottom (the highest and lowest minute average, in the unit of
        the title); on 128x64 the timer time runs along the bottom. An altitude page joins them when
        the GPS does (the interval table already buckets altitude; see `SummaryPage.standard`).

        Fonts: Terminus Font (SIL OFL 1.1), see [display.md](display.md#fonts).


        """
        let sections = [("Idle", "idle"), ("Countdown", "countdown"), ("Running", "running"), ("Paused", "paused"),
                        ("Summary", "summary"), ("Discard confirmation", "confirm"), ("Alert overlays", "alert"), ("Companion pairing", "pairing"),
                        ("Sensors (finding and pairing)", "sensors"), ("Rear radar", "radar"), ("Navigation: following a course (docs/navigation.md)", "nav"),
                        ("Courses (choosing one)", "courses"), ("128x32 panel", "small"), ("400x240 memory LCD", "large")]
        let entries = ScreenCatalogue.entries()
        for (title, prefix) in sections {
            md += "## \(title)\n\n"
            for e in entries where e.name.hasPrefix(prefix) {
                md += "**\(e.name)**: \(e.caption)\n\n![\(e.name)](\(relative)/\(e.name).png)\n\n"
            }
        }
        return md
    }

    private func write(_ bytes: [UInt8], to path: String) throws {
        let fd = try FileDescriptor.open(path, O_WRONLY | O_CREAT | O_TRUNC)
        defer { fd.close() }
        try fd.writeAll(bytes)
    }

    /// A ride on running page 1 with speed, distance and the timer changing every second (and
    /// heart rate/power/cadence on the other fields), frames presented at 1 Hz, flushed one page
    /// per loop turn; compared with sending the full frame every second.
    private func printMeasurement() {
        for refresh in [false, true] {
        if refresh { print("with the recovery refresh (state commands + full frame every \(DisplayDriver.refreshPeriodMs) ms, as on the board):") }
        for page in 0..<3 {
            let panel = PanelConfiguration()
            var renderer = ScreenRenderer()
            var driver = DisplayDriver(panel: panel)
            var bus = CountingBus()
            var framebuffer = Framebuffer.oled128x64()
            var model = ScreenCatalogue.riding()
            model.mode = .running(page: page)
            // First frame (start-up) is not counted.
            renderer.render(model, into: &framebuffer)
            driver.present(&framebuffer)
            try? driver.flushAll(bus: &bus)
            let before = driver.statistics
            var maxStepUs = 0
            var state: UInt64 = 0x9E37_79B9_7F4A_7C15
            func noise() -> Double {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                return Double(state >> 33) / Double(1 << 31) - 0.5
            }
            if refresh { driver.refreshIfDue(atMs: 0) }
            for second in 0..<seconds {
                if refresh { driver.refreshIfDue(atMs: Int64(second + 1) * 1000) }
                model.timerMs += 1000
                model.elapsedMs += 1000
                model.lapTimerMs += 1000
                let speed = 8.8 + 1.5 * noise()
                model[.speed] = speed
                model[.distance]! += speed
                model[.heartRate] = (148 + 4 * noise()).rounded()
                model[.power] = (235 + 60 * noise()).rounded()
                model[.cadence] = (88 + 6 * noise()).rounded()
                renderer.render(model, into: &framebuffer)
                driver.present(&framebuffer)
                while driver.hasPendingPages {
                    let s0 = driver.statistics
                    _ = try? driver.flushStep(bus: &bus)
                    var step = driver.statistics
                    step.transactions -= s0.transactions
                    step.payloadBytes -= s0.payloadBytes
                    maxStepUs = max(maxStepUs, step.busTimeUs())
                }
            }
            let s = driver.statistics
            let wire = s.wireBytes - before.wireBytes
            let perSecond = Double(wire) / Double(seconds)
            let pageWrites = Double(s.pageWrites - before.pageWrites) / Double(seconds)
            print("running page \(page + 1): \(fmt(perSecond)) bytes/s on the wire (\(fmt(pageWrites)) page writes/s), longest flush step \(maxStepUs) us at 400 kHz")
        }
        }
        var full = DisplayDriver(panel: PanelConfiguration())
        var bus = CountingBus()
        full.invalidate()
        try? full.flushAll(bus: &bus)
        print("full frame: \(full.statistics.wireBytes) bytes on the wire = \(full.statistics.busTimeUs()) us at 400 kHz; at 1 Hz \(full.statistics.wireBytes) bytes/s")
    }

    private func fmt(_ v: Double) -> String {
        let t = Int((v * 10).rounded())
        return "\(t / 10).\(t % 10)"
    }
}
