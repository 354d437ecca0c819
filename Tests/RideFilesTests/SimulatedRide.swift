import TestSupport
import RideModel
import RideFiles


/// A ride's records generated from a seed, with what the generator knows independently of the
/// encoder: how many 1 Hz rows it produced while running, its pauses, gaps and RR intervals.
struct SimulatedRide {
    var seed: UInt64
    var records: [RideRecord] = []
    var runningSeconds = 0          // distinct seconds with a sample while running
    var positionSeconds = 0         // ... of which with a position
    var pauses = 0, autoPauses = 0, gaps = 0, laps = 1
    var rrCount = 0
    var outdoor = false
    var startUnixMs: Int64 = 0

    init(seed: UInt64, seconds: Int? = nil) {
        self.seed = seed
        var rng = SeededRandom(seed: seed)
        outdoor = rng.chance(0.5)
        let duration = seconds ?? rng.int(300...2400)
        let powerZones = rng.chance(0.6) ? try! ZoneConfiguration(quantity: .power, boundaries: [140, 190, 230, 270, 320, 400]) : nil
        let hrZones: ZoneConfiguration? = rng.chance(0.85) ? .defaultHeartRate : nil
        let settings = RideSettings(ftpW: 250, heartRateZones: hrZones, powerZones: powerZones)
        startUnixMs = UTCDateTime.unixMs(year: 2026, month: 1 + rng.int(0...11), day: 1 + rng.int(0...27),
                                         hour: rng.int(5...18), minute: rng.int(0...59), second: rng.int(0...59)) + Int64(rng.int(0...999))
        let anchor = WallClockAnchor(monotonic: MonotonicInstant(milliseconds: 1_000), wall: WallClockTime(unixMs: startUnixMs - 4_000, trusted: true))
        let id = RideID(random: rng.next(), rng.next())
        records.append(.header(RideHeader(rideID: id, anchor: anchor, settings: settings, activity: outdoor ? "cycling_road" : "cycling_indoor")))
        records.append(.metadata(key: RideMetadataKey.product, value: "42"))
        records.append(.metadata(key: RideMetadataKey.serial, value: String(rng.int(1...4_000_000_000))))
        records.append(.metadata(key: RideMetadataKey.softwareVersion, value: "0.12"))
        records.append(.metadata(key: "sensor.hr", value: SensorIdentity(slot: "hr", source: rng.chance(0.5) ? .ant : .ble, kind: .heartRate,
                                                                           id: String(rng.int(1...65535)), batteryPercent: rng.int(5...100)).metadataValue))
        records.append(.metadata(key: "sensor.power", value: SensorIdentity(slot: "power", source: .ant, kind: .power, id: String(rng.int(1...65535)),
                                                                              manufacturer: 1, product: 7, name: "Power & <meter>").metadataValue))
        records.append(.metadata(key: "sensor.broken", value: "source=usb;type=toaster"))

        let start = MonotonicInstant(milliseconds: 5_000)
        records.append(.event(RideEvent(.start, at: start)))
        var t = start.milliseconds
        var running = true
        var distance = rng.double(0...5000) // a counter that does not start at 0
        var lat = 47.0 + rng.double(-1...1), lon = 8.0 + rng.double(-1...1), alt = rng.double(200...900)
        var ascent = 0.0, descent = 0.0
        var hr = 110.0, power = 180.0, cadence = 85.0
        var hrDropoutUntil: Int64 = 0
        var lastRowSecond = Int64.min
        var lastPositionSecond = Int64.min
        var lapCount = 1
        let end = start.milliseconds + Int64(duration) * 1000
        while t < end {
            let jitter = Int64(rng.int(0...300))
            let at = MonotonicInstant(milliseconds: t + jitter)
            // events
            if running, rng.chance(0.004) {
                let auto = rng.chance(0.5)
                records.append(.event(RideEvent(.pause, at: at, trigger: auto ? .auto : .manual)))
                pauses += 1; if auto { autoPauses += 1 }
                running = false
                // samples while paused are recorded but not counted
                for k in 1...rng.int(1...3) {
                    records.append(.sample(Sample(.heartRate, hr, at: at.advanced(byMs: Int64(k) * 1000))))
                }
                t += Int64(rng.int(5...90)) * 1000
                records.append(.event(RideEvent(.resume, at: MonotonicInstant(milliseconds: t + 400), trigger: auto ? .auto : .manual)))
                running = true
                t += 1000
                continue
            }
            if running, rng.chance(0.003), gaps < 2 {
                // a crash: nothing recorded for the gap; recovery journals the gap at the last point
                let gapMs = Int64(rng.int(10...120)) * 1000
                records.append(.event(RideEvent(.gap, at: MonotonicInstant(milliseconds: t - 1000 + 300), value: gapMs)))
                gaps += 1
                t += gapMs + 1000
                continue
            }
            if running, rng.chance(0.002), lapCount < 40 {
                let trigger: Trigger = [.manual, .distance, .time].randomElement(using: &rng)!
                records.append(.event(RideEvent(.lap, at: at, trigger: trigger)))
                lapCount += 1
            }
            if rng.chance(0.002) { hrDropoutUntil = t + Int64(rng.int(5...40)) * 1000 }
            // samples
            hr = min(195, max(60, hr + rng.double(-3...3)))
            power = min(900, max(0, power + rng.double(-25...25)))
            cadence = power < 20 ? 0 : min(130, max(40, cadence + rng.double(-4...4)))
            let speed = max(0, 4 + power / 40 + rng.double(-0.5...0.5))
            distance += speed
            var wrote = false
            if t >= hrDropoutUntil {
                records.append(.sample(Sample(.heartRate, hr.rounded(), at: at))); wrote = true
                let rrN = rng.int(1...2)
                for k in 0..<rrN {
                    records.append(.series(Sample(.rrInterval, 60 / hr + rng.double(-0.02...0.02), at: at.advanced(byMs: Int64(k * 400)))))
                    rrCount += 1
                }
            }
            records.append(.sample(Sample(.power, power.rounded(), at: at)))
            records.append(.sample(Sample(.cadence, cadence.rounded(), at: at)))
            records.append(.sample(Sample(.speed, speed, at: at)))
            records.append(.sample(Sample(.distance, distance, at: at)))
            records.append(.sample(Sample(.pedalBalanceRight, rng.double(45...55).rounded(), at: at)))
            if rng.chance(0.5) {
                records.append(.sample(Sample(.torqueEffectivenessLeft, rng.double(60...90), at: at)))
                records.append(.sample(Sample(.pedalSmoothnessLeft, rng.double(15...30), at: at)))
            }
            wrote = true
            if outdoor, rng.chance(0.97) { // GPS misses now and then
                lat += rng.double(-0.0002...0.0002); lon += rng.double(-0.0002...0.0002)
                let climb = rng.double(-1...1.2)
                alt += climb
                ascent += max(0, climb); descent += max(0, -climb)
                records.append(.sample(Sample(.latitude, lat, at: at, origin: .measured)))
                records.append(.sample(Sample(.longitude, lon, at: at, origin: .measured)))
                records.append(.sample(Sample(.altitude, alt, at: at)))
                records.append(.sample(Sample(.ascent, ascent, at: at, origin: .generated)))
                records.append(.sample(Sample(.descent, descent, at: at, origin: .generated)))
                records.append(.sample(Sample(.grade, climb / max(1, speed) * 100, at: at, origin: .generated)))
                let sec = (at.milliseconds - start.milliseconds) / 1000
                if sec != lastPositionSecond { positionSeconds += 1; lastPositionSecond = sec }
            }
            if wrote {
                let sec = (at.milliseconds - start.milliseconds) / 1000
                if sec != lastRowSecond { runningSeconds += 1; lastRowSecond = sec }
            }
            t += 1000
        }
        laps = lapCount
        records.append(.event(RideEvent(.stop, at: MonotonicInstant(milliseconds: t + 200))))
        records.append(.finished(saved: true, at: MonotonicInstant(milliseconds: t + 3000)))
    }
}
