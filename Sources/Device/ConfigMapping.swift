import AppCore
import Battery
import Configuration
import Display
import Journal
import RideModel
import Sensors
import Training

/// Why a valid config file still cannot drive the device (the zones it describes cannot be
/// built). The message says what to change.
public struct ConfigMappingError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Everything `bikecomputer run` needs, derived from a `DeviceConfig` with no I/O: the app
/// core's configuration (zones, FTP, training features, expected sensors), the data source's
/// pairing, the journal's commit policy, the display panel and the button lines.
public struct DeviceSettings: Sendable {
    public var app: AppConfiguration
    public var zones: ZonesInForce
    public var dataSource: DataSourceConfiguration
    public var commitPolicy: CommitPolicy
    public var panel: PanelConfiguration
    /// Button for each configured pin, in config order.
    public var buttonLines: [(button: Button, offset: UInt32)]
    /// Raw button edges are debounced this long.
    public var buttonDebounceMs: Int64
    public var dataDirectory: String
    public var journalDirectory: String
    public var controlSocket: String
    public var bridgePath: String
    /// The bridge is a serial device at this baud rate; nil: a Unix socket at `bridgePath`.
    public var bridgeSerialBaud: Int?
    /// The SPI memory LCD when `[display] type` names one (then `panel` is unused); nil: an OLED.
    public var memoryLCD: MemoryLCDSettings? = nil
}

/// The pure mapping from the config file's typed settings onto the app's types.
public enum ConfigMapping {
    /// The journal lives in this subdirectory of the data directory (as `bikecomputer journal`
    /// expects).
    public static let journalSubdirectory = "journal"

    public static func settings(_ c: DeviceConfig, dataDirectory: String? = nil) throws(ConfigMappingError) -> DeviceSettings {
        let zones = try zonesInForce(c)
        let dir = dataDirectory ?? c.storage.dataDir
        return DeviceSettings(app: appConfiguration(c, zones: zones), zones: zones, dataSource: dataSource(c),
                              commitPolicy: commitPolicy(c), panel: try panel(c), buttonLines: buttonLines(c),
                              buttonDebounceMs: Int64(c.buttons.debounceMs),
                              dataDirectory: dir, journalDirectory: dir + "/" + journalSubdirectory,
                              controlSocket: c.control.socket, bridgePath: c.bridge.effectivePath,
                              bridgeSerialBaud: c.bridge.transport == .serial ? c.bridge.baud : nil,
                              memoryLCD: memoryLCD(c))
    }

    // MARK: Rider and zones

    public static func riderProfile(_ c: DeviceConfig) throws(ConfigMappingError) -> RiderProfile {
        let model: HeartRateZoneModel?
        var explicitHR: ZoneConfiguration?
        switch c.zones.hrModel {
        case .maxHr: model = .percentOfMax
        case .hrr: model = .heartRateReserve
        case .lthr: model = .percentOfLactateThreshold
        case .explicit:
            model = nil
            do {
                explicitHR = try ZoneConfiguration(quantity: .heartRate, boundaries: c.zones.hrBoundaries.map(Double.init))
            } catch {
                throw ConfigMappingError("[zones] hr_boundaries \(c.zones.hrBoundaries) do not make heart-rate zones: \(error); give strictly ascending bpm values")
            }
        }
        var explicitPower: ZoneConfiguration?
        if !c.zones.powerBoundaries.isEmpty {
            do {
                explicitPower = try ZoneConfiguration(quantity: .power, boundaries: c.zones.powerBoundaries.map(Double.init))
            } catch {
                throw ConfigMappingError("[zones] power_boundaries \(c.zones.powerBoundaries) do not make power zones: \(error); give strictly ascending watt values")
            }
        }
        return RiderProfile(age: c.rider.age, restingHeartRateBpm: Double(c.rider.restingHr), maxHeartRateBpm: Double(c.rider.maxHr),
                            lactateThresholdHeartRateBpm: c.rider.lthr.map(Double.init), ftpW: Double(c.rider.ftpW),
                            heartRateModel: model, explicitHeartRateZones: explicitHR, explicitPowerZones: explicitPower)
    }

    public static func zonesInForce(_ c: DeviceConfig) throws(ConfigMappingError) -> ZonesInForce {
        let profile = try riderProfile(c)
        do {
            return try ZonesInForce.preferred(from: profile)
        } catch {
            throw ConfigMappingError("[rider]/[zones]: \(error)")
        }
    }

    // MARK: App core

    public static func appConfiguration(_ c: DeviceConfig, zones: ZonesInForce) -> AppConfiguration {
        var training = TrainingSettings()
        if c.training.autoPause {
            training.autoPause = AutoPauseSettings(thresholdMps: c.training.autoPauseSpeedKmh / 3.6)
        }
        if c.training.autoLap {
            training.autoLap = AutoLapSettings(everyDistanceM: Double(c.training.autoLapDistanceM))
        }
        let ride = zones.applied(to: RideSettings(), ftpW: Double(c.rider.ftpW))
        var app = AppConfiguration(ride: ride, longPressMs: Int64(c.buttons.longPressMs),
                                   expectedSensors: expectedSensors(c), training: training)
        app.cadenceAveraging = c.training.averageCadenceZeros ? .includeZeros : .excludeZeros
        app.powerAveraging = c.training.averagePowerZeros ? .includeZeros : .excludeZeros
        app.runningPageCount = runningPageCount(c)
        app.battery = batterySettings(c)
        app.powerOffHoldMs = Int64(c.buttons.powerOffHoldMs)
        return app
    }

    /// The roles the paired sensors fill (a ride warns when one of them is missing).
    public static func expectedSensors(_ c: DeviceConfig) -> [SensorRole] {
        var roles: [SensorRole] = []
        func add(_ r: SensorRole) { if !roles.contains(r) { roles.append(r) } }
        for s in c.sensors { s.role.roles.forEach(add) }
        if c.gps.enabled { add(.gps) }
        return roles.sorted { $0.rawValue < $1.rawValue }
    }

    // MARK: Sensors

    /// Who a [[sensor]] block names, as the data source and the bridge know it: its ANT+ channel
    /// id (the role's device type unless `ant_device_type` says otherwise) or its BLE address;
    /// nil when the block names none.
    public static func identity(of s: DeviceConfig.Sensor) -> SourceIdentity? {
        switch s.transport {
        case .ant:
            guard let n = s.antDeviceNumber else { return nil }
            let type = s.antDeviceType.map { UInt8(clamping: $0) } ?? s.role.antDeviceType
            return .ant(deviceNumber: UInt16(clamping: n), deviceType: type, transmissionType: 0)
        case .ble:
            return s.bleAddress.flatMap { BLEAddress($0) }.map { .ble($0) }
        }
    }

    /// A sensor id pairing parsed, as the data source and the status write it.
    public static func identity(of id: SensorPairing.Identity) -> SourceIdentity? {
        switch id {
        case .ble(let a): BLEAddress(a).map { .ble($0) }
        case let .ant(n, t): .ant(deviceNumber: UInt16(clamping: n), deviceType: UInt8(clamping: t), transmissionType: 0)
        }
    }

    /// The paired sensors in config order (earlier = higher priority) and the wheel. What each
    /// provides is its role's (`SensorKind.quantities`): a BLE address says nothing of the
    /// sensor's kind, so the role is what keeps a heart-rate strap from standing for the power
    /// meter listed after it.
    public static func dataSource(_ c: DeviceConfig) -> DataSourceConfiguration {
        var paired: [PairedSensor] = []
        for (i, s) in c.sensors.prefix(DataSourceConfiguration.pairedSensorsMax).enumerated() {
            guard let id = identity(of: s) else { continue }
            paired.append(PairedSensor(id, kind: s.role, priority: i))
        }
        paired += onboardSources(c)
        return DataSourceConfiguration(sensors: paired, wheelCircumferenceMm: c.bike.wheelCircumferenceMm)
    }

    // MARK: Journal, display, buttons

    public static func commitPolicy(_ c: DeviceConfig) -> CommitPolicy {
        var p = CommitPolicy()
        p.commitIntervalMs = Int64(c.storage.fsyncIntervalMs)
        return p
    }

    public static func panel(_ c: DeviceConfig) throws(ConfigMappingError) -> PanelConfiguration {
        guard !c.display.type.isSPI else { return PanelConfiguration() }
        guard c.display.address == 0x3C || c.display.address == 0x3D else {
            throw ConfigMappingError("[display] address 0x\(String(c.display.address, radix: 16)): SSD1306/SH1106 panels answer at 0x3c or 0x3d; set address = 0x3C (or 0x3D if the module's jumper says so)")
        }
        let address = UInt8(c.display.address)
        let contrast = UInt8(clamping: c.display.contrast)
        return PanelConfiguration(controller: c.display.type == .sh1106 ? .sh1106 : .ssd1306,
                                  height: c.display.height == 32 ? 32 : 64, address: address,
                                  contrastActive: contrast, contrastIdle: min(contrast, 0x10))
    }

    /// Pins in config order: start/pause, lap, then (optional) page; then the power button's.
    public static func buttonLines(_ c: DeviceConfig) -> [(button: Button, offset: UInt32)] {
        var out: [(Button, UInt32)] = []
        let listed: [Button] = [.startPause, .lap, .page]
        for (i, pin) in c.buttons.pins.prefix(listed.count).enumerated() {
            out.append((listed[i], UInt32(clamping: pin)))
        }
        if let p = c.buttons.powerPin { out.append((.power, UInt32(clamping: p))) }
        return out
    }

    /// The `[battery]` table as the monitor's settings (docs/power.md).
    public static func batterySettings(_ c: DeviceConfig) -> BatterySettings {
        let b = c.battery
        var s = BatterySettings()
        s.enabled = b.enabled
        s.gauge = switch b.gauge {
        case .max17048: .max17048
        case .ina219: .ina219
        case .pisugar3: .pisugar3
        }
        s.shuntOhms = b.shuntOhms
        s.cells = b.cells
        s.invertCurrent = b.invertCurrent
        s.capacityMah = b.capacityMah
        s.lowPercent = b.lowPercent
        s.veryLowPercent = b.veryLowPercent
        s.criticalPercent = b.criticalPercent
        s.powerOff = b.powerOff
        return s
    }
}
