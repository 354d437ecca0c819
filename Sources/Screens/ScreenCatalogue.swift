import AppCore
import Display
import RideModel

/// Renders screen values the way the device does: renderer -> framebuffer -> driver -> bus.
/// Here the bus is the SSD1306 emulator, so the image read back is what the panel would show,
/// byte for byte through the driver.
public struct EmulatedPanel: Sendable {
    public private(set) var pipeline: DisplayPipeline
    public private(set) var emulator: SSD1306Emulator

    public init(panel: PanelConfiguration = PanelConfiguration()) {
        pipeline = DisplayPipeline(panel: panel)
        emulator = SSD1306Emulator(controller: panel.controller, height: panel.height)
        do { try pipeline.start(bus: &emulator) } catch { preconditionFailure("the emulator never fails: \(error)") }
    }

    public var driver: DisplayDriver { pipeline.driver }

    /// Draws `model`, sends every changed page, and returns the panel image.
    public mutating func show(_ model: ScreenModel) -> Framebuffer {
        pipeline.show(model)
        do { try pipeline.flushAll(bus: &emulator) } catch { preconditionFailure("the emulator never fails: \(error)") }
        return emulator.panelImage()
    }
}

extension String {
    func replacingUnderscores() -> String { String(map { $0 == "_" ? " " : $0 }) }
}

/// Every screen and overlay with representative values: the goldens in Tests/DisplayTests and
/// the pictures in docs/screens come from this list.
public enum ScreenCatalogue {
    public struct Entry: Sendable {
        /// File name stem, e.g. "running-1".
        public var name: String
        public var caption: String
        /// Panel height (64 or 32).
        public var height: Int
        public var model: ScreenModel
    }

    /// A typical moment of a ride: 1:02:03 in, 31.7 km/h, 32.45 km, HR 148 (zone 3),
    /// 235 W (zone 3), 88 rpm, lap 3 at 12:34.
    public static func riding() -> ScreenModel {
        var m = ScreenModel()
        m.mode = .running(page: 0)
        m.timerMs = 3_723_000
        m.elapsedMs = 3_901_000
        m.lapTimerMs = 754_000
        m.lapNumber = 3
        for role in SensorRole.allCases { m.sensors[Int(role.rawValue)] = .connected }
        m[.speed] = 31.7 / 3.6
        m[.distance] = 32_450
        m[.heartRate] = 148
        m[.heartRateZone] = 3
        m[.power] = 235
        m[.powerZone] = 3
        m[.cadence] = 88
        m[.averageSpeed] = 28.9 / 3.6
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
            .init(id: "ble:F2:3A:91:0C:44:17", kind: .heartRate, name: "HRM-Dual", state: "connected", batteryPercent: 82),
            .init(id: "ant:24681/11/0", kind: .power, state: "searching"),
            .init(id: "ble:D8:10:6E:2B:90:51", kind: .speedCadence, name: "RPM Cadence", state: "lost", batteryPercent: 100),
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
        paired.sensorsMenu.setPaired(sensors.sensorsMenu.paired + [.init(id: "ble:C4:7F:21:9A:03:EE", kind: .power, name: "ASSIOMA 21044", state: "searching")])
        paired.sensorsMenu.cursor = 3
        paired.sensorsMenu.message = "PAIRED"
        add("sensors-paired", "Sensors: just paired (written to the config file; the bridge connects it)", paired)
        var smallSensors = sensors
        smallSensors.sensorsMenu.cursor = 0

        var pairing = idle
        pairing.pairingCode = 482_913
        add("pairing-code", "A companion's pairing code (docs/companion.md), shown until the phone has paired", pairing)
        var badge = riding()
        badge.pairingCode = 482_913
        add("pairing-badge", "A companion's pairing code while riding: a corner badge, never over the ride (any button clears it)", badge)

        var done = ScreenModel()
        done.summary = summary()
        for (page, layout) in SummaryPage.standard.enumerated() {
            done.mode = .summary(page: page)
            add("summary-\(page + 1)", "Summary page \(page + 1): " + chartCaption(layout), done)
        }
        done.mode = .confirmDiscard
        add("confirm-discard", "Discard confirmation (long press LAP on the summary)", done)

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

        // The 0.91" 128x32 panel.
        var small = ride
        small.mode = .running(page: 0)
        add("small-running-1", "128x32 panel: running page 1", height: 32, small)
        small.mode = .running(page: 1)
        add("small-running-2", "128x32 panel: running page 2", height: 32, small)
        small.mode = .paused
        add("small-paused", "128x32 panel: paused", height: 32, small)
        var smallIdle = idle
        smallIdle.mode = .idle
        add("small-idle", "128x32 panel: idle", height: 32, smallIdle)
        smallIdle.mode = .countdown(2)
        add("small-countdown", "128x32 panel: countdown", height: 32, smallIdle)
        var smallDone = done
        smallDone.mode = .summary(page: 0)
        add("small-summary-1", "128x32 panel: summary page 1 (first two rows)", height: 32, smallDone)
        smallDone.mode = .summary(page: 2)
        add("small-summary-3", "128x32 panel: summary page 3", height: 32, smallDone)
        for page in 3..<SummaryPage.standard.count {
            smallDone.mode = .summary(page: page)
            add("small-summary-\(page + 1)", "128x32 panel: summary page \(page + 1), " + chartCaption(SummaryPage.standard[page]), height: 32, smallDone)
        }
        smallDone.mode = .confirmDiscard
        add("small-confirm-discard", "128x32 panel: discard confirmation", height: 32, smallDone)
        small.mode = .running(page: 0)
        small.overlay = .sensorLost(.power)
        add("small-alert", "128x32 panel: alert overlay", height: 32, small)
        out += positionEntries(ride: ride, idle: idle)
        out += navigationEntries(ride: ride, idle: idle)
        add("small-sensors", "128x32 panel: Sensors, the selected row only", height: 32, smallSensors)
        return out
    }
}
