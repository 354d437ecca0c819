import AppCore
import Battery
import BoardHardware
import BoardIO
import BoardWiring
import Configuration
import Device
import Foundation
import Glibc
import Journal
import RideModel
import Testing

/// The battery on the board's wiring (docs/power.md), on a manual clock: the gauge read every
/// 2 s on the loop, the charge in `ctl status`, a gauge that stops answering retried every 10 s,
/// and at the critical level the ride paused and the power-off asked of the power port, once.
struct BatteryWiringTests {
    /// A MAX17048's registers, as the test sets them.
    final class FakeGauge: BatteryGaugeUnit {
        var words: [UInt8: UInt16] = [MAX17048.version: 0x0012, MAX17048.vcell: 50_176, MAX17048.soc: 60 * 256, MAX17048.crate: 0xFFD9]
        var failing = false
        var reads = 0
        func readByte(_ register: UInt8) throws(I2CDeviceError) -> UInt8 { UInt8(truncatingIfNeeded: try readWordBigEndian(register)) }
        func readWordBigEndian(_ register: UInt8) throws(I2CDeviceError) -> UInt16 {
            reads += 1
            if failing { throw .noDevice(path: "/dev/i2c-7", address: 0x36) }
            return words[register] ?? 0
        }
        func writeByte(_ register: UInt8, _ value: UInt8) throws(I2CDeviceError) {}
    }

    final class Port: PowerPort {
        var asked: [PowerOffReason] = []
        func requestPowerOff(_ reason: PowerOffReason) -> String? { asked.append(reason); return nil }
    }

    final class Rig {
        let loop = ManualEventLoop(startMs: 10_000)
        let dir = "/tmp/battery-wiring-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let gauge = FakeGauge()
        let port = Port()
        var opens = 0
        var openFails = false
        let wiring: BoardWiring

        init() throws {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            var config = DeviceConfig()
            config.control.socket = dir + "/control.sock"
            config.bridge.path = dir + "/bridge.sock"
            config.training.autoPause = false
            config.battery.enabled = true
            config.battery.bus = 7
            let settings = try ConfigMapping.settings(config, dataDirectory: dir + "/data")
            var devices = BoardDevices()
            devices.batteryWhere = "/dev/i2c-7 0x36"
            var options = BoardWiring.Options()
            options.wallClock = { WallClockTime(unixMs: 1_790_000_000_000, trusted: true) }
            options.config = config
            options.configPath = dir + "/config.toml"
            options.powerPort = port
            let opened = FlashJournal.open(storage: SimulatedFlash(), configuration: settings.app, randomSeed: 5,
                                           deviceNow: MonotonicInstant(milliseconds: loop.nowMs))
            let g = gauge
            let rigOpen = OpenCounter()
            self.counter = rigOpen
            devices.batteryOpen = { () throws(I2CDeviceError) -> any BatteryGaugeUnit in
                rigOpen.opens += 1
                if rigOpen.fail { throw .noSuchBus(path: "/dev/i2c-7") }
                return g
            }
            wiring = try BoardWiring(loop: loop, opened: opened, archive: KeptArchive(), settings: settings, devices: devices,
                                     options: options, log: CountingLog(MemoryLog(capacity: 512)))
        }
        var counter: OpenCounter!

        deinit {
            wiring.close()
            try? FileManager.default.removeItem(atPath: dir)
        }

        func run(ms: Int64) {
            var left = ms
            while left > 0 {
                loop.advanceTime(byMs: min(100, left))
                loop.pollDescriptors()
                left -= 100
            }
        }

        func battery() throws -> [String: Any] {
            let line = wiring.controlLine("status").line
            let all = try #require(JSONSerialization.jsonObject(with: Data(line.dropFirst(3).utf8)) as? [String: Any])
            return try #require(all["battery"] as? [String: Any])
        }
    }

    final class OpenCounter {
        var opens = 0
        var fail = false
    }

    @Test func theGaugeIsReadOnTheLoopAndShownInTheStatus() throws {
        let rig = try Rig()
        rig.run(ms: 2_100)
        let b = try rig.battery()
        #expect(b["percent"] as? Double == 60 && b["level"] as? String == "ok", "\(b)")
        #expect((b["voltage_v"] as? Double).map { abs($0 - 3.92) < 0.001 } == true, "\(b)")
        #expect(b["state"] as? String == "ok (max17048 at /dev/i2c-7 0x36)")
        #expect(rig.wiring.runtime.core.screen.battery?.percent == 60)
        // Every 2 s: the probe and three registers, then three a reading.
        let reads = rig.gauge.reads
        rig.run(ms: 10_000)
        #expect(rig.gauge.reads - reads == 15, "\(rig.gauge.reads - reads) reads in 10 s")
    }

    @Test func aGaugeThatStopsAnsweringIsRetriedEveryTenSeconds() throws {
        let rig = try Rig()
        rig.run(ms: 2_100)
        rig.gauge.failing = true
        rig.counter.fail = true
        rig.run(ms: 2_100)
        let b = try rig.battery()
        #expect((b["state"] as? String)?.hasPrefix("failed: ") == true, "\(b)")
        let opens = rig.counter.opens
        rig.run(ms: 20_000)
        #expect(rig.counter.opens - opens == 2, "\(rig.counter.opens - opens) opens in 20 s")
        rig.run(ms: 15_000)
        #expect(rig.wiring.runtime.core.screen.battery?.percent == nil, "a stale charge is not shown")
        rig.gauge.failing = false
        rig.counter.fail = false
        rig.run(ms: 12_000)
        #expect(try rig.battery()["state"] as? String == "ok (max17048 at /dev/i2c-7 0x36)")
        #expect(rig.wiring.runtime.core.screen.battery?.percent == 60)
    }

    @Test func atTheCriticalLevelTheRideIsPausedAndThePowerOffAskedOnce() throws {
        let rig = try Rig()
        rig.run(ms: 2_100)
        _ = rig.wiring.controlLine("start")
        rig.run(ms: 5_000)
        #expect(rig.wiring.runtime.state == .running)
        rig.gauge.words[MAX17048.soc] = 4 * 256
        rig.run(ms: 6_100) // three readings at 4 %
        #expect(rig.wiring.runtime.state == .paused && rig.port.asked.isEmpty)
        rig.run(ms: Int64(DeviceRuntime.powerOffNoticeMs) + 1_100)
        #expect(rig.port.asked == [.batteryCritical])
        let b = try rig.battery()
        #expect(b["power_off"] as? String == "battery critical" && b["power_off_requested"] as? Bool == true, "\(b)")
        rig.run(ms: 20_000)
        #expect(rig.port.asked.count == 1)
    }
}
