import RideModel

/// A sensor paired for the ride.
public struct PairedSensor: Sendable, Hashable {
    /// For ANT+, a transmission type of 0 matches any (as in ANT+ pairing).
    public var identity: SourceIdentity
    /// What it is (the config's `role`; an ANT+ device type's kind); nil for an onboard receiver
    /// or a sensor paired without one.
    public var kind: SensorKind?
    /// The quantities to take from this sensor.
    public var provides: QuantitySet
    /// The roles whose state this sensor decides (with the others that fill them).
    public var fills: [SensorRole]
    /// Lower wins when two sensors provide the same quantity.
    public var priority: Int

    /// `kind` (or, for ANT+, the device type's kind) says what it provides and fills; `provides`
    /// narrows or replaces that. Without a kind it provides what it is given (everything by
    /// default) and fills the roles whose first live quantity that includes.
    public init(_ identity: SourceIdentity, kind: SensorKind? = nil, provides: QuantitySet? = nil, priority: Int = 0) {
        self.identity = identity
        self.priority = priority
        var k = kind
        if k == nil, case let .ant(_, type, _) = identity { k = SensorKind(antDeviceType: type) }
        self.kind = k
        let given = provides ?? k.map { QuantitySet($0.quantities) } ?? .all
        self.provides = given
        fills = k?.statusRoles ?? SensorRole.allCases.filter { r in r.liveQuantities.first.map(given.contains) ?? false }
    }

    func matches(_ id: SourceIdentity) -> Bool {
        switch (identity, id) {
        case let (.ant(n0, t0, x0), .ant(n1, t1, x1)): n0 == n1 && t0 == t1 && (x0 == 0 || x0 == x1)
        case let (.ble(a0), .ble(a1)): a0.value == a1.value
        case let (.onboard(k0), .onboard(k1)): k0 == k1
        default: false
        }
    }
}

public struct DataSourceConfiguration: Sendable, Hashable {
    /// Sensors one ride can pair.
    public static let pairedSensorsMax = 8
    /// Onboard receivers beside them (the GPS and the barometer).
    public static let onboardSourcesMax = 2

    public var sensors: [PairedSensor]
    public var enabled: QuantitySet
    public var wheelCircumferenceMm: Int
    /// Connected → stale after this long without a decodable payload.
    public var staleAfterMs: Int64
    /// → lost after this long.
    public var lostAfterMs: Int64
    /// No frame at all from the bridge (not even a heartbeat) for this long: the bridge is gone.
    public var bridgeSilenceMs: Int64
    /// Frames per sensor per second above which the excess is dropped (ANT+ sends 4–8 Hz, BLE
    /// about 1–4 Hz per characteristic).
    public var framesPerSensorPerSecondMax: Int

    public init(sensors: [PairedSensor], enabled: QuantitySet = .all,
                wheelCircumferenceMm: Int = SensorDecoder.defaultWheelCircumferenceMm,
                staleAfterMs: Int64 = 3_000, lostAfterMs: Int64 = 10_000, bridgeSilenceMs: Int64 = 5_000,
                framesPerSensorPerSecondMax: Int = 40) {
        precondition(sensors.count <= Self.pairedSensorsMax + Self.onboardSourcesMax, "at most \(Self.pairedSensorsMax) paired sensors and \(Self.onboardSourcesMax) onboard receivers")
        self.sensors = sensors
        self.enabled = enabled
        self.wheelCircumferenceMm = wheelCircumferenceMm
        self.staleAfterMs = staleAfterMs
        self.lostAfterMs = lostAfterMs
        self.bridgeSilenceMs = bridgeSilenceMs
        self.framesPerSensorPerSecondMax = framesPerSensorPerSecondMax
    }
}

/// Counters and states for a status query and the log.
public struct DataSourceStatus: Sendable, Hashable {
    public var bad = BadInputCounters()
    /// What the bridge last said about the config file (protocol version 3; nil: nothing yet).
    public struct BridgeConfig: Sendable, Hashable {
        public var readable: Bool
        public var line: Int
        public var note: BridgeNote
    }
    public var bridgeConfig: BridgeConfig?
    public var framesReceived: UInt64 = 0
    public var payloadsDecoded: UInt64 = 0
    public var samplesEmitted: UInt64 = 0
    /// Samples dropped because a higher-priority sensor provides the quantity (not an error).
    public var samplesSuperseded: UInt64 = 0
    /// Samples dropped because their quantity is disabled (not an error).
    public var samplesDisabled: UInt64 = 0
    public var bridgeConnected = false
    public var bridgeConnections: UInt64 = 0
    public var lastBridgeID: UInt32?
    public var heartbeats: UInt64 = 0
    /// Radar pictures handed to the app.
    public var radarFrames: UInt64 = 0
}

/// The data source: routes bridge frames from paired sensors through their decoders (and decoded
/// readings from onboard receivers), applies enable/disable and priority, tracks each source's
/// state and battery, and emits samples and role states (`SensorEvent`). Storage is allocated
/// once at init; a frame allocates nothing.
public struct DataSource: Sendable {
    struct Slot: Sendable {
        var paired: PairedSensor
        var decoders: [SensorDecoder]
        var state: SensorState = .searching
        var lastDataAt = MonotonicInstant.zero
        var batteryPercent: Int?
        var windowStart = MonotonicInstant.zero
        var framesInWindow = 0
        var lastDistanceM: Double?
        /// When `lastDistanceM` was read.
        var lastDistanceAt = MonotonicInstant.zero
        /// When this sensor last delivered each quantity (by `Quantity.rawValue`; nil: not since
        /// it connected). A sensor that could provide a quantity but does not (a power meter
        /// without crank data, for cadence) never keeps a lower-priority sensor's values out.
        var producedAt: [MonotonicInstant?] = Array(repeating: nil, count: Quantity.allCases.count)
        /// When this sensor last delivered a radar picture (nil: not since it connected).
        var radarAt: MonotonicInstant?
    }

    public private(set) var configuration: DataSourceConfiguration
    var slots: [Slot]
    /// What was last announced per role (by `SensorRole.rawValue`).
    var roles: [SensorStatus]
    var lastBridgeFrameAt: MonotonicInstant?
    /// Distance from wheel revolutions, over every source and reconnection, m.
    public private(set) var odometerM: Double = 0
    public private(set) var status = DataSourceStatus()

    public init(_ configuration: DataSourceConfiguration) {
        self.configuration = configuration
        slots = configuration.sensors.map { p in
            // Onboard receivers report decoded values: no payload decoders.
            let profiles = Profile.allCases.filter { $0.transport == p.identity.radio }
            return Slot(paired: p, decoders: profiles.map { SensorDecoder(profile: $0, wheelCircumferenceMm: configuration.wheelCircumferenceMm) })
        }
        roles = SensorRole.allCases.map { SensorStatus($0, .notConfigured) }
    }

    /// One paired sensor as a status query shows it.
    public struct SensorReport: Sendable, Hashable {
        public var sensor: PairedSensor
        public var state: SensorState
        public var batteryPercent: Int?
        /// When the last decodable payload arrived (nil: never).
        public var lastDataAt: MonotonicInstant?
    }

    /// Every paired sensor's state, for a status query (allocates; not for the frame path).
    public var sensorReports: [SensorReport] {
        slots.map { s in
            SensorReport(sensor: s.paired, state: s.state, batteryPercent: s.batteryPercent,
                         lastDataAt: s.state == .searching ? nil : s.lastDataAt)
        }
    }

    /// The state of paired sensor `index` (in configuration order).
    public func sensorState(_ index: Int) -> SensorState { slots[index].state }
    public func sensorBattery(_ index: Int) -> Int? { slots[index].batteryPercent }
    /// A role's state as last announced.
    public func roleState(_ r: SensorRole) -> SensorState { roles[Int(r.rawValue)].state }

    /// Announces every role's initial state (searching, or not configured).
    public mutating func start(at now: MonotonicInstant, _ emit: (SensorEvent) -> Void) {
        refreshRoles(at: now, force: true, emit)
    }

    public mutating func setEnabled(_ q: Quantity, _ on: Bool, at now: MonotonicInstant, _ emit: (SensorEvent) -> Void) {
        if on { configuration.enabled.insert(q) } else { configuration.enabled.remove(q) }
        refreshRoles(at: now, force: false, emit)
    }

    /// The paired sensors changed while running (paired or forgotten on the unit or from the
    /// shell): sensors still paired keep their state, battery and decoders; new ones start
    /// searching; forgotten ones are dropped (their roles follow at once). Not for the frame path.
    public mutating func replaceSensors(_ sensors: [PairedSensor], at now: MonotonicInstant, _ emit: (SensorEvent) -> Void) {
        let kept = slots
        configuration.sensors = Array(sensors.prefix(DataSourceConfiguration.pairedSensorsMax))
        slots = configuration.sensors.map { p in
            if var old = kept.first(where: { $0.paired.identity == p.identity }) {
                old.paired = p
                return old
            }
            let profiles = Profile.allCases.filter { $0.transport == p.identity.radio }
            return Slot(paired: p, decoders: profiles.map { SensorDecoder(profile: $0, wheelCircumferenceMm: configuration.wheelCircumferenceMm) })
        }
        refreshRoles(at: now, force: false, emit)
    }

    /// Counts bad input met before a frame could be parsed (by the transport).
    public mutating func count(_ kind: BadInput, by n: UInt64 = 1) { status.bad.count(kind, by: n) }

    /// The transport to the bridge is up (a socket accepted, a serial device opened).
    public mutating func bridgeConnected(at now: MonotonicInstant) {
        status.bridgeConnected = true
        status.bridgeConnections &+= 1
        lastBridgeFrameAt = now
    }

    /// The bridge went away: every sensor behind it is lost and its values become absent.
    public mutating func bridgeDisconnected(at now: MonotonicInstant, _ emit: (SensorEvent) -> Void) {
        status.bridgeConnected = false
        lastBridgeFrameAt = nil
        loseRadioSensors()
        refreshRoles(at: now, force: false, emit)
    }

    /// Handles one parsed bridge frame received at `now`.
    public mutating func handle(_ frame: BridgeFrame, at now: MonotonicInstant, _ emit: (SensorEvent) -> Void) {
        status.framesReceived &+= 1
        if !status.bridgeConnected { bridgeConnected(at: now) }
        lastBridgeFrameAt = now
        switch frame.message {
        case let .hello(_, _, id):
            if let last = status.lastBridgeID, last != id {
                // The bridge restarted: its sensors reconnect from scratch.
                loseRadioSensors()
                refreshRoles(at: now, force: false, emit)
            }
            status.lastBridgeID = id
        case .heartbeat:
            status.heartbeats &+= 1
        case let .link(who, _, state):
            link(who, state, at: now, emit)
        case let .data(who, code, payload):
            guard let i = slotIndex(who) else { status.bad.count(.unpairedSensor); return }
            guard let radio = who.radio, let profile = Profile(transport: radio, code: code),
                  let d = slots[i].decoders.firstIndex(where: { $0.profile == profile }) else {
                status.bad.count(.unknownProfile)
                return
            }
            guard admit(i, at: now) else { status.bad.count(.rateLimited); return }
            let values: DerivedValues
            do {
                values = try slots[i].decoders[d].decode(payload, at: now)
            } catch {
                status.bad.count(error.kind)
                return
            }
            accept(values, from: i, at: now, emit)
        case .found, .scanState:
            break  // a search's results: SensorInputs hands them to the app
        case let .configState(readable, line, note):
            status.bridgeConfig = DataSourceStatus.BridgeConfig(readable: readable, line: Int(line), note: note)
        case .notificationSocket, .appHello, .scanRequest, .reload, .socketReturned:
            // A socket frame comes with its descriptor, which the transport takes before any
            // parsing; the others go from the app to the bridge. Here, they are misplaced.
            status.bad.count(.badFrameKind)
        }
    }

    /// A source's link changed (the bridge's link frame, or an onboard receiver that gained or
    /// lost what it measures, such as a GPS fix).
    public mutating func link(_ who: SourceIdentity, _ state: LinkState, at now: MonotonicInstant, _ emit: (SensorEvent) -> Void) {
        guard let i = slotIndex(who) else { status.bad.count(.unpairedSensor); return }
        switch state {
        case .connected:
            if slots[i].state != .connected { slots[i].state = .connected; slots[i].lastDataAt = now }
        case .searching:
            if slots[i].state == .connected || slots[i].state == .stale { lose(i) }
        case .disconnected:
            lose(i)
        case .unusable:
            status.bad.count(.unusableSensor)
            lose(i)
        }
        refreshRoles(at: now, force: false, emit)
    }

    /// Readings a source delivered already decoded (an onboard receiver such as a GPS through
    /// gpsd): the same pairing, rate limit, priority, enable and state rules as a bridge frame's.
    public mutating func handle(_ values: DerivedValues, from who: SourceIdentity, at now: MonotonicInstant, _ emit: (SensorEvent) -> Void) {
        guard let i = slotIndex(who) else { status.bad.count(.unpairedSensor); return }
        guard admit(i, at: now) else { status.bad.count(.rateLimited); return }
        accept(values, from: i, at: now, emit)
    }

    /// A decodable reading from source `i`: counts its warnings, marks the source connected,
    /// emits its samples and any role change.
    mutating func accept(_ values: DerivedValues, from i: Int, at now: MonotonicInstant, _ emit: (SensorEvent) -> Void) {
        status.payloadsDecoded &+= 1
        for raw in 0..<UInt8(BadInput.countMax) {
            if let k = BadInput(rawValue: raw), values.has(k) { status.bad.count(k) }
        }
        if let b = values.batteryPercent { slots[i].batteryPercent = b }
        if values.radarShutdown {
            // The radar says it is switching off: lost now, not a clear road for 10 s.
            lose(i)
            refreshRoles(at: now, force: false, emit)
            return
        }
        slots[i].lastDataAt = now
        slots[i].state = .connected
        emitSamples(values, from: i, at: now, emit)
        refreshRoles(at: now, force: false, emit)
        if let picture = values.radar { emitRadar(picture, from: i, at: now, emit) }
    }

    /// A radar's picture goes to the app from the preferred radar (two paired radars: the one
    /// listed first while it reports), after its state: the app sees the radar connected first.
    mutating func emitRadar(_ picture: RadarPicture, from i: Int, at now: MonotonicInstant, _ emit: (SensorEvent) -> Void) {
        guard slots[i].paired.fills.contains(.radar) else { return }
        slots[i].radarAt = now
        let mine = slots[i].paired.priority
        for j in slots.indices where j != i && slots[j].state == .connected && slots[j].paired.fills.contains(.radar) {
            guard let last = slots[j].radarAt, now.milliseconds(since: last) < configuration.staleAfterMs else { continue }
            if slots[j].paired.priority < mine || (slots[j].paired.priority == mine && j < i) { return }
        }
        status.radarFrames &+= 1
        emit(.radar(picture, at: now))
    }

    /// Time passing: stale and lost timeouts, bridge silence. Call at least once a second.
    public mutating func tick(at now: MonotonicInstant, _ emit: (SensorEvent) -> Void) {
        if let last = lastBridgeFrameAt, now.milliseconds(since: last) >= configuration.bridgeSilenceMs {
            bridgeDisconnected(at: now, emit)
            return
        }
        for i in slots.indices {
            let quietMs = now.milliseconds(since: slots[i].lastDataAt)
            switch slots[i].state {
            case .connected where quietMs >= configuration.lostAfterMs, .stale where quietMs >= configuration.lostAfterMs:
                lose(i)
            case .connected where quietMs >= configuration.staleAfterMs:
                slots[i].state = .stale
            default: break
            }
        }
        refreshRoles(at: now, force: false, emit)
    }

    // MARK: Internals

    func slotIndex(_ who: SourceIdentity) -> Int? {
        for i in slots.indices where slots[i].paired.matches(who) { return i }
        return nil
    }

    /// Every source behind the bridge (not the onboard ones) is lost.
    mutating func loseRadioSensors() {
        for i in slots.indices where slots[i].paired.identity.radio != nil { lose(i) }
    }

    mutating func lose(_ i: Int) {
        if slots[i].state != .searching { slots[i].state = .lost }
        for d in slots[i].decoders.indices { slots[i].decoders[d].reset() }
        // A radio sensor's counter may start again when it reconnects; an onboard receiver's
        // (the GPS odometer) goes on across a lost fix and counts the way across the gap.
        if slots[i].paired.identity.radio != nil { slots[i].lastDistanceM = nil }
        for q in slots[i].producedAt.indices { slots[i].producedAt[q] = nil }
        slots[i].radarAt = nil
    }

    mutating func admit(_ i: Int, at now: MonotonicInstant) -> Bool {
        if now.milliseconds(since: slots[i].windowStart) >= 1000 {
            slots[i].windowStart = now
            slots[i].framesInWindow = 0
        }
        slots[i].framesInWindow += 1
        return slots[i].framesInWindow <= configuration.framesPerSensorPerSecondMax
    }

    /// Whether sensor `i` is the preferred live source of `q`: no connected sensor of higher
    /// priority has delivered `q` within `staleAfterMs`.
    func preferred(_ i: Int, for q: Quantity, at now: MonotonicInstant) -> Bool {
        let mine = slots[i].paired.priority
        let k = Int(q.rawValue)
        for j in slots.indices where j != i && slots[j].state == .connected {
            // Set only for quantities the sensor provides (`pass`).
            guard let last = slots[j].producedAt[k], now.milliseconds(since: last) < configuration.staleAfterMs else { continue }
            if slots[j].paired.priority < mine || (slots[j].paired.priority == mine && j < i) { return false }
        }
        return true
    }

    /// Whether a sample of `q` from sensor `i` passes provides, enable and priority (and notes
    /// that the sensor delivers `q`).
    mutating func pass(_ q: Quantity, from i: Int, at now: MonotonicInstant) -> Bool {
        guard slots[i].paired.provides.contains(q) else { return false }
        slots[i].producedAt[Int(q.rawValue)] = now
        guard configuration.enabled.contains(q) else { status.samplesDisabled &+= 1; return false }
        guard preferred(i, for: q, at: now) else { status.samplesSuperseded &+= 1; return false }
        return true
    }

    /// Quantities taken from `DerivedValues.value(_:)` (RR and distance are handled apart).
    static let valueQuantities: [Quantity] = [.heartRate, .power, .cadence, .speed, .energy, .pedalBalanceRight,
                                              .torqueEffectivenessLeft, .torqueEffectivenessRight,
                                              .pedalSmoothnessLeft, .pedalSmoothnessRight,
                                              .latitude, .longitude, .altitude, .ascent, .descent, .grade]
    /// Quantities whose values may be negative (west, south, below sea level, downhill).
    static let signedQuantities = QuantitySet(.latitude, .longitude, .altitude, .grade)

    mutating func emitSamples(_ v: DerivedValues, from i: Int, at now: MonotonicInstant, _ emit: (SensorEvent) -> Void) {
        func send(_ q: Quantity, _ value: Double, origin: SampleOrigin = .measured) {
            guard value.isFinite, value >= 0 || Self.signedQuantities.contains(q) else { status.bad.count(.absurdValue); return }
            status.samplesEmitted &+= 1
            emit(.sample(Sample(q, value, at: now, origin: origin)))
        }
        for q in Self.valueQuantities {
            if let x = v.value(q), pass(q, from: i, at: now) { send(q, x) }
        }
        if v.rrCount > 0, pass(.rrInterval, from: i, at: now) {
            for k in 0..<v.rrCount { send(.rrInterval, v.rrIntervalS(k)) }
        }
        if let dist = v.distanceM {
            let increment = slots[i].lastDistanceM.map { dist - $0 } ?? 0
            if pass(.distance, from: i, at: now) {
                slots[i].lastDistanceM = dist
                slots[i].lastDistanceAt = now
                if increment >= 0 {
                    odometerM += increment
                    send(.distance, odometerM, origin: .generated)
                }
            } else if slots[i].lastDistanceM == nil || distanceCoveredByOthers(since: slots[i].lastDistanceAt, than: i) {
                // The preferred source counted this stretch. While it is silent (before it
                // is stale) this one keeps its reading: when it takes over, the silent stretch
                // is counted once, by it (docs/gps.md, "wheel sensor or GPS").
                slots[i].lastDistanceM = dist
                slots[i].lastDistanceAt = now
            }
        }
    }

    /// Whether a connected source other than `i` delivered distance after `instant`.
    func distanceCoveredByOthers(since instant: MonotonicInstant, than i: Int) -> Bool {
        let k = Int(Quantity.distance.rawValue)
        for j in slots.indices where j != i && slots[j].state == .connected {
            if let t = slots[j].producedAt[k], t > instant { return true }
        }
        return false
    }

    mutating func refreshRoles(at now: MonotonicInstant, force: Bool, _ emit: (SensorEvent) -> Void) {
        for role in SensorRole.allCases {
            var best = SensorStatus(role, .notConfigured)
            var bestPriority = Int.max
            if role.liveQuantities.first.map(configuration.enabled.contains) ?? true {
                for s in slots where s.paired.fills.contains(role) {
                    if s.state > best.state || (s.state == best.state && s.paired.priority < bestPriority) {
                        best.state = s.state
                        best.batteryPercent = s.batteryPercent
                        bestPriority = s.paired.priority
                    }
                }
            }
            let k = Int(role.rawValue)
            if force || best != roles[k] {
                roles[k] = best
                emit(.status(best, at: now))
            }
        }
    }
}
