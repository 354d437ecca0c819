import AppCore
import Configuration
import Device
import Display
import RideModel
import Sensors
import Testing
import Training

/// `ConfigMapping`: the config file's settings onto the app core, the data source, the journal,
/// the display and the buttons.
struct ConfigMappingTests {
    func load(_ text: String) throws -> DeviceConfig {
        switch ConfigLoader.load(text: text) {
        case .success(let c): return c
        case .failure(let e): throw e
        }
    }

    @Test func defaultsMapOntoTheRideAndTheDevice() throws {
        let s = try ConfigMapping.settings(DeviceConfig.defaults)
        // Rider defaults: max HR 185 with the % of max model, FTP 200.
        #expect(s.zones.heartRate.source == .percentOfMax(maxHeartRateBpm: 185, estimatedFromAge: nil))
        #expect(s.zones.power?.source == .ftp(ftpW: 200))
        #expect(s.app.ride.heartRateZones == s.zones.heartRate.zones)
        #expect(s.app.ride.powerZones == s.zones.power?.zones)
        #expect(s.app.ride.ftpW == 200)
        // Boundaries are 50…90 % of 185, ascending.
        let b = s.app.ride.heartRateZones!.boundaries
        #expect(b.first! >= 0.5 * 185 - 1 && b.first! <= 0.5 * 185 + 1)
        #expect(b.last! >= 0.9 * 185 - 1 && b.last! <= 0.9 * 185 + 1)
        #expect(zip(b, b.dropFirst()).allSatisfy { $0 < $1 })
        // Auto-pause on at 3 km/h, auto-lap off, no targets.
        #expect(s.app.training.autoPause?.thresholdMps == 3.0 / 3.6)
        #expect(s.app.training.autoLap == nil)
        #expect(s.app.training.heartRateTarget == nil)
        #expect(s.app.longPressMs == 1_500)
        // No paired sensors: nothing expected, nothing paired.
        #expect(s.app.expectedSensors.allSatisfy { !$0 })
        #expect(s.dataSource.sensors.isEmpty)
        #expect(s.dataSource.wheelCircumferenceMm == 2_105)
        #expect(s.commitPolicy.commitIntervalMs == 1_000)
        #expect(s.dataDirectory == "/var/lib/bikecomputer")
        #expect(s.journalDirectory == "/var/lib/bikecomputer/journal")
        #expect(s.controlSocket == "/run/bikecomputer/control.sock")
        #expect(s.bridgePath == "/run/bikecomputer/bridge.sock")
        #expect(s.panel.controller == .ssd1306 && s.panel.height == 64 && s.panel.address == 0x3C)
        #expect(s.buttonLines.map(\.button) == [.startPause, .lap, .page])
        #expect(s.buttonLines.map(\.offset) == [17, 27, 22])
    }

    @Test func dataDirectoryOverrideMovesTheJournal() throws {
        let s = try ConfigMapping.settings(DeviceConfig.defaults, dataDirectory: "/tmp/x")
        #expect(s.dataDirectory == "/tmp/x" && s.journalDirectory == "/tmp/x/journal")
    }

    @Test func everyHeartRateModelIsTheOneAsked() throws {
        var c = DeviceConfig()
        c.rider.restingHr = 50
        c.rider.maxHr = 190
        c.rider.lthr = 170
        c.zones.hrModel = .hrr
        #expect(try ConfigMapping.zonesInForce(c).heartRate.source == .heartRateReserve(maxHeartRateBpm: 190, restingHeartRateBpm: 50, estimatedFromAge: nil))
        c.zones.hrModel = .lthr
        #expect(try ConfigMapping.zonesInForce(c).heartRate.source == .percentOfLactateThreshold(lthrBpm: 170))
        c.zones.hrModel = .maxHr
        #expect(try ConfigMapping.zonesInForce(c).heartRate.source == .percentOfMax(maxHeartRateBpm: 190, estimatedFromAge: nil))
        c.zones.hrModel = .explicit
        c.zones.hrBoundaries = [100, 120, 140, 160]
        let z = try ConfigMapping.zonesInForce(c)
        #expect(z.heartRate.source == .explicit)
        #expect(z.heartRate.zones.boundaries == [100, 120, 140, 160])
        // The app core rides with those zones.
        #expect(ConfigMapping.appConfiguration(c, zones: z).ride.heartRateZones?.boundaries == [100, 120, 140, 160])
    }

    @Test func explicitPowerZonesWinOverFTP() throws {
        let c = try load("""
            [rider]
            ftp = 250
            [zones]
            power_boundaries = [150, 200, 250, 300]
            """)
        let s = try ConfigMapping.settings(c)
        #expect(s.zones.power?.source == .explicit)
        #expect(s.app.ride.powerZones?.boundaries == [150, 200, 250, 300])
        #expect(s.app.ride.ftpW == 250)
    }

    @Test func pairedSensorsBecomeDataSourceEntriesInPriorityOrder() throws {
        let c = try load("""
            [bike]
            wheel_circumference_mm = 2300
            [[sensor]]
            transport = "ant"
            role = "heart_rate"
            ant_device_number = 4321
            [[sensor]]
            transport = "ant"
            role = "speed_cadence"
            ant_device_number = 77
            [[sensor]]
            transport = "ant"
            role = "power"
            ant_device_number = 9
            ant_device_type = 11
            [[sensor]]
            transport = "ble"
            role = "heart_rate"
            ble_address = "c0:ff:ee:00:11:22"
            """)
        let s = try ConfigMapping.settings(c)
        let ids = s.dataSource.sensors.map(\.identity)
        #expect(ids == [
            .ant(deviceNumber: 4321, deviceType: 120, transmissionType: 0),
            .ant(deviceNumber: 77, deviceType: 121, transmissionType: 0),
            .ant(deviceNumber: 9, deviceType: 11, transmissionType: 0),
            .ble(BLEAddress(value: 0xC0FF_EE00_1122)),
        ])
        #expect(s.dataSource.sensors.map(\.priority) == [0, 1, 2, 3])
        #expect(s.dataSource.wheelCircumferenceMm == 2300)
        // An ANT+ speed+cadence sensor provides speed and cadence, not heart rate.
        #expect(s.dataSource.sensors[1].provides.contains(.speed) && s.dataSource.sensors[1].provides.contains(.cadence))
        #expect(!s.dataSource.sensors[1].provides.contains(.heartRate))
        // Expected sensors: every role filled, each once.
        #expect(ConfigMapping.expectedSensors(c) == [.heartRate, .power, .speed, .cadence])
        #expect(s.app.expectedSensors == SensorRole.allCases.map { [.heartRate, .power, .speed, .cadence].contains($0) }) // no [gps], no radar
    }

    /// BLE addresses say nothing of the sensor's kind: the role does. A heart-rate strap listed
    /// first must not stand for the power meter, speed and cadence sensors listed after it
    /// (it did: every BLE sensor provided everything, so the strap's priority dropped the others'
    /// values and its state was shown for them).
    @Test func bleSensorsProvideWhatTheirRoleSaysAndEachReachesTheRide() throws {
        let c = try load("""
            [[sensor]]
            transport = "ble"
            role = "heart_rate"
            ble_address = "C0:FF:EE:00:00:01"
            [[sensor]]
            transport = "ble"
            role = "power"
            ble_address = "C0:FF:EE:00:00:02"
            [[sensor]]
            transport = "ble"
            role = "speed"
            ble_address = "C0:FF:EE:00:00:03"
            [[sensor]]
            transport = "ble"
            role = "cadence"
            ble_address = "C0:FF:EE:00:00:04"
            """)
        let config = try ConfigMapping.settings(c).dataSource
        let provides = config.sensors.map(\.provides)
        #expect(provides[0].contains(.heartRate) && !provides[0].contains(.power) && !provides[0].contains(.speed))
        #expect(provides[1].contains(.power) && !provides[1].contains(.heartRate))
        #expect(provides[2].contains(.speed) && provides[2].contains(.distance) && !provides[2].contains(.cadence))
        #expect(provides[3].contains(.cadence) && !provides[3].contains(.speed))

        var source = DataSource(config)
        var samples: [Quantity: [Double]] = [:]
        var states: [SensorRole: SensorState] = [:]
        let take: (SensorEvent) -> Void = { o in
            switch o {
            case .sample(let s): samples[s.quantity, default: []].append(s.value)
            case let .status(st, _): states[st.role] = st.state
            case .gps, .clock, .found, .search, .radar, .bridgeConfig: break
            }
        }
        source.start(at: MonotonicInstant(milliseconds: 0), take)
        func frame(_ n: UInt64, _ uuid: UInt16, _ bytes: [UInt8]) -> BridgeFrame {
            BridgeFrame(bridgeTimeUs: 0, .data(.ble(BLEAddress(value: 0xC0FF_EE00_0000 | n)), profileCode: uuid, Payload(bytes)!))
        }
        // The strap connects first; then the other three deliver.
        source.handle(frame(1, 0x2A37, [0x00, 140]), at: MonotonicInstant(milliseconds: 100), take)
        #expect(states[.power] != .connected, "the strap stands for the power meter")
        for k in 0..<4 {
            let t = MonotonicInstant(milliseconds: 200 + Int64(k) * 1000)
            let ticks = UInt16(k * 1024)
            source.handle(frame(1, 0x2A37, [0x00, 140]), at: t, take)
            source.handle(frame(2, 0x2A63, [0x00, 0x00, 0xFA, 0x00]), at: t, take) // 250 W
            source.handle(frame(3, 0x2A5B, [0x01] + le32(UInt32(k * 4)) + le16(ticks)), at: t, take) // 4 rev/s
            source.handle(frame(4, 0x2A5B, [0x02] + le16(UInt16(k * 3 / 2)) + le16(UInt16(k * 3 / 2) * 683)), at: t, take)
        }
        #expect(samples[.heartRate]?.count == 5)
        #expect(samples[.power] == [250, 250, 250, 250])
        #expect((samples[.speed]?.count ?? 0) >= 3 && samples[.speed]!.allSatisfy { abs($0 - 4 * 2.105) < 0.01 })
        #expect((samples[.distance]?.last ?? 0) > 20)
        #expect(states[.heartRate] == .connected && states[.power] == .connected && states[.speed] == .connected && states[.cadence] == .connected)
        #expect(source.status.samplesSuperseded == 0)
    }

    func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
    func le32(_ v: UInt32) -> [UInt8] { le16(UInt16(v & 0xFFFF)) + le16(UInt16(v >> 16)) }

    @Test func aHeartRateStrapAloneExpectsOnlyHeartRate() throws {
        let c = try load("""
            [[sensor]]
            transport = "ble"
            role = "heart_rate"
            ble_address = "AA:BB:CC:DD:EE:FF"
            """)
        #expect(ConfigMapping.expectedSensors(c) == [.heartRate])
        let app = try ConfigMapping.settings(c).app
        #expect(app.expectedSensors[Int(SensorRole.heartRate.rawValue)])
        #expect(!app.expectedSensors[Int(SensorRole.power.rawValue)])
    }

    @Test func trainingAndStorageSettings() throws {
        let c = try load("""
            [buttons]
            long_press_ms = 2000
            [training]
            auto_pause = false
            auto_lap = true
            auto_lap_distance_m = 1000
            [storage]
            fsync_interval_ms = 250
            data_dir = "/data/bike"
            """)
        let s = try ConfigMapping.settings(c)
        #expect(s.app.training.autoPause == nil)
        #expect(s.app.training.autoLap == AutoLapSettings(everyDistanceM: 1000))
        #expect(s.app.longPressMs == 2000)
        #expect(s.commitPolicy.commitIntervalMs == 250)
        #expect(s.journalDirectory == "/data/bike/journal")
    }

    @Test func displayAndButtons() throws {
        let c = try load("""
            [display]
            type = "sh1106"
            height = 32
            address = 0x3D
            contrast = 200
            [buttons]
            pins = [5, 6]
            """)
        let s = try ConfigMapping.settings(c)
        #expect(s.panel.controller == .sh1106 && s.panel.height == 32 && s.panel.address == 0x3D)
        #expect(s.panel.contrastActive == 200 && s.panel.contrastIdle <= 200)
        #expect(s.buttonLines.map(\.button) == [.startPause, .lap])
        #expect(s.buttonLines.map(\.offset) == [5, 6])
    }

    @Test func anAddressNoPanelAnswersAtIsRefusedWithWhatToSet() throws {
        let c = try load("""
            [display]
            address = 0x3E
            """)
        do {
            _ = try ConfigMapping.settings(c)
            Issue.record("0x3E was accepted")
        } catch {
            #expect(error.description.contains("0x3e"))
            #expect(error.description.contains("0x3C"))
        }
    }

    /// Random valid rider profiles: the mapping never fails, keeps the FTP, and gives the same
    /// zones as the Training module computes for the same figures.
    @Test func randomRidersMapLikeTheTrainingModule() throws {
        let seed = UInt64.random(in: 0...UInt64.max)
        var rng = SplitMix64(seed: seed)
        for _ in 0..<300 {
            var c = DeviceConfig()
            c.rider.age = Int.random(in: 5...110, using: &rng)
            c.rider.maxHr = Int.random(in: 130...220, using: &rng)
            c.rider.restingHr = Int.random(in: 35...min(100, c.rider.maxHr - 30), using: &rng)
            c.rider.ftpW = Int.random(in: 60...700, using: &rng)
            let models: [DeviceConfig.Zones.HRModel] = [.maxHr, .hrr, .lthr]
            c.zones.hrModel = models[Int.random(in: 0..<3, using: &rng)]
            if c.zones.hrModel == .lthr { c.rider.lthr = Int.random(in: (c.rider.restingHr + 20)...(c.rider.maxHr - 5), using: &rng) }
            let s: DeviceSettings
            do { s = try ConfigMapping.settings(c) } catch {
                Issue.record("seed \(seed): \(c.rider) \(c.zones.hrModel) refused: \(error)")
                return
            }
            let model: HeartRateZoneModel = c.zones.hrModel == .maxHr ? .percentOfMax : (c.zones.hrModel == .hrr ? .heartRateReserve : .percentOfLactateThreshold)
            let expected = try ZonesInForce.preferred(from: RiderProfile(
                age: c.rider.age, restingHeartRateBpm: Double(c.rider.restingHr), maxHeartRateBpm: Double(c.rider.maxHr),
                lactateThresholdHeartRateBpm: c.rider.lthr.map(Double.init), ftpW: Double(c.rider.ftpW), heartRateModel: model))
            #expect(s.zones == expected, "seed \(seed)")
            #expect(s.app.ride.ftpW == Double(c.rider.ftpW), "seed \(seed)")
            let b = s.app.ride.heartRateZones!.boundaries
            #expect(zip(b, b.dropFirst()).allSatisfy { $0 < $1 }, "seed \(seed)")
        }
    }
}
