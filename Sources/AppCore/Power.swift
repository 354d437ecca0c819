import Battery
import RideModel

/// The unit's battery, powering off before the pack dies, and the phone's time (docs/power.md).
extension AppCore {
    /// How long the power button must be held; every other button's long press is `longPressMs`.
    func longPressMs(_ b: Button) -> Int64 {
        b == .power ? configuration.powerOffHoldMs : configuration.longPressMs
    }

    /// A fuel gauge's reading: the charge, drain and level on screen; an alert when a level is
    /// reached on the way down; the power-off at the critical level or when the battery board's
    /// power button asks for it.
    mutating func handleBattery(_ r: BatteryReading?, at now: MonotonicInstant) {
        guard battery != nil else { return }
        let change = battery!.update(r, atMs: now.milliseconds)
        screen.battery = battery!.status(atMs: now.milliseconds)
        switch change {
        case .levelFell(let level):
            guard screen.poweringOff == nil else { return }
            let percent = screen.battery?.percent ?? 0
            showOverlay(level == .critical ? .batteryEmpty : .lowBattery(percent: percent), at: now)
        case .powerOffNeeded:
            powerOff(.batteryCritical, at: now)
        case .powerButton:
            powerOff(.powerButton, at: now)
        case .charging, nil:
            break
        }
    }

    /// Ends what must not go on while the unit is off and asks the device to power off: a
    /// running ride is paused (its records synced; after the pack is recharged it is recovered,
    /// paused, and the rider resumes or ends it), a countdown is cancelled, the Sensors screen
    /// closed; the screen says why until the power goes. Once only.
    mutating func powerOff(_ reason: PowerOffReason, at now: MonotonicInstant) {
        guard screen.poweringOff == nil else { return }
        switch lifecycle.state {
        case .running: pause(at: now, trigger: .manual)
        case .prepared: cancelCountdown(at: now)
        case .idle: closeSensors(at: now)
        default: break
        }
        screen.poweringOff = reason
        emit(.alert(.poweringOff(reason)))
        if lifecycle.state.isRideInProgress { emit(.syncJournal) }
        emit(.powerOff(reason))
    }

    /// The unit's battery as the ride keeps it (start and end: the FIT file's device_info).
    mutating func journalBattery(_ key: String) {
        guard let b = battery, let r = b.lastReading, let p = b.percent else { return }
        let value = DeviceBattery(percent: Int(p.rounded()), voltageMv: r.voltageV.map { Int(($0 * 1000).rounded()) },
                                  charging: b.charging).metadataValue
        journal(.metadata(key: key, value: value))
        replayMetadata(key: key, value: value)
    }

    /// A paired phone's time (docs/power.md, "Time from the phone"): taken as a trusted reading
    /// only while the unit's clock is not trusted, and only when it is not behind the unit's own
    /// (untrusted) clock, which at worst is the time the board last saved, so real time cannot
    /// be before it. A trusted clock is never moved by a phone.
    mutating func phoneTime(_ unixMs: Int64, at now: MonotonicInstant) -> ActionOutcome {
        if let a = wallAnchor, a.wall.trusted {
            phoneTimesRefused &+= 1
            return .refused("the unit's clock is already trusted (\(a.wall.unixMs) ms); the phone's time is not used")
        }
        if let seen = observedWall, !seen.wall.trusted {
            let boardNow = seen.wallTime(at: now).unixMs
            guard unixMs >= boardNow - Self.phoneTimeToleranceMs else {
                phoneTimesRefused &+= 1
                return .refused("the phone's time is \((boardNow - unixMs) / 1000) s behind the unit's clock, which is never ahead of the true time; check the phone's clock")
            }
        }
        handleWallClock(WallClockTime(unixMs: unixMs, trusted: true), at: now)
        phoneTimesAccepted &+= 1
        return .done("clock set from the phone")
    }

    /// How far behind the unit's untrusted clock a phone's time may be (the HTTP round trip).
    static let phoneTimeToleranceMs: Int64 = 5_000
}
