import AppCore
import Device
import RideModel
import Sensors

/// The sensors of the synthetic ride, seen through a simulated bridge: each sensor sends the raw
/// payload a real one sends (BLE heart rate and speed notifications about once a second, ANT+
/// power and cadence broadcasts about four times a second), wrapped in bridge protocol frames and
/// encoded to the bytes a bridge would send. The bytes go to the device's runtime
/// (`DeviceRuntime.receive`), which parses, decodes and counts them as on the board — so the
/// decoders, rate rules and sensor states run end to end. Sensors fall silent during a dropout
/// or while the bridge restarts; the data source reports them stale and lost as on the board.
public struct SimulatedSensors: Sendable {
    /// One simulated sensor: who it is on the wire, how often it sends, and its schedule.
    struct Sensor: Sendable {
        let identity: SourceIdentity
        let profileCode: UInt16
        /// Message period: BLE notifications 1 s; ANT+ channel periods 8182 and 8102 / 32768 s.
        let periodMs: Int64
        /// First message this long after the start (the sensors do not send in step).
        let phaseMs: Int64
        var present = false
        var nextDueMs: Int64
        var silentUntilMs: Int64 = 0
        var messageCount = 0

        init(_ identity: SourceIdentity, profileCode: UInt16, periodMs: Int64, phaseMs: Int64) {
            self.identity = identity
            self.profileCode = profileCode
            self.periodMs = periodMs
            self.phaseMs = phaseMs
            nextDueMs = phaseMs
        }
    }

    /// The simulated sensors, by `SensorRole.rawValue`: a BLE heart-rate strap, an ANT+ power
    /// meter, a BLE wheel-speed sensor, an ANT+ cadence sensor, (the GPS is not a bridge
    /// sensor: never present here) and an ANT+ rear radar at 8 Hz.
    static let catalogue: [Sensor] = [
        Sensor(.ble(BLEAddress(value: 0xC0FF_EE00_0001)), profileCode: 0x2A37, periodMs: 1_000, phaseMs: 130),
        Sensor(.ant(deviceNumber: 12_345, deviceType: 11, transmissionType: 5), profileCode: 11, periodMs: 250, phaseMs: 60),
        Sensor(.ble(BLEAddress(value: 0xC0FF_EE00_0002)), profileCode: 0x2A5B, periodMs: 1_000, phaseMs: 170),
        Sensor(.ant(deviceNumber: 2_222, deviceType: 122, transmissionType: 1), profileCode: 122, periodMs: 247, phaseMs: 210),
        Sensor(.onboard(.gnss), profileCode: 0, periodMs: 1_000, phaseMs: 0),
        Sensor(.ant(deviceNumber: 4_040, deviceType: 40, transmissionType: 5), profileCode: 40, periodMs: 125, phaseMs: 40),
    ]

    /// Who each role's simulated sensor is, by `SensorRole.rawValue`.
    public static var identities: [SourceIdentity] { catalogue.map(\.identity) }
    /// Each role's message period, by `SensorRole.rawValue`.
    public static var framePeriodMs: [Int64] { catalogue.map(\.periodMs) }
    public static let wheelCircumferenceMm = 2_105

    /// The data source configuration of the simulated bike: the present sensors paired, the
    /// power meter's own cadence ranked below the cadence sensor's.
    public static func dataSourceConfiguration(present: Set<SensorRole>, wheelCircumferenceMm: Int = wheelCircumferenceMm) -> DataSourceConfiguration {
        var paired: [PairedSensor] = []
        for role in SensorRole.allCases where present.contains(role) {
            let who = catalogue[Int(role.rawValue)].identity
            switch role {
            case .heartRate: paired.append(PairedSensor(who, provides: QuantitySet(.heartRate, .rrInterval)))
            case .power: paired.append(PairedSensor(who, provides: QuantitySet(.power, .cadence, .pedalBalanceRight), priority: 1))
            case .speed: paired.append(PairedSensor(who, provides: QuantitySet(.speed, .distance)))
            case .cadence: paired.append(PairedSensor(who, provides: QuantitySet(.cadence)))
            case .radar: paired.append(PairedSensor(who, priority: 2))
            case .gps: break // SimulatedPositionFeed's
            }
        }
        return DataSourceConfiguration(sensors: paired, wheelCircumferenceMm: wheelCircumferenceMm)
    }

    public private(set) var ride: SyntheticRide
    /// The data source configuration the device runs with (the present sensors).
    public let configuration: DataSourceConfiguration
    var sensors: [Sensor]
    /// The cars behind and the radar that sees them (when the scenario has a radar).
    public internal(set) var traffic = SimulatedTraffic()
    var bridgeDownUntilMs: Int64 = 0
    var bridgeUp = false
    var lastSentBeatMs: Int64 = 0
    var powerEventCount = 0
    var accumulatedPowerW = 0
    var bridgeID: UInt32
    var payload: [UInt8] = []
    /// The GPS and barometer, when the scenario has them (their lines go in time order with the frames).
    public internal(set) var positioning: SimulatedPositionFeed
    /// Payloads the synthesizer could not build (a bug if ever non-zero).
    public private(set) var framesRejected = 0
    /// Frames handed to the device.
    public private(set) var framesSent: UInt64 = 0

    /// `wheelCircumferenceMm`: the simulated bike's wheel, which the device is set to as well
    /// (a rider's `[bike] wheel_circumference_mm`).
    public init(seed: UInt64, present: Set<Scenario.Sensor>, wheelCircumferenceMm: Int = SimulatedSensors.wheelCircumferenceMm) {
        ride = SyntheticRide(seed: seed)
        ride.wheelCircumferenceM = Double(wheelCircumferenceMm) / 1000
        sensors = Self.catalogue
        let roles = Set(present.compactMap(\.role)).subtracting([.gps])
        for role in roles { sensors[Int(role.rawValue)].present = true }
        positioning = SimulatedPositionFeed(seed: seed, gps: present.contains(.gps), barometer: present.contains(.baro))
        configuration = positioning.adding(to: Self.dataSourceConfiguration(present: roles, wheelCircumferenceMm: wheelCircumferenceMm))
        bridgeID = UInt32(truncatingIfNeeded: seed &* 2_654_435_761)
        payload.reserveCapacity(SensorPayloads.payloadBytesMax)
    }

    public func isPresent(_ role: SensorRole) -> Bool { sensors[Int(role.rawValue)].present }

    /// The device (re)started with a fresh data source: the bridge connects to it anew.
    public mutating func deviceStarted() { bridgeUp = false }

    /// When a sensor is next due, however long it is silent or the bridge is down.
    func dueMs(_ s: Sensor) -> Int64 { max(s.nextDueMs, s.silentUntilMs, bridgeDownUntilMs) }

    /// When the next frame is due.
    public var nextFrameMs: Int64 {
        var t = Int64.max
        if !bridgeUp { t = bridgeDownUntilMs }
        for s in sensors where s.present { t = min(t, dueMs(s)) }
        return min(t, positioning.nextDueMs)
    }

    /// Sends every frame due up to `ms`, in time order, to the device.
    public mutating func emit(upTo ms: Int64, into device: DeviceRuntime) {
        if !bridgeUp && ms >= bridgeDownUntilMs { connectBridge(at: max(bridgeDownUntilMs, 0), device) }
        while true {
            var best = -1
            var bestMs = Int64.max
            for i in sensors.indices where sensors[i].present && bridgeUp {
                let due = dueMs(sensors[i])
                if due <= ms && due < bestMs { best = i; bestMs = due }
            }
            let positionDue = positioning.nextDueMs
            if positionDue <= ms && positionDue < bestMs {
                positioning.emit(atMs: positionDue, ride: &ride, device)
                continue
            }
            guard best >= 0 else { break }
            let s = sensors[best]
            if s.nextDueMs < bestMs { // back from a silence: keep the sensor's own rhythm
                let k = (bestMs - s.phaseMs + s.periodMs - 1) / s.periodMs
                sensors[best].nextDueMs = s.phaseMs + k * s.periodMs
                continue
            }
            frame(SensorRole(rawValue: UInt8(best))!, atMs: bestMs, device)
            sensors[best].nextDueMs = bestMs + s.periodMs
        }
    }

    mutating func connectBridge(at ms: Int64, _ device: DeviceRuntime) {
        bridgeUp = true
        let now = MonotonicInstant(milliseconds: ms)
        device.bridgeConnected(at: now)
        bridgeID &+= 1
        send(BridgeFrame(bridgeTimeUs: UInt64(ms) * 1000, .hello(protocolVersionMax: BridgeFrame.version, radios: 0b11, bridgeID: bridgeID)), at: now, device)
    }

    /// The frame's bytes, as a bridge sends them, to the device (which parses them).
    mutating func send(_ frame: BridgeFrame, at now: MonotonicInstant, _ device: DeviceRuntime) {
        framesSent &+= 1
        frame.encoded().withBytes { device.receive(.bridgePacket($0, truncated: false), at: now) }
    }

    mutating func frame(_ role: SensorRole, atMs ms: Int64, _ device: DeviceRuntime) {
        ride.advance(toMs: ms)
        let i = Int(role.rawValue)
        sensors[i].messageCount += 1
        switch role {
        case .heartRate:
            SensorPayloads.bleHeartRate(ride, lastSentBeatMs: lastSentBeatMs, into: &payload)
            lastSentBeatMs = ride.lastBeatMs
        case .power:
            powerEventCount += 1
            accumulatedPowerW = (accumulatedPowerW + Int(max(0, ride.powerW.rounded()))) & 0xFFFF
            SensorPayloads.antPower(ride, eventCount: powerEventCount, accumulatedPowerW: accumulatedPowerW, into: &payload)
        case .speed:
            SensorPayloads.bleSpeed(ride, into: &payload)
        case .cadence:
            SensorPayloads.antRevolutions(eventMs: ride.lastCrankEventMs, revolutions: ride.crankRevolutions,
                                          messageCount: sensors[i].messageCount, into: &payload)
        case .radar:
            traffic.advance(toMs: ms, riderSpeedMps: ride.speedMps)
            traffic.nextPage(riderSpeedMps: ride.speedMps, into: &payload)
        case .gps:
            return
        }
        guard let p = Payload(payload) else { framesRejected += 1; return }
        let s = sensors[i]
        let frame = BridgeFrame(bridgeTimeUs: UInt64(ms) * 1000, .data(s.identity, profileCode: s.profileCode, p))
        send(frame, at: MonotonicInstant(milliseconds: ms), device)
    }

    /// A car comes up behind the rider.
    public mutating func car(speedMps: Double, atMs ms: Int64) {
        ride.advance(toMs: ms)
        traffic.add(speedMps: speedMps, atMs: ms, riderSpeedMps: ride.speedMps)
    }

    /// The radar is switched off: it sends its shutdown page, then nothing for `lengthMs`.
    public mutating func radarOff(atMs ms: Int64, lengthMs: Int64, _ device: DeviceRuntime) {
        let i = Int(SensorRole.radar.rawValue)
        guard sensors[i].present, bridgeUp, ms >= sensors[i].silentUntilMs else { return }
        let s = sensors[i]
        send(BridgeFrame(bridgeTimeUs: UInt64(ms) * 1000, .data(s.identity, profileCode: s.profileCode, Payload(SimulatedTraffic.shutdownPage)!)),
             at: MonotonicInstant(milliseconds: ms), device)
        sensors[i].silentUntilMs = ms + lengthMs
    }

    public mutating func dropout(_ s: Scenario.Sensor, fromMs: Int64, lengthMs: Int64) {
        if s == .gps || s == .baro { positioning.silence(s, fromMs: fromMs, lengthMs: lengthMs); return }
        guard let role = s.role else { return }
        let i = Int(role.rawValue)
        sensors[i].silentUntilMs = max(sensors[i].silentUntilMs, fromMs + lengthMs)
    }

    /// The bridge process dies: the socket closes (every sensor lost at once) until it is back.
    public mutating func bridgeDown(fromMs: Int64, lengthMs: Int64, _ device: DeviceRuntime) {
        bridgeDownUntilMs = max(bridgeDownUntilMs, fromMs + lengthMs)
        guard bridgeUp else { return }
        bridgeUp = false
        device.bridgeDisconnected(at: MonotonicInstant(milliseconds: fromMs))
    }

    /// The device is down: the sensors go on riding but nobody listens.
    public mutating func skip(to ms: Int64) {
        ride.advance(toMs: ms)
        positioning.skip(to: ms)
        for i in sensors.indices where sensors[i].nextDueMs <= ms {
            let period = sensors[i].periodMs
            sensors[i].nextDueMs += ((ms - sensors[i].nextDueMs) / period + 1) * period
        }
    }
}

extension Scenario.Sensor {
    /// The sensor role a scenario's sensor name stands for (the barometer has none).
    public var role: SensorRole? {
        switch self {
        case .hr: .heartRate
        case .power: .power
        case .speed: .speed
        case .cadence: .cadence
        case .gps: .gps
        case .radar: .radar
        case .baro: nil
        }
    }
}
