import ArgumentParser
import Battery
import BoardHardware
import BoardWiring
import Configuration
import Control
import Device
import DeviceAdapters
import Glibc

/// `bikecomputer battery`: reads the battery's fuel gauge the way the unit does (docs/power.md)
/// and prints each reading as JSON; `--config` takes the gauge from `[battery]`.
struct BatteryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "battery",
        abstract: "Check the battery's fuel gauge (MAX17048, INA219, PiSugar 3 on I2C): print its readings as JSON.")

    @Option(help: "Take the gauge, bus and address from this config's [battery] table.")
    var config: String?

    @Option(name: .customLong("gauge"), help: "max17048, ina219 or pisugar3 (default: the config's, else max17048).")
    var gauge: String?

    @Option(name: .customLong("bus"), help: "The I2C bus device (default: the config's [battery] bus, else /dev/i2c-1).")
    var bus: String?

    @Option(name: .customLong("address"), help: "The gauge's address (default: the gauge board's: 0x36, 0x43, 0x57).")
    var address: String?

    @Option(name: .customLong("count"), help: "Readings to take.")
    var count = 3

    @Option(name: .customLong("interval-ms"), help: "Time between readings.")
    var intervalMs = 2000

    func validate() throws {
        if count < 1 { throw ValidationError("--count must be at least 1") }
        if let g = gauge, FuelGauge(rawValue: g) == nil { throw ValidationError("--gauge \(g): use max17048, ina219 or pisugar3") }
        if let a = address, Self.parseAddress(a) == nil { throw ValidationError("--address \(a): give a 7-bit address such as 0x36") }
    }

    static func parseAddress(_ text: String) -> UInt8? {
        let t = text.lowercased()
        let v = t.hasPrefix("0x") ? UInt8(t.dropFirst(2), radix: 16) : UInt8(t)
        return v.flatMap { (0x03...0x77).contains($0) ? $0 : nil }
    }

    func run() throws {
        var c = DeviceConfig.defaults
        if let config {
            do throws(ConfigFile.LoadError) {
                c = try ConfigFile.load(path: config).0
            } catch {
                warnLine(error.description)
                throw ExitCode(1)
            }
        }
        var settings = ConfigMapping.batterySettings(c)
        if let g = gauge { settings.gauge = FuelGauge(rawValue: g)! }
        let path = bus ?? "/dev/i2c-\(c.battery.bus)"
        let addr = address.flatMap(Self.parseAddress) ?? (config != nil && gauge == nil ? UInt8(c.battery.effectiveAddress) : settings.gauge.defaultAddress)
        let log = StderrLog(minimumLevel: .warning)
        let reader = BatteryComponent(settings: settings, where: "\(path) 0x\(String(addr, radix: 16))",
                                      open: { () throws(I2CDeviceError) -> any BatteryGaugeUnit in try I2CRegisterDevice(path: path, address: addr) },
                                      log: log)
        var failed = false
        for k in 0..<count {
            if k > 0 { usleep(UInt32(intervalMs) * 1000) }
            let r = reader.readGauge(nowMs: Int64(k) * BatteryComponent.reopenMs)
            var j = JSONWriter(pretty: false)
            j.beginObject()
            j.string("gauge", settings.gauge.rawValue)
            j.string("address", "0x" + String(addr, radix: 16))
            if let r {
                j.number("percent", r.percent, decimals: 2)
                j.bool("percent_from_voltage", r.percentFromVoltage)
                j.number("voltage_v", r.voltageV, decimals: 4)
                j.number("current_ma", r.currentA.map { $0 * 1000 }, decimals: 1)
                j.number("charge_rate_pct_per_h", r.chargeRatePercentPerHour, decimals: 3)
                j.bool("external_power", r.externalPower)
                j.bool("power_button", r.powerButtonRequest)
            } else {
                failed = true
                j.string("error", reader.state.hasPrefix("ok") ? "the registers hold no valid reading (a gauge still starting, or no battery)" : reader.state)
            }
            j.endObject()
            emitLine(j.text)
        }
        if failed { throw ExitCode(1) }
    }
}
