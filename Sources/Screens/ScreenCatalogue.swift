import AppCore
import Display
import RideModel

/// Renders screen values the way the device does: renderer -> framebuffer -> driver -> bus.
/// Here the bus is the panel's emulator (the SSD1306's for an OLED, the Sharp memory LCD's
/// wire for a memory LCD), so the image read back is what the panel would show, byte for byte
/// through the driver.
public struct EmulatedPanel: Sendable {
    enum Wire: Sendable {
        case oled(DisplayPipeline, SSD1306Emulator)
        case memoryLCD(PanelPipeline<SharpMemoryDriver>, SharpMemoryEmulator)
    }

    var wire: Wire

    /// An SSD1306/SH1106 OLED.
    public init(panel: PanelConfiguration = PanelConfiguration()) {
        var pipeline = DisplayPipeline(panel: panel)
        var emulator = SSD1306Emulator(controller: panel.controller, height: panel.height)
        do { try pipeline.start(bus: &emulator) } catch { preconditionFailure("the emulator never fails: \(error)") }
        wire = .oled(pipeline, emulator)
    }

    /// A Sharp memory LCD.
    public init(memoryLCD model: SharpMemoryDriver.Model) {
        var pipeline = PanelPipeline(driver: SharpMemoryDriver(model: model))
        var emulator = SharpMemoryEmulator(model: model)
        do { try pipeline.start(bus: &emulator) } catch { preconditionFailure("the emulator never fails: \(error)") }
        wire = .memoryLCD(pipeline, emulator)
    }

    /// The panel the device uses at this size: the SSD1306 OLED at 128×64 and 128×32, a Sharp
    /// memory LCD otherwise (400×240, 128×128).
    public init(width: Int, height: Int) {
        if width == 128 && (height == 64 || height == 32) {
            self.init(panel: PanelConfiguration(height: height))
        } else {
            self.init(memoryLCD: SharpMemoryDriver.Model(width: width, height: height))
        }
    }

    public var width: Int {
        switch wire {
        case .oled(let p, _): p.driver.width
        case .memoryLCD(let p, _): p.driver.width
        }
    }

    public var height: Int {
        switch wire {
        case .oled(let p, _): p.driver.height
        case .memoryLCD(let p, _): p.driver.height
        }
    }

    /// What the driver sent so far.
    public var statistics: DisplayStatistics {
        switch wire {
        case .oled(let p, _): p.driver.statistics
        case .memoryLCD(let p, _): p.driver.statistics
        }
    }

    /// Draws `model`, sends every changed page (or line), and returns the panel image.
    public mutating func show(_ model: ScreenModel) -> Framebuffer {
        do {
            switch wire {
            case .oled(var p, var e):
                p.show(model)
                try p.flushAll(bus: &e)
                wire = .oled(p, e)
                return e.panelImage()
            case .memoryLCD(var p, var e):
                p.show(model)
                try p.flushAll(bus: &e)
                wire = .memoryLCD(p, e)
                return e.panelImage()
            }
        } catch {
            preconditionFailure("the emulator never fails: \(error)")
        }
    }
}

extension String {
    func replacingUnderscores() -> String { String(map { $0 == "_" ? " " : $0 }) }
}

/// Every screen and overlay with representative values: the goldens in Tests/DisplayTests and
/// the pictures in docs/screens come from this list.
public enum ScreenCatalogue {
    public struct Entry: Sendable {
        /// File name stem, e.g. "running-1"; "small-..." on 128x32, "large-..." on 400x240.
        public var name: String
        public var caption: String
        /// Panel size: 128x64, 128x32 or 400x240.
        public var width: Int = 128
        public var height: Int
        public var model: ScreenModel

        /// The panel the device shows it on (`EmulatedPanel(width:height:)`).
        public func emulatedPanel() -> EmulatedPanel { EmulatedPanel(width: width, height: height) }
    }

    /// The sizes every screen is drawn at: name prefix, caption prefix, width, height.
    public static let sizes: [(prefix: String, caption: String, width: Int, height: Int)] = [
        ("", "", 128, 64), ("small-", "128x32 panel: ", 128, 32), ("large-", "400x240 panel: ", 400, 240),
    ]

    /// A typical moment of a ride: 1:02:03 in, 31.7 km/h, 32.45 km, HR 148 (zone 3),
    /// 235 W (zone 3), 88 rpm, lap 3 at 12:34.
    public static func riding() -> ScreenModel {
        var m = ScreenModel()
        m.mode = .running(page: 0)
        m.timerMs = 3_723_000
        m.elapsedMs = 3_901_000
        m.lapTimerMs = 754_000
        m.lapNumber = 3
        for role in SensorRole.allCases where role != .radar { m.sensors[Int(role.rawValue)] = .connected }  // no radar paired
        m[.speed] = 31.7 / 3.6
        m[.distance] = 32_450
        m[.heartRate] = 148
        m[.heartRateZone] = 3
        m[.power] = 235
        m[.powerZone] = 3
        m[.cadence] = 88
        m[.averageSpeed] = 28.9 / 3.6
        // What the large panel's pages add: averages, NP, the lap's figures.
        m[.maxSpeed] = 52.3 / 3.6
        m[.averageHeartRate] = 142
        m[.averagePower] = 212
        m[.maxPower] = 688
        m[.normalizedPower] = 231
        m[.averageCadence] = 86
        m[.lapDistance] = 6_380
        m[.lapAverageSpeed] = 30.4 / 3.6
        m[.lapAveragePower] = 228
        m[.lapAverageHeartRate] = 151
        return m
    }

    /// A finished ride's summary, taken from a real (short) app-core ride and given
    /// representative figures.
    public static func summary() -> RideSummary? {
        var core = AppCore(randomSeed: 7)
        var now = MonotonicInstant(milliseconds: 0)
        func feed(_ input: AppInput) {
            core.handle(input)
            while core.drainEffect() != nil {}
        }
        feed(.command(.start, at: now))
        for _ in 0..<8 {
            now = now.advanced(byMs: 1000)
            feed(.tick(now))
        }
        feed(.command(.end, at: now))
        guard var s = core.summary ?? core.screen.summary else { return nil }
        s.saved = true
        s.timerTimeMs = 3_723_000
        s.elapsedTimeMs = 3_901_000
        s.movingTimeMs = 3_655_000
        s.distanceM = 32_450
        s.averageSpeedMps = 28.9 / 3.6
        s.maxSpeedMps = 52.3 / 3.6
        s.averageHeartRate = 142
        s.maxHeartRate = 176
        s.averagePowerW = 212
        s.maxPowerW = 688
        s.normalizedPowerW = 231
        s.averageCadence = 86
        s.maxCadence = 112
        s.lapCount = 3
        s.heartRateZoneTimes = ZoneTimes(milliseconds: [300_000, 900_000, 1_500_000, 800_000, 223_000])
        s.powerZoneTimes = ZoneTimes(milliseconds: [400_000, 700_000, 1_100_000, 900_000, 400_000, 180_000, 43_000])
        s.recovered = false
        s.charts = chartsOfARide(timerMs: s.timerTimeMs)
        return s
    }

    /// Interval averages of a representative 1:02:03 ride: a warm-up, three hard intervals with
    /// recoveries, a climb and a cool-down; the heart-rate strap drops out for two minutes.
    public static func chartsOfARide(timerMs: Int64) -> SummaryCharts {
        var c = SummaryCharts()
        c.bucketCount = Int((timerMs + c.intervalMs - 1) / c.intervalMs)
        var speed: [Double] = [], heart: [Double] = [], power: [Double] = [], cadence: [Double] = []
        for b in 0..<c.bucketCount {
            let interval = (b >= 15 && b < 35) && (b - 15) % 7 < 4   // 4 min on, 3 off
            let climb = b >= 42 && b < 50
            var p = b < 10 ? 120 + 8 * Double(b) : 190
            if interval { p = 300 + Double((b * 7) % 13) }
            if climb { p = 250 + Double((b * 5) % 11) }
            if b >= 57 { p = 130 }
            power.append(p)
            speed.append(climb ? 4.6 + 0.1 * Double(b % 3) : (p / 250) * 7.5 + 1.5)
            let lag = power[max(0, b - 1)]
            heart.append(b >= 26 && b < 28 ? .nan : 95 + 0.25 * lag + Double(b % 4))
            cadence.append(climb ? 72 : 88 + Double(b % 5))
        }
        for (q, series) in [(Quantity.speed, speed), (.heartRate, heart), (.power, power), (.cadence, cadence)] {
            if let i = IntervalTable.chartedQuantities.firstIndex(of: q) { c.averages[i] = series }
        }
        return c
    }

    /// "speed (km/h) over the ride's timer time, ..." for a chart page, else the page's title.
    static func chartCaption(_ page: SummaryPage) -> String {
        guard case .chart(let q)? = page.items.first else { return page.title.lowercased() }
        return "\(q.name.replacingUnderscores()) (\(page.title.split(separator: " ").last!.lowercased())) over the ride's timer time, "
            + "one column per minute average, labelled with the highest and lowest; a gap where the sensor had no data"
    }

    public static func entries() -> [Entry] {
        var out: [Entry] = []
        func add(_ name: String, _ caption: String, height: Int = 64, _ model: ScreenModel) {
            out.append(Entry(name: name, caption: caption, height: height, model: model))
        }
        let ride = riding()

        var idle = ScreenModel()
        idle.sensors[Int(SensorRole.heartRate.rawValue)] = .connected
        idle.sensors[Int(SensorRole.power.rawValue)] = .searching
        idle.sensors[Int(SensorRole.speed.rawValue)] = .connected
        idle.sensorBatteryPercent[Int(SensorRole.heartRate.rawValue)] = 82
        idle.sensorBatteryPercent[Int(SensorRole.speed.rawValue)] = 100
        add("idle", "Idle: expected sensors (filled = connected) with the battery each last reported, the least healthy one in words", idle)
        var idleWeak = idle
        idleWeak.sensors[Int(SensorRole.power.rawValue)] = .connected
        idleWeak.sensorBatteryPercent[Int(SensorRole.power.rawValue)] = 9
        add("idle-battery-low", "Idle: every sensor connected, the power meter's battery under 15 %", idleWeak)
        add("idle-no-sensors", "Idle with no sensors set up", ScreenModel())
        var idleLow = idle
        idleLow.storage = .low
        idleLow.sensors[Int(SensorRole.power.rawValue)] = .lost
        add("idle-storage-low", "Idle: a lost sensor (crossed out) and low storage", idleLow)

        for n in [3, 2, 1] {
            var c = idle
            c.mode = .countdown(n)
            if n == 1 { c.sensors[Int(SensorRole.power.rawValue)] = .connected }
            add("countdown-\(n)", "Countdown \(n): which expected sensors are connected", c)
        }

        for page in 0..<3 {
            var r = ride
            r.mode = .running(page: page)
            add("running-\(page + 1)", "Running, data page \(page + 1)", r)
        }
        var noData = ride
        for i in 0..<noData.metrics.count { noData.metrics[i] = nil }
        noData.lapNumber = 1
        for page in 0..<3 {
            noData.mode = .running(page: page)
            add("running-\(page + 1)-no-data", "Running page \(page + 1) with no live sensor data: \"--\", the timer still runs", noData)
        }

        var paused = ride
        paused.mode = .paused
        add("paused", "Paused: frozen timer, elapsed time still counting", paused)

        // The Sensors screen (PAGE on idle): paired sensors, a search, pairing and forgetting.
        var sensors = idle
        sensors.mode = .sensors
        sensors.sensorsMenu.setPaired([
            .init(id: "ble:F2:3A:91:0C:44:17", kind: .heartRate, name: "HRM-Dual", state: .connected, batteryPercent: 82),
            .init(id: "ant:24681/11/0", kind: .power, state: .searching),
            .init(id: "ble:D8:10:6E:2B:90:51", kind: .speedCadence, name: "RPM Cadence", state: .lost, batteryPercent: 100),
        ])
        add("sensors", "Sensors (PAGE on idle): the paired sensors with their state and battery; PAGE moves, LAP acts, START goes back", sensors)
        var forget = sensors
        forget.sensorsMenu.cursor = 1
        forget.sensorsMenu.page = .confirmForget(1)
        add("sensors-forget", "Sensors: LAP on a paired sensor asks before forgetting it (LAP again forgets, any other button keeps it)", forget)
        var searching = sensors
        searching.sensorsMenu.cursor = 3
        searching.sensorsMenu.page = .found
        searching.sensorsMenu.cursor = 0
        searching.sensorsMenu.searchEndsAt = MonotonicInstant(milliseconds: 30_000)
        searching.sensorsMenu.searchSecondsLeft = 22
        searching.sensorsMenu.found(.init(id: "ble:C4:7F:21:9A:03:EE", kind: .power, name: "ASSIOMA 21044", rssi: -58))
        searching.sensorsMenu.found(.init(id: "ant:31337/120/0", kind: .heartRate, rssi: -71))
        searching.sensorsMenu.found(.init(id: "ble:E9:55:0B:7C:12:A8", kind: .speedCadence, name: "Wahoo SPEED", rssi: -83))
        add("sensors-search", "Sensors: a search (LAP on SEARCH) lists what it finds with its signal; LAP pairs the one selected", searching)
        var paired = sensors
        paired.sensorsMenu.setPaired(sensors.sensorsMenu.paired + [.init(id: "ble:C4:7F:21:9A:03:EE", kind: .power, name: "ASSIOMA 21044", state: .searching)])
        paired.sensorsMenu.cursor = 3
        paired.sensorsMenu.message = "PAIRED"
        add("sensors-paired", "Sensors: just paired (written to the config file; the bridge connects it)", paired)

        var pairing = idle
        pairing.pairingCode = 482_913
        add("pairing-code", "A companion's pairing code (docs/companion.md), shown until the phone has paired", pairing)
        var badge = riding()
        badge.pairingCode = 482_913
        add("pairing-badge", "A companion's pairing code while riding: the status line under the page, which is laid out above it (any button clears it)", badge)
        var pausedCode = badge
        pausedCode.mode = .paused
        add("pairing-paused", "A companion's pairing code while paused: in the banner instead of PAUSED (any button clears it)", pausedCode)

        var done = ScreenModel()
        done.summary = summary()
        for (page, layout) in SummaryPage.standard.enumerated() {
            done.mode = .summary(page: page)
            add("summary-\(page + 1)", "Summary page \(page + 1): " + chartCaption(layout), done)
        }
        done.mode = .confirmDiscard
        add("confirm-discard", "Discard confirmation (long press LAP on the summary)", done)
        // A companion's pairing code on the other screens: the status line at the foot, as while
        // riding, the screen laid out above it.
        var countdownCode = idle
        countdownCode.mode = .countdown(3)
        var summaryCode = done
        summaryCode.mode = .summary(page: 0)
        var discardCode = done
        discardCode.mode = .confirmDiscard
        for (name, what, m) in [("countdown", "the countdown", countdownCode), ("summary", "the summary", summaryCode),
                                ("discard", "the discard confirmation", discardCode), ("sensors", "the Sensors screen", sensors)] {
            var coded = m
            coded.pairingCode = 482_913
            add("pairing-\(name)", "A companion's pairing code on \(what): the status line at the foot, the screen above it (any button clears it)", coded)
        }

        let alerts: [(String, Alert)] = [
            ("sensor-lost", .sensorLost(.heartRate)), ("sensor-back", .sensorBack(.power)),
            ("zone-drift-high", .zoneDrift(.power, above: true)), ("zone-drift-low", .zoneDrift(.heartRate, above: false)),
            ("back-in-zone", .backInZone(.power)), ("low-storage", .lowStorage), ("storage-full", .storageFull),
            ("storage-error", .storageError), ("ride-recovered", .rideRecovered), ("ride-in-progress", .rideInProgress),
            ("saving-ride", .savingRide), ("ride-saved", .rideSaved), ("ride-not-saved", .rideNotSaved), ("ride-discarded", .rideDiscarded), ("ride-full", .rideTableFull),
            ("low-sensor-battery", .lowSensorBattery(.heartRate, percent: 12)),
            ("sensor-config-unreadable", .sensorConfigUnreadable(line: 12)),
        ]
        for (name, alert) in alerts {
            var a = ride
            a.overlay = alert
            add("alert-\(name)", "Alert overlay: \(alert)", a)
        }

        out += positionEntries(ride: ride, idle: idle)
        out += RadarColumn.entries(ride: ride)
        out += navigationEntries(ride: ride, idle: idle)
        out += batteryEntries(ride: ride, idle: idle)
        // Every screen on the other panels too: the 0.91" 128x32 OLED and the 2.7" 400x240 LCD.
        var all: [Entry] = []
        for size in sizes {
            for e in out {
                all.append(Entry(name: size.prefix + e.name, caption: size.caption + e.caption, width: size.width, height: size.height,
                                 model: e.model))
            }
        }
        return all
    }
}
