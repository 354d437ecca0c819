import AppCore
import ArgumentParser
import Configuration
import Device

/// What `--config FILE` and `--panel NAME` give a simulator run: the rider's own settings from
/// the board's config file (zones, FTP, wheel, training, averaging conventions, the panel), read
/// and checked by the board's own code (`ConfigLoader`, `ConfigMapping`), so a replay shows and
/// counts what the rider's unit would. The sensors stay the scenario's (or the recording's).
struct RiderSettings {
    var app = AppConfiguration()
    var wheelCircumferenceMm = 2_105
    var panel: (width: Int, height: Int) = (128, 64)
    /// Where the settings came from (printed by headless runs).
    var source = "built-in defaults"

    /// `--panel` names and their sizes (the OLEDs are drawn identically by either controller).
    static let panels: [(name: String, width: Int, height: Int, what: String)] = [
        ("ssd1306", 128, 64, "0.96\" SSD1306 OLED, 128x64 (the default)"),
        ("sh1106", 128, 64, "1.3\" SH1106 OLED, 128x64"),
        ("ssd1306-32", 128, 32, "0.91\" SSD1306 OLED, 128x32"),
        ("sharp-ls027", 400, 240, "2.7\" Sharp LS027B7DH01 memory LCD, 400x240"),
        ("sharp-ls013", 128, 128, "1.28\" Sharp LS013B7DH03 memory LCD, 128x128"),
    ]

    static var panelNames: String { panels.map(\.name).joined(separator: ", ") }

    static func load(config path: String?, panel name: String?) throws -> RiderSettings {
        var s = RiderSettings()
        if let path {
            let text: String
            do { text = try Files.readText(path) } catch { throw ValidationError("cannot read the config file \(path): \(error)") }
            let config: DeviceConfig
            switch ConfigLoader.load(text: text) {
            case .success(let c): config = c
            case .failure(let errors):
                throw ValidationError("\(errors.report(path: path))\n\(errors.errors.count) problem(s) in \(path) (docs/config.md lists every key)")
            }
            let settings: DeviceSettings
            do { settings = try ConfigMapping.settings(config) } catch {
                throw ValidationError("\(path): \(error)")
            }
            s.app = settings.app
            // The scenario's sensors are the bike's: expected as the simulator always does; the
            // climbing and map pages follow the scenario's GPS and barometer.
            s.app.expectedSensors = AppConfiguration().expectedSensors
            s.app.runningPageCount = AppConfiguration().runningPageCount
            s.wheelCircumferenceMm = config.bike.wheelCircumferenceMm
            s.panel = config.display.size
            s.source = "\(path) ([display] type = \(config.display.type.rawValue))"
        }
        if let name {
            guard let p = panels.first(where: { $0.name == name }) else {
                throw ValidationError("--panel \(name) is not a panel; use one of: \(panelNames)")
            }
            s.panel = (p.width, p.height)
        }
        return s
    }
}
