import AppCore
import Device
import Positioning
import RealModule
import RideFiles
import RideModel
import Sensors

/// The synthetic ride's GPS as gpsd reports it: one TPV line a second (position along the route,
/// the ride's speed and altitude with a receiver's noise and wander, eph/epv of a good sky) and a
/// SKY line every five seconds, as the bytes the app's gpsd client hands on. While the fix is
/// lost (a scenario's `gps-lost`), the TPVs say mode 1 and carry no position.
public struct SimulatedGps: Sendable {
    public static let periodMs: Int64 = 1_000
    public static let phaseMs: Int64 = 420
    public static let satellitesUsed = 9
    public static let satellitesVisible = 12

    public internal(set) var route: SyntheticRoute
    /// No fix until this simulated time (ms).
    public var noFixUntilMs: Int64 = -1
    /// The route ridden from its end to its start (a scenario's `ride-backwards`).
    public var backwards = false
    /// Stretches ridden beside the route (a scenario's `detour`): from `startMs` for `lengthMs`,
    /// out to `offsetM` to the right of it and back.
    public var detours: [(startMs: Int64, lengthMs: Int64, offsetM: Double)] = []
    var rng: SplitMix64
    var wanderM = (north: 0.0, east: 0.0, up: 0.0)
    var reports = 0

    public init(seed: UInt64, route: SyntheticRoute = .demo) {
        self.route = route
        rng = SplitMix64(seed: seed ^ 0x6E55_0F1C)
    }

    mutating func noise() -> Double { Double(rng.next() >> 11) / Double(1 << 52) - 1 }

    /// The lines of one report (TPV, and SKY every fifth), for the ride at its current state;
    /// `unixMs` is the receiver's clock.
    public mutating func lines(unixMs: Int64, ride: SyntheticRide) -> [String] {
        reports += 1
        var out: [String] = []
        let time = Self.isoTime(unixMs)
        if ride.timeMs < noFixUntilMs {
            out.append("{\"class\":\"TPV\",\"device\":\"/dev/serial0\",\"mode\":1,\"time\":\"\(time)\"}")
        } else {
            // A receiver's error: a slow wander (a few metres) plus a little jitter.
            wanderM.north = wanderM.north * 0.97 + noise() * 0.4
            wanderM.east = wanderM.east * 0.97 + noise() * 0.4
            wanderM.up = wanderM.up * 0.98 + noise() * 0.6
            var p = route.position(atDistanceM: backwards ? route.lengthM - ride.distanceM : ride.distanceM)
            if backwards { p.trackDeg = (p.trackDeg + 180).truncatingRemainder(dividingBy: 360) }
            let (side, _) = detourOffset(atMs: ride.timeMs)
            let h = p.trackDeg * Geodesy.radiansPerDegree
            let (m, n) = Geodesy.radii(latDeg: p.latDeg)
            let lat = p.latDeg + (wanderM.north + noise() * 0.3 - side * Double.sin(h)) / (m * Geodesy.radiansPerDegree)
            let lon = p.lonDeg + (wanderM.east + noise() * 0.3 + side * Double.cos(h)) / (n * Geodesy.radiansPerDegree * Self.cosine(p.latDeg))
            let alt = ride.altitudeM + wanderM.up + noise() * 1.5
            var tpv = "{\"class\":\"TPV\",\"device\":\"/dev/serial0\",\"mode\":3,\"time\":\"\(time)\""
            tpv += ",\"lat\":\(decimalText(lat, decimals: 9)),\"lon\":\(decimalText(lon, decimals: 9))"
            tpv += ",\"altMSL\":\(decimalText(alt, decimals: 3)),\"speed\":\(decimalText(ride.speedMps, decimals: 3))"
            if ride.speedMps > 0.5 { tpv += ",\"track\":\(decimalText(p.trackDeg, decimals: 1))" }
            tpv += ",\"eph\":8.2,\"epv\":14.5}"
            out.append(tpv)
        }
        if reports % 5 == 1 {
            let used = ride.timeMs < noFixUntilMs ? 2 : Self.satellitesUsed
            out.append("{\"class\":\"SKY\",\"device\":\"/dev/serial0\",\"time\":\"\(time)\",\"hdop\":0.9,\"nSat\":\(Self.satellitesVisible),\"uSat\":\(used)}")
        }
        return out
    }

    static func cosine(_ deg: Double) -> Double { Double.cos(deg * Geodesy.radiansPerDegree) }

    /// How far to the right of the route a detour has taken the rider at `ms` (out at 6 m/s,
    /// along beside it, back at 6 m/s), and whether one is under way.
    public func detourOffset(atMs ms: Int64) -> (metres: Double, active: Bool) {
        for d in detours where ms >= d.startMs && ms < d.startMs + d.lengthMs {
            let rampMs = min(Double(d.lengthMs) / 3, d.offsetM / 6 * 1000)
            let t = Double(ms - d.startMs), left = Double(d.startMs + d.lengthMs - ms)
            return (d.offsetM * max(0, min(1, min(t, left) / max(1, rampMs))), true)
        }
        return (0, false)
    }

    /// "2026-06-06T07:00:01.000Z".
    static func isoTime(_ unixMs: Int64) -> String {
        let d = UTCDateTime(unixMs: unixMs)
        func pad(_ v: Int, _ w: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, w - s.count)) + s
        }
        return "\(pad(d.year, 4))-\(pad(d.month, 2))-\(pad(d.day, 2))T\(pad(d.hour, 2)):\(pad(d.minute, 2)):\(pad(d.second, 2)).\(pad(d.millisecond, 3))Z"
    }
}

/// The synthetic ride's barometer as the board's driver reads it: a BMP280 with the datasheet's
/// calibration, whose six data registers hold the raw readings of the pressure at the ride's
/// altitude (ISA, with the day's sea-level pressure). The app compensates them exactly as on the
/// board.
public struct SimulatedBarometer: Sendable {
    /// The datasheet's example calibration (BST-BMP280-DS001 §3.12), registers 0x88…0x9F.
    public static let calibrationRegisters: [UInt8] = [
        0x70, 0x6B, 0x43, 0x67, 0x18, 0xFC, 0x7D, 0x8E, 0x43, 0xD6, 0xD0, 0x0B,
        0x27, 0x0B, 0x8C, 0x00, 0xF9, 0xFF, 0x8C, 0x3C, 0xF8, 0xC6, 0x70, 0x17,
    ]
    public static let periodMs: Int64 = 1_000
    public static let phaseMs: Int64 = 640
    /// 25.08 °C with this calibration.
    static let temperatureADC: Int32 = 519_888

    /// The day's sea-level pressure (not the standard one: the app calibrates from GPS).
    public var seaLevelPa = 100_900.0
    let calibration = BMP280.Calibration(bytes: SimulatedBarometer.calibrationRegisters)!

    public init() {}

    /// The six data registers (press_msb … temp_xlsb) for `altitudeM`.
    public func dataRegisters(altitudeM: Double) -> [UInt8] {
        // p = p₀·(1 − h/scale)^(1/exponent), the inverse of PressureAltitude.altitudeM.
        let target = seaLevelPa / PressureAltitude.seaLevelPa(pressurePa: 1, altitudeM: altitudeM)
        // The compensated pressure falls as adc_P rises: bisect the 20-bit raw value.
        var lo: Int32 = 200_000, hi: Int32 = 800_000 // ≈ 138 kPa … 35 kPa
        while hi - lo > 1 {
            let mid = (lo + hi) / 2
            let p = BMP280.compensate(BMP280.Raw(pressure: mid, temperature: Self.temperatureADC), calibration)?.pressurePa ?? 0
            if p > target { lo = mid } else { hi = mid }
        }
        let adcP = hi, adcT = Self.temperatureADC
        return [UInt8(adcP >> 12 & 0xFF), UInt8(adcP >> 4 & 0xFF), UInt8((adcP & 0xF) << 4),
                UInt8(adcT >> 12 & 0xFF), UInt8(adcT >> 4 & 0xFF), UInt8((adcT & 0xF) << 4)]
    }
}

/// The simulated ride's GPS and barometer on the device's input path, scheduled with the bridge's
/// frames: each report's bytes go to `DeviceRuntime.receive` (`.gpsdLine`, `.barometerData`) as
/// the board's components hand them on, so the app's parser, fix rules, compensation and
/// altimetry run as on the board.
public struct SimulatedPositionFeed: Sendable {
    public static let gnss = SourceIdentity.onboard(.gnss)
    public static let barometerSource = SourceIdentity.onboard(.barometer)

    public private(set) var gps: SimulatedGps?
    public let barometer: SimulatedBarometer?
    /// The receiver's clock at simulated time 0 (the simulation's wall clock).
    public var startUnixMs: Int64 = UTCDateTime.unixMs(year: 2026, month: 6, day: 6, hour: 7)
    var gpsDueMs: Int64 = SimulatedGps.phaseMs
    var barometerDueMs: Int64 = SimulatedBarometer.phaseMs
    var gpsSilentUntilMs: Int64 = 0
    var barometerSilentUntilMs: Int64 = 0
    var calibrationSent = false
    /// Lines and readings handed to the device.
    public private(set) var gpsLines: UInt64 = 0
    public private(set) var barometerReadings: UInt64 = 0

    public init(seed: UInt64, gps: Bool, barometer: Bool) {
        self.gps = gps ? SimulatedGps(seed: seed) : nil
        self.barometer = barometer ? SimulatedBarometer() : nil
    }

    /// The data source with the receivers paired as the board pairs them (ConfigMapping).
    public func adding(to c: DataSourceConfiguration) -> DataSourceConfiguration {
        var c = c
        if barometer != nil {
            c.sensors.append(PairedSensor(Self.barometerSource, provides: QuantitySet(.altitude, .ascent, .descent, .grade),
                                          priority: ConfigMapping.barometerPriority))
        }
        if gps != nil {
            c.sensors.append(PairedSensor(Self.gnss, provides: QuantitySet(.latitude, .longitude, .speed, .distance, .altitude, .ascent, .descent, .grade),
                                          priority: ConfigMapping.gpsPriority))
        }
        return c
    }

    var gpsNextMs: Int64 { gps == nil ? .max : max(gpsDueMs, gpsSilentUntilMs) }
    var barometerNextMs: Int64 { barometer == nil ? .max : max(barometerDueMs, barometerSilentUntilMs) }
    public var nextDueMs: Int64 { min(gpsNextMs, barometerNextMs) }

    /// Sends whichever of the two is due at `ms`.
    mutating func emit(atMs ms: Int64, ride: inout SyntheticRide, _ device: DeviceRuntime) {
        ride.advance(toMs: ms)
        let now = MonotonicInstant(milliseconds: ms)
        if gpsNextMs <= ms, var g = gps {
            gpsDueMs = Self.realign(gpsDueMs, to: ms, period: SimulatedGps.periodMs) + SimulatedGps.periodMs
            for line in g.lines(unixMs: startUnixMs + ms, ride: ride) {
                var text = line
                text.withUTF8 { device.receive(.gpsdLine(UnsafeRawBufferPointer($0)), at: now) }
                gpsLines &+= 1
            }
            gps = g
        } else if barometerNextMs <= ms, let b = barometer {
            barometerDueMs = Self.realign(barometerDueMs, to: ms, period: SimulatedBarometer.periodMs) + SimulatedBarometer.periodMs
            if !calibrationSent {
                SimulatedBarometer.calibrationRegisters.withUnsafeBytes { device.receive(.barometerCalibration($0), at: now) }
                calibrationSent = true
            }
            b.dataRegisters(altitudeM: ride.altitudeM).withUnsafeBytes { device.receive(.barometerData($0), at: now) }
            barometerReadings &+= 1
        }
    }

    /// The due time on its own rhythm that `ms` reached (after a silence).
    static func realign(_ due: Int64, to ms: Int64, period: Int64) -> Int64 {
        due >= ms ? due : due + (ms - due) / period * period
    }

    /// The GPS follows `route` (a course's points) instead of the demo loop.
    public mutating func follow(route: SyntheticRoute) {
        gps?.route = route
    }

    /// From `fromMs` for `lengthMs` the rider rides beside the route, up to `offsetM` from it.
    public mutating func detour(fromMs: Int64, lengthMs: Int64, offsetM: Double) {
        gps?.detours.append((fromMs, lengthMs, offsetM))
    }

    /// The rider rides the route from its end to its start.
    public mutating func rideBackwards() {
        gps?.backwards = true
    }

    /// The receiver reports no fix from `fromMs` for `lengthMs`.
    public mutating func loseFix(fromMs: Int64, lengthMs: Int64) {
        guard var g = gps else { return }
        g.noFixUntilMs = max(g.noFixUntilMs, fromMs + lengthMs)
        gps = g
    }

    /// Nothing at all from the receiver (unplugged) or the barometer for a while.
    mutating func silence(_ s: Scenario.Sensor, fromMs: Int64, lengthMs: Int64) {
        if s == .gps { gpsSilentUntilMs = max(gpsSilentUntilMs, fromMs + lengthMs) }
        if s == .baro { barometerSilentUntilMs = max(barometerSilentUntilMs, fromMs + lengthMs) }
    }

    /// The device is down: nobody listens until `ms`.
    mutating func skip(to ms: Int64) {
        if gpsDueMs <= ms { gpsDueMs = Self.realign(gpsDueMs, to: ms, period: SimulatedGps.periodMs) + SimulatedGps.periodMs }
        if barometerDueMs <= ms {
            barometerDueMs = Self.realign(barometerDueMs, to: ms, period: SimulatedBarometer.periodMs) + SimulatedBarometer.periodMs
        }
        calibrationSent = false // a restarted device reads the calibration again
    }
}

extension Scenario {
    /// The app configuration with the climbing page (a barometer or GPS) and the map page (GPS),
    /// as `ConfigMapping.runningPageCount` gives them on the board.
    func withPositionPages(_ c: AppConfiguration) -> AppConfiguration {
        var c = c
        let gps = sensors.contains(.gps), baro = sensors.contains(.baro)
        if c.runningPageCount == 3 { c.runningPageCount = 3 + (gps || baro ? 1 : 0) + (gps ? 1 : 0) }
        // A radar in the scenario is a paired radar: its column and its state are expected.
        c.expectedSensors[Int(SensorRole.radar.rawValue)] = sensors.contains(.radar)
        return c
    }
}

/// What a replay hands to the runtime's input path rather than to the core.
enum ReplayRawInput {
    case barometerCalibration
    case barometerData([UInt8])

    func send(to runtime: DeviceRuntime, at now: MonotonicInstant) {
        switch self {
        case .barometerCalibration:
            SimulatedBarometer.calibrationRegisters.withUnsafeBytes { runtime.receive(.barometerCalibration($0), at: now) }
        case .barometerData(let bytes):
            bytes.withUnsafeBytes { runtime.receive(.barometerData($0), at: now) }
        }
    }
}

extension ReplayRun {
    /// A replay's data source: the recorded altitude arrives as a barometer's registers (the
    /// recording devices' altitude is barometric), so the app's own altimetry makes the ride's
    /// altitude, ascent, descent and grade from it (docs/gps.md).
    static var positionSources: DataSourceConfiguration {
        DataSourceConfiguration(sensors: [PairedSensor(SimulatedPositionFeed.barometerSource,
                                                       provides: QuantitySet(.altitude, .ascent, .descent, .grade),
                                                       priority: ConfigMapping.barometerPriority)])
    }

    /// A record's position (as samples, like its other values) and altitude (as the registers of
    /// a barometer reading the standard atmosphere's pressure at it).
    func planPosition(_ r: FITActivity.Record, at t: Int64) {
        let at = MonotonicInstant(milliseconds: t)
        if let lat = r.latitude, let lon = r.longitude {
            add(t, .input(.sample(Sample(.latitude, lat, at: at))))
            add(t, .input(.sample(Sample(.longitude, lon, at: at))))
        }
        if let alt = r.altitudeM, alt.isFinite {
            var baro = SimulatedBarometer()
            baro.seaLevelPa = PressureAltitude.standardSeaLevelPa
            add(t, .raw(.barometerData(baro.dataRegisters(altitudeM: alt))))
        }
    }
}
