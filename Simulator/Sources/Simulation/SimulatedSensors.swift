import AppCore
import Device
import RideModel
import Sensors

/// The sensors of the synthetic ride, seen through a simulated bridge: each sensor sends the raw
/// payload a real one sends (BLE heart rate and speed notifications about once a second, ANT+
/// power and cadence broadcasts about four times a second), wrapped in bridge protocol frames,
/// encoded to bytes and parsed again, then decoded by the device's own data source — so the
/// decoders, rate rules and sensor states run end to end. Sensors fall silent during a dropout
/// or while the bridge restarts; the data source reports them stale and lost as on the board.
public struct SimulatedSensors: Sendable {
    /// The four simulated sensors, by `SensorRole.rawValue`.
    public static let identities: [SensorIdentity] = [
        .ble(BLEAddress(value: 0xC0FF_EE00_0001)),                          // heart rate strap, BLE
        .ant(deviceNumber: 12_345, deviceType: 11, transmissionType: 5),    // power meter, ANT+
        .ble(BLEAddress(value: 0xC0FF_EE00_0002)),                          // wheel speed sensor, BLE
        .ant(deviceNumber: 2_222, deviceType: 122, transmissionType: 1),    // cadence sensor, ANT+
    ]
    static let profileCodes: [UInt16] = [0x2A37, 11, 0x2A5B, 122]
    /// Message periods: BLE notifications 1 s; ANT+ channel periods 8182 and 8102 / 32768 s.
    public static let framePeriodMs: [Int64] = [1_000, 250, 1_000, 247]
    static let phaseMs: [Int64] = [130, 60, 170, 210]
    public static let wheelCircumferenceMm = 2_105

    /// The data source configuration of the simulated bike: the four sensors paired, the power
    /// meter's own cadence ranked below the cadence sensor's.
    public static func dataSourceConfiguration(present: [Bool]) -> DataSourceConfiguration {
        var paired: [PairedSensor] = []
        for i in 0..<4 where present[i] {
            switch i {
            case 0: paired.append(PairedSensor(identities[0], provides: QuantitySet(.heartRate, .rrInterval)))
            case 1: paired.append(PairedSensor(identities[1], provides: QuantitySet(.power, .cadence, .pedalBalanceRight), priority: 1))
            case 2: paired.append(PairedSensor(identities[2], provides: QuantitySet(.speed, .distance)))
            default: paired.append(PairedSensor(identities[3], provides: QuantitySet(.cadence)))
            }
        }
        return DataSourceConfiguration(sensors: paired, wheelCircumferenceMm: wheelCircumferenceMm)
    }

    public private(set) var ride: SyntheticRide
    public private(set) var inputs: SensorInputs
    var present: [Bool]
    var nextDueMs: [Int64]
    var silentUntilMs: [Int64]
    var bridgeDownUntilMs: Int64 = 0
    var bridgeUp = false
    var messageCount: [Int]
    var lastSentBeatMs: Int64 = 0
    var powerEventCount = 0
    var accumulatedPowerW = 0
    var heartbeat: UInt32 = 0
    var bridgeID: UInt32
    var payload: [UInt8] = []
    /// Frames that failed to parse or decode (a bug if ever non-zero: the simulator sends valid ones).
    public private(set) var framesRejected = 0

    public init(seed: UInt64, present: Set<Scenario.Sensor>) {
        ride = SyntheticRide(seed: seed)
        let roles: [Scenario.Sensor] = [.hr, .power, .speed, .cadence]
        self.present = roles.map { present.contains($0) }
        inputs = SensorInputs(Self.dataSourceConfiguration(present: self.present))
        nextDueMs = Self.phaseMs
        silentUntilMs = Array(repeating: 0, count: 4)
        messageCount = Array(repeating: 0, count: 4)
        bridgeID = UInt32(truncatingIfNeeded: seed &* 2_654_435_761)
        payload.reserveCapacity(SensorPayloads.payloadBytesMax)
    }

    public func isPresent(_ role: SensorRole) -> Bool { present[Int(role.rawValue)] }

    static func role(_ s: Scenario.Sensor) -> Int {
        switch s {
        case .hr: 0
        case .power: 1
        case .speed: 2
        case .cadence: 3
        }
    }

    /// The device (re)started: a fresh data source, the expected sensors searching.
    public mutating func deviceStarted(at ms: Int64, _ feed: (AppInput) -> Void) {
        inputs = SensorInputs(Self.dataSourceConfiguration(present: present))
        bridgeUp = false
        inputs.source.start(at: MonotonicInstant(milliseconds: ms)) { feed(SensorFeed.input($0)) }
    }

    /// When the next frame is due.
    public var nextFrameMs: Int64 {
        var t = Int64.max
        if !bridgeUp { t = bridgeDownUntilMs }
        for i in 0..<4 where present[i] { t = min(t, max(nextDueMs[i], silentUntilMs[i], bridgeDownUntilMs)) }
        return t
    }

    /// Sends every frame due up to `ms`, in time order, through the device's data source.
    public mutating func emit(upTo ms: Int64, _ feed: (AppInput) -> Void) {
        if !bridgeUp && ms >= bridgeDownUntilMs { connectBridge(at: max(bridgeDownUntilMs, 0), feed) }
        guard bridgeUp else { return }
        while true {
            var best = -1
            var bestMs = Int64.max
            for i in 0..<4 where present[i] {
                let due = max(nextDueMs[i], silentUntilMs[i], bridgeDownUntilMs)
                if due <= ms && due < bestMs { best = i; bestMs = due }
            }
            guard best >= 0 else { break }
            let period = Self.framePeriodMs[best]
            if nextDueMs[best] < bestMs { // back from a silence: keep the sensor's own rhythm
                let k = (bestMs - Self.phaseMs[best] + period - 1) / period
                nextDueMs[best] = Self.phaseMs[best] + k * period
                continue
            }
            frame(best, atMs: bestMs, feed)
            nextDueMs[best] = bestMs + period
        }
    }

    /// The data source's own timers (stale and lost sensors).
    public mutating func tick(at ms: Int64, _ feed: (AppInput) -> Void) {
        inputs.source.tick(at: MonotonicInstant(milliseconds: ms)) { feed(SensorFeed.input($0)) }
    }

    mutating func connectBridge(at ms: Int64, _ feed: (AppInput) -> Void) {
        bridgeUp = true
        let now = MonotonicInstant(milliseconds: ms)
        inputs.bridgeConnected(at: now)
        bridgeID &+= 1
        send(BridgeFrame(bridgeTimeUs: UInt64(ms) * 1000, .hello(protocolVersionMax: BridgeFrame.version, radios: 0b11, bridgeID: bridgeID)), at: now, feed)
    }

    mutating func send(_ frame: BridgeFrame, at now: MonotonicInstant, _ feed: (AppInput) -> Void) {
        let bytes = frame.encoded()
        let parsed: BridgeFrame
        do {
            parsed = try bytes.withBytes { b throws(DecodeError) in try BridgeFrame.parse(b) }
        } catch {
            framesRejected += 1
            return
        }
        inputs.source.handle(parsed, at: now) { feed(SensorFeed.input($0)) }
    }

    mutating func frame(_ i: Int, atMs ms: Int64, _ feed: (AppInput) -> Void) {
        ride.advance(toMs: ms)
        messageCount[i] += 1
        switch i {
        case 0:
            SensorPayloads.bleHeartRate(ride, lastSentBeatMs: lastSentBeatMs, into: &payload)
            lastSentBeatMs = ride.lastBeatMs
        case 1:
            powerEventCount += 1
            accumulatedPowerW = (accumulatedPowerW + Int(max(0, ride.powerW.rounded()))) & 0xFFFF
            SensorPayloads.antPower(ride, eventCount: powerEventCount, accumulatedPowerW: accumulatedPowerW, into: &payload)
        case 2:
            SensorPayloads.bleSpeed(ride, into: &payload)
        default:
            SensorPayloads.antRevolutions(eventMs: ride.lastCrankEventMs, revolutions: ride.crankRevolutions,
                                          messageCount: messageCount[i], into: &payload)
        }
        guard let p = Payload(payload) else { framesRejected += 1; return }
        let frame = BridgeFrame(bridgeTimeUs: UInt64(ms) * 1000, .data(Self.identities[i], profileCode: Self.profileCodes[i], p))
        send(frame, at: MonotonicInstant(milliseconds: ms), feed)
    }

    public mutating func dropout(_ s: Scenario.Sensor, fromMs: Int64, lengthMs: Int64) {
        let i = Self.role(s)
        silentUntilMs[i] = max(silentUntilMs[i], fromMs + lengthMs)
    }

    /// The bridge process dies: the socket closes (every sensor lost at once) until it is back.
    public mutating func bridgeDown(fromMs: Int64, lengthMs: Int64, _ feed: (AppInput) -> Void) {
        bridgeDownUntilMs = max(bridgeDownUntilMs, fromMs + lengthMs)
        guard bridgeUp else { return }
        bridgeUp = false
        inputs.bridgeClosed(at: MonotonicInstant(milliseconds: fromMs)) { input in feed(input) }
    }

    /// The device is down: the sensors go on riding but nobody listens.
    public mutating func skip(to ms: Int64) {
        ride.advance(toMs: ms)
        for i in 0..<4 where nextDueMs[i] <= ms {
            let period = Self.framePeriodMs[i]
            nextDueMs[i] += ((ms - nextDueMs[i]) / period + 1) * period
        }
    }
}

extension SensorInputs {
    /// `bridgeClosed(at:into:)` delivering app inputs to a closure (the runtime's `handle`).
    mutating func bridgeClosed(at now: MonotonicInstant, _ feed: (AppInput) -> Void) {
        source.bridgeDisconnected(at: now) { feed(SensorFeed.input($0)) }
    }
}
