import RideModel
import Training

/// Zones for one ride, target-zone alerts, auto-pause and auto-lap (issue 9).
///
/// Everything here is decided at the 1 Hz records, from the values the record journals, so that
/// crash recovery (`replay`) feeding the same records rebuilds the same state: the monitors see
/// the same values in the same order, and the events they caused (auto pauses, distance/time
/// laps) come back from the journal right after the record that caused them.
extension AppCore {
    /// Metadata keys naming where the ride's zones came from ("custom" or "preferred").
    public static let heartRateZonesSourceKey = "zones.heart_rate.source"
    public static let powerZonesSourceKey = "zones.power.source"

    /// The ride settings the next ride will start with: the preferred zones, replaced by custom
    /// zones set for that ride.
    public var rideSettingsForNextRide: RideSettings {
        var s = configuration.ride
        if let z = zoneSlots[ZoneSlot.heartRate.rawValue].customZones { s.heartRateZones = z }
        if let z = zoneSlots[ZoneSlot.power.rawValue].customZones { s.powerZones = z }
        return s
    }

    /// The zones of `q` that a target set now would be checked against: the ride's own zones
    /// while a ride is in progress, else the next ride's.
    func zonesForTarget(_ q: Quantity) -> ZoneConfiguration? {
        let s = (lifecycle.state.isRideInProgress && builder != nil) ? builder!.settings : rideSettingsForNextRide
        return q == .power ? s.powerZones : s.heartRateZones
    }

    var rideCollecting: Bool { builder != nil && (lifecycle.state == .running || lifecycle.state == .paused) }

    // MARK: Commands

    /// A training command's outcome (the reply is made from it in `handleCommand`).
    mutating func trainingCommand(_ c: ControlCommand, at now: MonotonicInstant) -> ActionOutcome {
        switch c {
        case .setRideZones(let z):
            guard !(lifecycle.state == .running || lifecycle.state == .paused || lifecycle.state == .stopped) else {
                return .refused("custom zones apply from the start of a ride; set them before starting (this ride keeps its zones)")
            }
            guard let slot = ZoneSlot(z.quantity) else { return .refused("zones are for heart rate or power, not \(z.quantity)") }
            zoneSlots[slot.rawValue].customZones = z
            var dropped = ""
            if let t = training.target(z.quantity), (try? t.validate(against: z)) == nil {
                training.setTarget(z.quantity, nil)
                dropped = "; the \(z.quantity) target Z\(t.zone + 1) no longer exists and was turned off"
            }
            let list = z.boundaries.map { ZoneFormulas.format($0) }.joined(separator: ", ")
            return .done("custom \(z.quantity) zones for the next ride: \(z.zoneCount) zones, boundaries \(list) \(z.quantity.unit) (not saved as preferred)\(dropped)")
        case .clearRideZones(let q):
            guard !(lifecycle.state == .running || lifecycle.state == .paused || lifecycle.state == .stopped) else {
                return .refused("this ride keeps its zones; clear custom zones before the next ride starts")
            }
            guard let slot = ZoneSlot(q) else { return .refused("zones are for heart rate or power, not \(q)") }
            zoneSlots[slot.rawValue].customZones = nil
            return .done("the next ride uses the preferred \(q) zones")
        case .setTargetZone(let t):
            do {
                try t.validate(against: zonesForTarget(t.quantity))
            } catch {
                return .refused("target zone refused: \(error)")
            }
            var s = training
            s.setTarget(t.quantity, t)
            changeTraining(key: t.quantity == .power ? TrainingSettings.powerTargetKey : TrainingSettings.heartRateTargetKey, in: s, at: now)
            let shown = zonesForTarget(t.quantity)?.number(ofZone: t.zone) ?? t.zone + 1
            return .done("\(t.quantity) target zone Z\(shown)\(rideCollecting ? "" : " for the next ride")")
        case .setTargetZoneNumber(let q, let number):
            guard ZoneSlot(q) != nil else { return .refused("target zones are for heart rate or power, not \(q)") }
            guard let zones = zonesForTarget(q), zones.zoneCount > 0 else { return .refused("there are no \(q) zones: set an FTP or zones first") }
            guard let index = (0..<zones.zoneCount).first(where: { zones.number(ofZone: $0) == number }) else {
                return .refused("there is no \(q) zone Z\(number): the zones are Z\(zones.number(ofZone: 0))–Z\(zones.number(ofZone: zones.zoneCount - 1))")
            }
            return trainingCommand(.setTargetZone(TargetZone(quantity: q, zone: index)), at: now)
        case .clearTargetZone(let q):
            guard ZoneSlot(q) != nil else { return .refused("target zones are for heart rate or power, not \(q)") }
            var s = training
            s.setTarget(q, nil)
            changeTraining(key: q == .power ? TrainingSettings.powerTargetKey : TrainingSettings.heartRateTargetKey, in: s, at: now)
            return .done("\(q) target zone off")
        case .setAutoPause(let a):
            if let a {
                do { try a.validate() } catch { return .refused("auto-pause refused: \(error)") }
            }
            var s = training
            s.autoPause = a
            changeTraining(key: TrainingSettings.autoPauseKey, in: s, at: now)
            return .done(a == nil ? "auto-pause off" : "auto-pause on: below \(ZoneFormulas.format(((a!.thresholdMps * 36).rounded()) / 10)) km/h for \(ZoneFormulas.format(Double(a!.delayMs) / 1000)) s")
        case .setAutoLap(let l):
            if let l {
                do { try l.validate() } catch { return .refused("auto-lap refused: \(error)") }
            }
            var s = training
            s.autoLap = l
            changeTraining(key: TrainingSettings.autoLapKey, in: s, at: now)
            var every: [String] = []
            if let d = l?.everyDistanceM { every.append("\(ZoneFormulas.format(d)) m") }
            if let t = l?.everyTimerMs { every.append("\(ZoneFormulas.format(Double(t) / 1000)) s") }
            return .done(l == nil ? "auto-lap off" : "auto-lap on: every \(every.joined(separator: " or "))")
        default:
            return .refused("\(c) is not a training command")
        }
    }

    /// Applies one changed training setting. While a ride is collecting the change is journaled
    /// (and applied from its journal form, exactly as a replay will apply it).
    mutating func changeTraining(key: String, in new: TrainingSettings, at now: MonotonicInstant) {
        let value = new.metadataValue(forKey: key)!
        if rideCollecting {
            journal(.metadata(key: key, value: value))
            emit(.syncJournal)
            builder!.setMetadata(key, value)
            applyTrainingEntry(key: key, value: value)
        } else {
            training = new
        }
    }

    /// Applies a journaled training setting to the ride in progress.
    mutating func applyTrainingEntry(key: String, value: String) {
        do {
            try training.apply(metadataKey: key, value: value)
        } catch {
            unreadableSettings &+= 1
            return
        }
        switch key {
        case TrainingSettings.heartRateTargetKey: rebuildTargetMonitor(.heartRate)
        case TrainingSettings.powerTargetKey: rebuildTargetMonitor(.power)
        case TrainingSettings.autoPauseKey: autoPause.update(settings: training.autoPause)
        default: break
        }
    }

    mutating func rebuildTargetMonitor(_ slot: ZoneSlot) {
        guard let b = builder, let t = training.target(slot.quantity), let zones = slot.zones(of: b.settings),
              (try? t.validate(against: zones)) != nil else {
            zoneSlots[slot.rawValue].targetMonitor = nil
            return
        }
        zoneSlots[slot.rawValue].targetMonitor = TargetZoneMonitor(target: t, zones: zones)
    }

    // MARK: Ride lifecycle

    /// Journals the ride's zone sources and training settings right after its header.
    mutating func journalTrainingAtStart() {
        guard let b = builder else { return }
        // A target that does not fit the ride's zones is turned off (journaled as off).
        for q in [Quantity.heartRate, .power] {
            if let t = training.target(q), (try? t.validate(against: q == .power ? b.settings.powerZones : b.settings.heartRateZones)) == nil {
                training.setTarget(q, nil)
            }
        }
        // The software that records the ride (the FIT file's device_info says it).
        var entries: [(key: String, value: String)] = [(ProjectVersion.metadataKey, ProjectVersion.fitVersionText)]
        if b.settings.heartRateZones != nil { entries.append((Self.heartRateZonesSourceKey, customZones(.heartRate) == nil ? "preferred" : "custom")) }
        if b.settings.powerZones != nil { entries.append((Self.powerZonesSourceKey, customZones(.power) == nil ? "preferred" : "custom")) }
        entries += training.metadataEntries
        for e in entries {
            journal(.metadata(key: e.key, value: e.value))
            replayMetadata(key: e.key, value: e.value)
        }
    }

    /// A metadata record, live or replayed.
    mutating func replayMetadata(key: String, value: String) {
        builder?.setMetadata(key, value)
        if TrainingSettings.isTrainingKey(key) { applyTrainingEntry(key: key, value: value) }
        replayNavigationMetadata(key: key, value: value)
    }

    mutating func trainingDidStart(at instant: MonotonicInstant) {
        autoPause = AutoPauseMonitor(settings: training.autoPause)
        autoPause.didStart(at: instant)
        for slot in ZoneSlot.allCases { rebuildTargetMonitor(slot) }
        resetAnnouncedZones()
    }

    mutating func trainingDidPause(at instant: MonotonicInstant, trigger: Trigger) {
        autoPause.didPause(at: instant, trigger: trigger)
        for i in zoneSlots.indices { zoneSlots[i].targetMonitor?.reset() }
    }

    mutating func trainingDidResume(at instant: MonotonicInstant, trigger: Trigger) {
        autoPause.didResume(at: instant, trigger: trigger)
    }

    /// The ride ended: settings made for it by commands are forgotten.
    mutating func trainingDidFinish() {
        training = configuration.training
        for i in zoneSlots.indices {
            zoneSlots[i].customZones = nil
            zoneSlots[i].targetMonitor = nil
        }
        autoPause = AutoPauseMonitor(settings: nil)
    }

    // MARK: Records

    mutating func noteRecordValue(_ s: Sample) {
        switch s.quantity {
        case .heartRate: recordValues.heartRate = s.value
        case .power: recordValues.power = s.value
        case .speed: recordValues.speed = s.value
        case .latitude: recordValues.latitude = s.value
        case .longitude: recordValues.longitude = s.value
        default: break
        }
    }

    /// After the samples of the record at `instant` went into the builder: zone updates, target
    /// alerts, auto-pause, auto-lap. When replaying (`live == false`) the monitors are fed the
    /// same way but nothing is emitted and no event is made (the journal has the events).
    mutating func afterRecord(at instant: MonotonicInstant, live: Bool) {
        guard builder != nil else { return }
        builder!.advance(to: instant)
        recordTrackPoint(latitude: recordValues.latitude, longitude: recordValues.longitude, at: instant)
        if live { followCourse(at: instant) }
        checkZoneChanges(at: instant, emitting: live)
        guard lifecycle.state == .running || lifecycle.state == .paused else { return }
        if lifecycle.state == .running {
            for slot in ZoneSlot.allCases {
                guard let event = zoneSlots[slot.rawValue].targetMonitor?.observe(recordValues.value(slot), at: instant), live else { continue }
                let q = slot.quantity
                switch event {
                case .drift(let above): showOverlay(.zoneDrift(q, above: above), at: instant)
                case .backInZone: showOverlay(.backInZone(q), at: instant)
                }
            }
        }
        let decision = autoPause.observe(speedMps: recordValues.speed, at: instant)
        guard live else { return }
        switch decision {
        case .pause?: pause(at: instant, trigger: .auto)
        case .resume?: resume(at: instant, trigger: .auto)
        case nil: break
        }
        if lifecycle.state == .running, let autoLap = training.autoLap, let b = builder, let lap = b.currentLap,
           let trigger = autoLap.due(lapDistanceM: lap.statistics.distanceM, lapTimerMs: b.lapTimerTimeMs(at: instant), carriedM: autoLapCarryM) {
            self.lap(at: instant, trigger: trigger)
        }
    }

    /// After any lap (live or replayed, so recovery keeps the distance marks): how far the
    /// closed lap ran past its distance mark.
    mutating func noteLapForAutoLap(_ trigger: Trigger) {
        guard let b = builder, b.laps.count >= 2 else { autoLapCarryM = 0; return }
        let closed = b.laps[b.laps.count - 2]
        autoLapCarryM = training.autoLap?.carry(after: trigger, lapDistanceM: closed.statistics.distanceM, carriedM: autoLapCarryM) ?? 0
    }

    /// Replay: the record being replayed is complete (a record of another kind or instant came).
    mutating func finishReplayedRecord() {
        guard let t = replayRecordInstant else { return }
        replayRecordInstant = nil
        afterRecord(at: t, live: false)
        recordValues = RecordValues()
    }

    /// The target zones being watched (0-based zone per quantity), for status displays.
    public func targetZone(_ q: Quantity) -> TargetZone? {
        targetMonitor(q)?.target
    }

    /// The state of the target-zone monitor of `q` (nil when no target is watched).
    public func targetMonitor(_ q: Quantity) -> TargetZoneMonitor? { ZoneSlot(q).flatMap { zoneSlots[$0.rawValue].targetMonitor } }

    /// The current zone (0-based) of `q` as last announced by a live zone update.
    public func currentZone(_ q: Quantity) -> Int? { ZoneSlot(q).flatMap { zoneSlots[$0.rawValue].lastZone } }
}
