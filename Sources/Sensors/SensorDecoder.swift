import RideModel

/// The stateful decoder of one sensor's payloads for one profile: parses the payload, then turns
/// its counters into rates (with rollover, hold, zero and spike rules) and cumulative distance.
/// Used by the data source on the device and by `bikecomputer decode`. No allocation per payload.
public struct SensorDecoder: Sendable {
    /// Wheel circumference used when the ride configuration gives none.
    public static let defaultWheelCircumferenceMm = 2105

    public let profile: Profile
    public var wheelCircumferenceM: Double

    var wheel: EventRate
    var crank: EventRate
    var distanceM: Double?
    // ANT+ pages: toggle tracking (legacy straps put junk in byte 0).
    var lastToggle: Bool?
    var pagesTrusted = false
    // ANT+ HRM.
    var lastBeatCount: UInt8?
    var lastBeatTime: UInt16 = 0
    // ANT+ power, page 0x10.
    var powerEvent: UInt8?
    var accumulatedPower: UInt16 = 0
    var powerEventAt = MonotonicInstant.zero
    var averagePowerW: Double?
    var seenPowerOnly = false
    // ANT+ power, torque pages.
    var torqueEvent: UInt8?
    var torqueTicks: UInt8 = 0
    var torquePeriod: UInt16 = 0
    var torqueAccumulated: UInt16 = 0
    var torqueEventAt = MonotonicInstant.zero
    var torquePowerW: Double?
    var torqueCadenceRpm: Double?
    var torqueSpeedMps: Double?
    // ANT+ radar: the eight target slots as pages 48 and 49 last gave them.
    var antRadarSlots = InlineArray<8, RadarTarget?>(repeating: nil)
    var antRadarPageBAt: MonotonicInstant?
    // BLE radar: a first fragment waiting for its last, and closing speeds estimated per track.
    var variaPending = InlineArray<6, VariaRadarTriplet>(repeating: VariaRadarTriplet(track: 0, range: 0, speed: 0))
    var variaPendingCount = 0
    var variaPendingHeader: UInt8 = 0
    var radarTracks = InlineArray<8, RadarTrack>(repeating: RadarTrack())

    public init(profile: Profile, wheelCircumferenceMm: Int = SensorDecoder.defaultWheelCircumferenceMm) {
        self.profile = profile
        self.wheelCircumferenceM = Double(wheelCircumferenceMm) / 1000
        let wheelTicks: Double = profile == .bleCyclingPower ? 2048 : 1024
        let wheelCountBits = profile == .bleCyclingPower || profile == .bleSpeedCadence ? 32 : 16
        wheel = EventRate(.init(countBits: wheelCountBits, timeBits: 16, ticksPerSecond: wheelTicks,
                                zeroAfterMs: RateLimits.wheelZeroAfterMs,
                                eventsPerSecondMax: RateLimits.wheelRevolutionsPerSecondMax))
        crank = EventRate(.init(countBits: 16, timeBits: 16, ticksPerSecond: 1024,
                                zeroAfterMs: RateLimits.crankZeroAfterMs,
                                eventsPerSecondMax: RateLimits.crankRevolutionsPerSecondMax))
    }

    /// Forgets every reference reading (after the sensor was lost): the next payload starts afresh.
    public mutating func reset() {
        let keep = wheelCircumferenceM
        self = SensorDecoder(profile: profile)
        wheelCircumferenceM = keep
    }

    /// Decodes one payload received at `now`, reporting its fields to `fields`.
    public mutating func decode<V: FieldVisitor>(_ p: Payload, at now: MonotonicInstant, fields: inout V) throws(DecodeError) -> DerivedValues {
        var d = DerivedValues()
        switch profile {
        case .bleHeartRate:
            let m = try HeartRateMeasurement.parse(p)
            m.visitFields(&fields)
            if m.reservedFlags { d.warn(.reservedFlags) }
            if m.trailingByte { d.warn(.wrongLength) }
            if m.contact != .notDetected { heartRate(Double(m.heartRateBpm), into: &d) }
            for i in 0..<m.rrCount { d.appendRR(m.rrIntervals1024[i]) }
        case .bleSpeedCadence:
            let m = try CSCMeasurement.parse(p)
            m.visitFields(&fields)
            if m.reservedFlags { d.warn(.reservedFlags) }
            if m.trailingBytes > 0 { d.warn(.wrongLength) }
            if let n = m.wheelRevolutions, let t = m.wheelEventTime1024 { wheelReading(UInt64(n), UInt64(t), at: now, into: &d) }
            if let n = m.crankRevolutions, let t = m.crankEventTime1024 { crankReading(UInt64(n), UInt64(t), at: now, into: &d) }
        case .bleCyclingPower:
            let m = try CyclingPowerMeasurement.parse(p)
            m.visitFields(&fields)
            if m.reservedFlags { d.warn(.reservedFlags) }
            if m.trailingBytes > 0 { d.warn(.wrongLength) }
            let w = Double(m.instantaneousPowerW)
            if w > RateLimits.powerWMax { d.warn(.absurdValue) } else { d.powerW = max(0, w) }
            if let r = m.rightBalancePercent { d.pedalBalanceRightPercent = r } else if (m.pedalPowerBalanceHalfPercent ?? 0) > 200 { d.warn(.absurdValue) }
            if let n = m.wheelRevolutions, let t = m.wheelEventTime2048 { wheelReading(UInt64(n), UInt64(t), at: now, into: &d) }
            if let n = m.crankRevolutions, let t = m.crankEventTime1024 { crankReading(UInt64(n), UInt64(t), at: now, into: &d) }
            if let e = m.accumulatedEnergyKJ { d.energyKJ = Double(e) }
        case .bleCyclingPowerFeature:
            let m = try CyclingPowerFeature.parse(p)
            m.visitFields(&fields)
            if m.reservedBits { d.warn(.reservedFlags) }
        case .bleBatteryLevel:
            let m = try BatteryLevel.parse(p)
            m.visitFields(&fields)
            d.batteryPercent = Int(m.percent)
        case .antHeartRate:
            let m = try ANTHeartRatePage.parse(p)
            trackToggle(m.toggle)
            m.visitFields(&fields, pagesTrusted: pagesTrusted)
            antHeartRate(m, into: &d)
        case .antBikePower:
            let m = try ANTPowerPage.parse(p)
            m.visitFields(&fields)
            antPower(m, at: now, into: &d)
        case .antSpeedCadence:
            let m = try ANTSpeedCadencePage.parse(p)
            m.visitFields(&fields)
            wheelReading(UInt64(m.wheelRevolutions), UInt64(m.speedEventTime1024), at: now, into: &d)
            crankReading(UInt64(m.crankRevolutions), UInt64(m.cadenceEventTime1024), at: now, into: &d)
        case .antCadence, .antSpeed:
            let m = try ANTSpeedOrCadencePage.parse(p)
            trackToggle(m.toggle)
            m.visitFields(&fields, speed: profile == .antSpeed, pagesTrusted: pagesTrusted)
            if profile == .antSpeed {
                let before = wheel.lastCount
                wheelReading(UInt64(m.revolutions), UInt64(m.eventTime1024), at: now, into: &d)
                // Page 5's stop indicator zeroes speed at once, without waiting for the zero time.
                if pagesTrusted, m.stopped == true, before == UInt64(m.revolutions) {
                    wheel.stop()
                    d.speedMps = 0
                    d.wheelRpm = 0
                }
            } else {
                crankReading(UInt64(m.revolutions), UInt64(m.eventTime1024), at: now, into: &d)
            }
            if pagesTrusted, let b = m.battery { d.batteryPercent = b.status.approximatePercent }
        case .antBikeRadar:
            let m = try ANTRadarPage.parse(p)
            m.visitFields(&fields)
            antRadar(m, at: now, into: &d)
        case .bleRadar:
            let m = try VariaRadarMessage.parse(p)
            m.visitFields(&fields)
            variaRadar(m, at: now, into: &d)
        }
        return d
    }

    /// Decodes without reporting fields (the device path).
    public mutating func decode(_ p: Payload, at now: MonotonicInstant) throws(DecodeError) -> DerivedValues {
        var none = NoFields()
        return try decode(p, at: now, fields: &none)
    }

    // MARK: Helpers

    private mutating func trackToggle(_ toggle: Bool) {
        if let last = lastToggle, last != toggle { pagesTrusted = true }
        lastToggle = toggle
    }

    private func heartRate(_ bpm: Double, into d: inout DerivedValues) {
        guard bpm != 0 else { return } // no reading
        guard bpm >= RateLimits.heartRateBpmMin && bpm <= RateLimits.heartRateBpmMax else { d.warn(.absurdValue); return }
        d.heartRateBpm = bpm
    }

    private func note(_ o: RateOutcome, into d: inout DerivedValues) {
        switch o {
        case .spike: d.warn(.absurdValue)
        case .inconsistent: d.warn(.inconsistentEvent)
        default: break
        }
    }

    private mutating func wheelReading(_ count: UInt64, _ time: UInt64, at now: MonotonicInstant, into d: inout DerivedValues) {
        let o = wheel.update(count: count, time: time, at: now)
        note(o, into: &d)
        switch o {
        case .first: distanceM = distanceM ?? 0
        case .newEvents(let n), .rebased(let n): distanceM = (distanceM ?? 0) + Double(n) * wheelCircumferenceM
        default: break
        }
        d.distanceM = distanceM
        if let r = wheel.eventsPerSecond {
            d.wheelRpm = r * 60
            d.speedMps = r * wheelCircumferenceM
        }
    }

    private mutating func crankReading(_ count: UInt64, _ time: UInt64, at now: MonotonicInstant, into d: inout DerivedValues) {
        note(crank.update(count: count, time: time, at: now), into: &d)
        if let r = crank.eventsPerSecond { d.cadenceRpm = r * 60 }
    }

    private mutating func antHeartRate(_ m: ANTHeartRatePage, into d: inout DerivedValues) {
        heartRate(Double(m.heartRateBpm), into: &d)
        if let last = lastBeatCount, last != m.beatCount {
            let beats = wrappingDelta(UInt64(m.beatCount), UInt64(last), bits: 8)
            if pagesTrusted, let prev = m.previousEventTime1024 {
                d.appendRR(UInt16(wrappingDelta(UInt64(m.eventTime1024), UInt64(prev), bits: 16)))
            } else if beats == 1 {
                d.appendRR(UInt16(wrappingDelta(UInt64(m.eventTime1024), UInt64(lastBeatTime), bits: 16)))
            }
        }
        lastBeatCount = m.beatCount
        lastBeatTime = m.eventTime1024
        if pagesTrusted, let b = m.battery { d.batteryPercent = b.percent.map(Int.init) ?? b.status.approximatePercent }
    }

    private mutating func antPower(_ page: ANTPowerPage, at now: MonotonicInstant, into d: inout DerivedValues) {
        switch page {
        case let .powerOnly(e, pedal, cadence, acc, inst):
            seenPowerOnly = true
            if let c = cadence {
                if Double(c) > RateLimits.crankRevolutionsPerSecondMax * 60 { d.warn(.absurdValue) } else { d.cadenceRpm = Double(c) }
            }
            if pedal != 0xFF && pedal & 0x80 != 0 {
                let right = Double(pedal & 0x7F)
                if right > 100 { d.warn(.absurdValue) } else { d.pedalBalanceRightPercent = right }
            }
            if let e0 = powerEvent {
                let dE = wrappingDelta(UInt64(e), UInt64(e0), bits: 8)
                if dE == 0 {
                    if now.milliseconds(since: powerEventAt) >= RateLimits.powerZeroAfterMs { averagePowerW = 0 }
                } else {
                    let dP = wrappingDelta(UInt64(acc), UInt64(accumulatedPower), bits: 16)
                    let avg = Double(dP) / Double(dE)
                    if avg > RateLimits.powerWMax { d.warn(.absurdValue) } else { averagePowerW = avg }
                    powerEventAt = now
                }
            } else {
                powerEventAt = now
            }
            powerEvent = e
            accumulatedPower = acc
            d.averagePowerW = averagePowerW
            if Double(inst) > RateLimits.powerWMax { d.warn(.absurdValue) }
            d.powerW = averagePowerW ?? (Double(inst) <= RateLimits.powerWMax ? Double(inst) : nil)
        case let .torque(isCrank, e, ticks, _, period, torque):
            antTorque(crank: isCrank, e, ticks, period, torque, at: now, into: &d)
        case let .torqueEffectivenessAndSmoothness(_, lte, rte, lps, rps, combined):
            func pct(_ v: UInt8?) -> Double? {
                guard let v else { return nil }
                return v <= 200 ? Double(v) / 2 : nil
            }
            d.torqueEffectivenessLeftPercent = pct(lte)
            d.torqueEffectivenessRightPercent = pct(rte)
            d.pedalSmoothnessLeftPercent = pct(lps)
            d.pedalSmoothnessRightPercent = combined ? nil : pct(rps)
            if (lte ?? 0) > 200 || (rte ?? 0) > 200 || (lps ?? 0) > 200 || (!combined && (rps ?? 0) > 200) { d.warn(.absurdValue) }
        case .common(let c):
            if let b = c.batteryPercent { d.batteryPercent = b }
        }
    }

    // MARK: Rear radars

    /// How long page 49's targets (5–8) stand without a new page 49.
    static let antRadarPageBMaxAgeMs: Int64 = 1_000

    private mutating func antRadar(_ m: ANTRadarPage, at now: MonotonicInstant, into d: inout DerivedValues) {
        switch m {
        case let .targets(first, t):
            for i in 0..<4 {
                let f = t[i]
                guard f.threatLevel != 0 else { antRadarSlots[first + i] = nil; continue }
                if f.threatLevel == 3 { d.warn(.reservedFlags) }
                antRadarSlots[first + i] = RadarTarget(rangeM: Double(f.range) * ANTRadarField.rangeStepM,
                                                       closingSpeedMps: Double(f.speed) * ANTRadarField.speedStepMps,
                                                       threat: f.threatLevel == 2 ? .fastApproach : .approaching,
                                                       side: RadarSide(rawValue: f.side))
            }
            if first == 0 {
                // Page 48 with a free slot: at most three vehicles, so page 49's slots are free too.
                var full = true
                for i in 0..<4 where antRadarSlots[i] == nil { full = false }
                if !full { clearANTRadarPageB() }
            } else {
                antRadarPageBAt = now
            }
            if let b = antRadarPageBAt, now.milliseconds(since: b) > Self.antRadarPageBMaxAgeMs { clearANTRadarPageB() }
            var picture = RadarPicture()
            for i in 0..<RadarPicture.targetsMax { if let t = antRadarSlots[i] { picture.insert(t) } }
            d.radar = picture
        case .status:
            if m.isShutdown {
                d.radarShutdown = true
                for i in 0..<RadarPicture.targetsMax { antRadarSlots[i] = nil }
            }
        case .common(let c):
            if let b = c.batteryPercent { d.batteryPercent = b }
        }
    }

    private mutating func clearANTRadarPageB() {
        for i in 4..<RadarPicture.targetsMax { antRadarSlots[i] = nil }
        antRadarPageBAt = nil
    }

    private mutating func variaRadar(_ m: VariaRadarMessage, at now: MonotonicInstant, into d: inout DerivedValues) {
        switch m {
        case .diagnostic:
            break
        case .clear:
            if variaPendingCount > 0 { d.warn(.truncated) }
            variaPendingCount = 0
            d.radar = RadarPicture()
        case let .targets(header, n, t):
            if header & 0x0F == VariaRadarMessage.fragmentFollows {
                // A first fragment: kept until its last (a previous one that never got it is lost).
                if variaPendingCount > 0 { d.warn(.truncated) }
                for i in 0..<n { variaPending[i] = t[i] }
                variaPendingCount = n
                variaPendingHeader = header
                return
            }
            var picture = RadarPicture()
            if variaPendingCount > 0 {
                if variaPendingHeader >> 4 == header >> 4 {
                    for i in 0..<variaPendingCount { addVaria(variaPending[i], at: now, to: &picture, &d) }
                } else {
                    d.warn(.truncated)
                }
                variaPendingCount = 0
            }
            for i in 0..<n { addVaria(t[i], at: now, to: &picture, &d) }
            d.radar = picture
        }
    }

    private mutating func addVaria(_ v: VariaRadarTriplet, at now: MonotonicInstant, to picture: inout RadarPicture, _ d: inout DerivedValues) {
        guard v.isVehicle else { return }
        let speed = v.closingSpeedMps ?? estimatedClosingSpeed(track: v.track, rangeM: Double(v.range), at: now)
        if !picture.insert(RadarTarget(rangeM: Double(v.range), closingSpeedMps: speed, threat: RadarThreatRule.threat(closingSpeedMps: speed))) {
            d.warn(.absurdValue)  // more than eight vehicles in one frame
        }
    }

    /// A track's closing speed from its range over at least `RadarTrack.estimateWindowMs` (a
    /// RearVue 820 reports none in this characteristic); nil until one window has passed.
    private mutating func estimatedClosingSpeed(track: UInt8, rangeM: Double, at now: MonotonicInstant) -> Double? {
        let ms = now.milliseconds
        var slot = -1
        var victim = 0  // a free slot, else the one seen longest ago
        for i in 0..<RadarPicture.targetsMax {
            let t = radarTracks[i]
            if t.inUse && t.track == track { slot = i; break }
            let v = radarTracks[victim]
            if v.inUse && (!t.inUse || t.lastSeenMs < v.lastSeenMs) { victim = i }
        }
        if slot < 0 || ms - radarTracks[slot].lastSeenMs > RadarTrack.forgetAfterMs {
            if slot < 0 { slot = victim }
            radarTracks[slot] = RadarTrack(track: track, referenceRangeM: rangeM, referenceMs: ms, lastSeenMs: ms)
            return nil
        }
        radarTracks[slot].lastSeenMs = ms
        let dt = ms - radarTracks[slot].referenceMs
        if dt >= RadarTrack.estimateWindowMs {
            radarTracks[slot].closingSpeedMps = (radarTracks[slot].referenceRangeM - rangeM) * 1000 / Double(dt)
            radarTracks[slot].referenceRangeM = rangeM
            radarTracks[slot].referenceMs = ms
        }
        return radarTracks[slot].closingSpeedMps
    }

    private mutating func antTorque(crank isCrank: Bool, _ e: UInt8, _ ticks: UInt8, _ period: UInt16, _ torque: UInt16,
                                    at now: MonotonicInstant, into d: inout DerivedValues) {
        defer {
            torqueEvent = e
            torqueTicks = ticks
            torquePeriod = period
            torqueAccumulated = torque
        }
        guard let e0 = torqueEvent else {
            torqueEventAt = now
            if !isCrank { distanceM = 0; d.distanceM = 0 }
            return
        }
        let dE = wrappingDelta(UInt64(e), UInt64(e0), bits: 8)
        if dE == 0 {
            if now.milliseconds(since: torqueEventAt) >= RateLimits.powerZeroAfterMs {
                torquePowerW = 0
                if isCrank { torqueCadenceRpm = 0 } else { torqueSpeedMps = 0 }
            }
        } else {
            let dPeriod = wrappingDelta(UInt64(period), UInt64(torquePeriod), bits: 16)
            let dTorque = wrappingDelta(UInt64(torque), UInt64(torqueAccumulated), bits: 16)
            torqueEventAt = now
            if dPeriod == 0 {
                // Events without rotation: coasting.
                torquePowerW = 0
                if isCrank { torqueCadenceRpm = 0 } else { torqueSpeedMps = 0 }
            } else {
                let rpm = 60 * 2048 * Double(dE) / Double(dPeriod)
                let powerW = 128 * Double.pi * Double(dTorque) / Double(dPeriod)
                let rpmMax = isCrank ? RateLimits.crankRevolutionsPerSecondMax * 60 : RateLimits.wheelRevolutionsPerSecondMax * 60
                if powerW > RateLimits.powerWMax || rpm > rpmMax {
                    d.warn(.absurdValue)
                } else {
                    torquePowerW = powerW
                    d.torqueNm = Double(dTorque) / (32 * Double(dE))
                    if isCrank { torqueCadenceRpm = rpm } else { torqueSpeedMps = rpm / 60 * wheelCircumferenceM; d.wheelRpm = rpm }
                }
            }
            if !isCrank {
                let dTicks = wrappingDelta(UInt64(ticks), UInt64(torqueTicks), bits: 8)
                distanceM = (distanceM ?? 0) + Double(dTicks) * wheelCircumferenceM
            }
        }
        d.averagePowerW = torquePowerW
        if !seenPowerOnly { d.powerW = torquePowerW }
        if isCrank { d.cadenceRpm = torqueCadenceRpm } else { d.speedMps = torqueSpeedMps; d.distanceM = distanceM }
    }
}
