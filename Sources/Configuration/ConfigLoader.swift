/// Turns config text into a `DeviceConfig`: starts from the defaults, applies every key in the
/// file, and collects every problem (syntax, unknown table or key, wrong type, out-of-range or
/// not-allowed value, inconsistent values) with its line and what is allowed.
public enum ConfigLoader {
    public static let sensorsMax = 8

    /// The tables a config may have (in documentation order).
    public static let tables = ["buttons", "display", "bridge", "sensor", "bike", "rider", "zones", "training", "storage", "control", "companion", "gps", "barometer", "battery"]

    /// `load(text:)` of a file's bytes: bytes that are not UTF-8 are an error with their line
    /// (the bridge's `tomllib` refuses such a file too), never read with replacement characters.
    public static func load(bytes: [UInt8]) -> Result<DeviceConfig, ConfigErrors> {
        switch TOMLDocument.text(bytes) {
        case .success(let text): return load(text: text)
        case .failure(let e): return .failure(ConfigErrors(errors: [ConfigError(line: e.line, .syntax, e.message)]))
        }
    }

    public static func load(text: String) -> Result<DeviceConfig, ConfigErrors> {
        let (document, syntaxErrors) = TOMLDocument.parse(text)
        var errors = syntaxErrors.map { ConfigError(line: $0.line, .syntax, $0.message) }
        var config = DeviceConfig()
        for table in document.tables {
            let r = TableReader(table)
            switch (table.name, table.isArrayElement) {
            case ("", false):
                r.finish(allowedHint: "keys belong under a [table]; tables: \(tables.joined(separator: ", "))")
            case ("buttons", false): buttons(r, &config.buttons)
            case ("display", false): display(r, &config.display)
            case ("bridge", false): bridge(r, &config.bridge)
            case ("sensor", true):
                if config.sensors.count >= sensorsMax {
                    r.errors.append(ConfigError(line: table.line, .outOfRange, "more than \(sensorsMax) [[sensor]] entries; pair at most \(sensorsMax) sensors"))
                } else if let s = sensor(r) {
                    config.sensors.append(s)
                }
            case ("sensor", false):
                r.errors.append(ConfigError(line: table.line, .unknownTable, "write [[sensor]] (double brackets): one block per paired sensor"))
            case ("bike", false): bike(r, &config.bike)
            case ("rider", false): rider(r, &config.rider)
            case ("zones", false): zones(r, &config.zones)
            case ("training", false): training(r, &config.training)
            case ("storage", false): storage(r, &config.storage)
            case ("control", false): control(r, &config.control)
            case ("companion", false): companion(r, &config.companion)
            case ("gps", false): gps(r, &config.gps)
            case ("barometer", false): barometer(r, &config.barometer)
            case ("battery", false): battery(r, &config.battery)
            default:
                let header = table.isArrayElement ? "[[\(table.name)]]" : "[\(table.name)]"
                r.errors.append(ConfigError(line: table.line, .unknownTable, "unknown table \(header); allowed tables: [buttons], [display], [bridge], [[sensor]], [bike], [rider], [zones], [training], [storage], [control], [companion], [gps], [barometer], [battery]"))
            }
            errors += r.errors
        }
        errors += crossChecks(config, document)
        errors.sort { $0.line < $1.line }
        return errors.isEmpty ? .success(config) : .failure(ConfigErrors(errors: errors))
    }

    // MARK: Tables

    static func buttons(_ r: TableReader, _ b: inout DeviceConfig.Buttons) {
        if let v = r.absolutePath("chip", under: "/dev/") { b.chip = v }
        if let v = r.intArray("pins", count: 2...3, each: 0...511) { b.pins = v }
        if let v = r.bool("active_low") { b.activeLow = v }
        if let v = r.choice("bias", DeviceConfig.Buttons.Bias.self) { b.bias = v }
        if let v = r.int("long_press_ms", 300...10_000) { b.longPressMs = v }
        if let v = r.int("debounce_ms", 1...500) { b.debounceMs = v }
        if let v = r.int("buzzer_pin", 0...511) { b.buzzerPin = v }
        if let v = r.int("power_pin", 0...511) { b.powerPin = v }
        if let v = r.int("power_off_hold_ms", 1_000...10_000) { b.powerOffHoldMs = v }
        r.finish()
    }

    static func display(_ r: TableReader, _ d: inout DeviceConfig.Display) {
        if let v = r.int("bus", 0...31) { d.bus = v }
        if let v = r.int("address", 0x03...0x77, hex: true) { d.address = v }
        if let v = r.choice("type", DeviceConfig.Display.Controller.self) { d.type = v }
        if let v = r.int("height", allowed: [32, 64]) { d.height = v }
        if let v = r.int("contrast", 0...255) { d.contrast = v }
        if let v = r.bool("rotate_180") { d.rotate180 = v }
        if let v = r.int("spi_bus", 0...31) { d.spiBus = v }
        if let v = r.int("chip_select", 0...15) { d.chipSelect = v }
        if let v = r.int("spi_speed_hz", DeviceConfig.Display.spiSpeedRange) { d.spiSpeedHz = v }
        if let v = r.int("extcomin_pin", 0...511) { d.extcominPin = v }
        r.finish()
        displayConsistency(r, d)
    }

    static let baudRates = [9_600, 19_200, 38_400, 57_600, 115_200, 230_400, 460_800, 921_600]

    static func bridge(_ r: TableReader, _ b: inout DeviceConfig.Bridge) {
        if let v = r.choice("transport", DeviceConfig.Bridge.Transport.self) { b.transport = v }
        if let v = r.absolutePath("path") { b.path = v }
        if let v = r.int("baud", allowed: baudRates) { b.baud = v }
        r.finish()
    }

    static func sensor(_ r: TableReader) -> DeviceConfig.Sensor? {
        let transport = r.choice("transport", DeviceConfig.Sensor.Transport.self)
        let role = r.choice("role", DeviceConfig.Sensor.Role.self)
        let number = r.int("ant_device_number", 1...65_535)
        let type = r.int("ant_device_type", 1...255)
        let address = r.bleAddress("ble_address")
        let name = r.string("name", maxLength: 32)
        r.finish()
        var ok = true
        if !r.has("transport") { r.missing("transport", "ant or ble"); ok = false }
        if !r.has("role") { r.missing("role", DeviceConfig.Sensor.Role.allCases.map(\.rawValue).joined(separator: ", ")); ok = false }
        guard ok, let transport, let role else { return nil }
        var s = DeviceConfig.Sensor(transport: transport, role: role)
        s.name = name
        switch transport {
        case .ant:
            if !r.has("ant_device_number") { r.missing("ant_device_number", "the sensor's ANT+ device number, 1...65535 (the bridge's scan lists it)") }
            if let e = r.entry("ble_address") { r.errors.append(ConfigError(line: e.line, .inconsistent, "ble_address is for transport = \"ble\"; this sensor is ANT+")) }
            s.antDeviceNumber = number
            s.antDeviceType = type
        case .ble:
            if !r.has("ble_address") { r.missing("ble_address", "the sensor's Bluetooth address, AA:BB:CC:DD:EE:FF") }
            for key in ["ant_device_number", "ant_device_type"] {
                if let e = r.entry(key) { r.errors.append(ConfigError(line: e.line, .inconsistent, "\(key) is for transport = \"ant\"; this sensor is BLE")) }
            }
            s.bleAddress = address
        }
        return s
    }

    static func bike(_ r: TableReader, _ b: inout DeviceConfig.Bike) {
        if let v = r.int("wheel_circumference_mm", 500...3_500) { b.wheelCircumferenceMm = v }
        r.finish()
    }

    static func rider(_ r: TableReader, _ v: inout DeviceConfig.Rider) {
        if let x = r.int("age", 5...110) { v.age = x }
        if let x = r.int("resting_hr", 25...120) { v.restingHr = x }
        if let x = r.int("max_hr", 100...240) { v.maxHr = x }
        if let x = r.int("lthr", 80...230) { v.lthr = x }
        if let x = r.int("ftp", 30...700) { v.ftpW = x }
        r.finish()
    }

    static func zones(_ r: TableReader, _ z: inout DeviceConfig.Zones) {
        if let v = r.choice("hr_model", DeviceConfig.Zones.HRModel.self) { z.hrModel = v }
        if let v = r.intArray("hr_boundaries", count: 1...9, each: 30...240, ascending: true) { z.hrBoundaries = v }
        if let v = r.intArray("power_boundaries", count: 1...9, each: 1...3_000, ascending: true) { z.powerBoundaries = v }
        r.finish()
    }

    static func training(_ r: TableReader, _ t: inout DeviceConfig.Training) {
        if let v = r.bool("auto_pause") { t.autoPause = v }
        if let v = r.double("auto_pause_speed_kmh", 0.5...15) { t.autoPauseSpeedKmh = v }
        if let v = r.bool("auto_lap") { t.autoLap = v }
        if let v = r.int("auto_lap_distance_m", 100...100_000) { t.autoLapDistanceM = v }
        if let v = r.bool("average_cadence_zeros") { t.averageCadenceZeros = v }
        if let v = r.bool("average_power_zeros") { t.averagePowerZeros = v }
        r.finish()
    }

    static func storage(_ r: TableReader, _ s: inout DeviceConfig.Storage) {
        if let v = r.absolutePath("data_dir") { s.dataDir = v }
        if let v = r.int("fsync_interval_ms", 50...1_000) { s.fsyncIntervalMs = v }
        r.finish()
    }

    static func control(_ r: TableReader, _ c: inout DeviceConfig.Control) {
        if let v = r.absolutePath("socket", maxLength: 107) { c.socket = v }
        r.finish()
    }

    static func companion(_ r: TableReader, _ c: inout DeviceConfig.Companion) {
        if let v = r.bool("enabled") { c.enabled = v }
        if let v = r.hostPort("listen") { c.listen = v }
        r.finish()
    }

    // MARK: Checks across keys

    static func crossChecks(_ c: DeviceConfig, _ doc: TOMLDocument) -> [ConfigError] {
        var errors: [ConfigError] = []
        func line(_ table: String, _ key: String) -> Int {
            for t in doc.tables where t.name == table {
                if let e = t.entries.first(where: { $0.key == key }) { return e.line }
            }
            return doc.tables.first { $0.name == table }?.line ?? 0
        }
        var seen: Set<Int> = []
        for pin in c.buttons.pins where !seen.insert(pin).inserted {
            errors.append(ConfigError(line: line("buttons", "pins"), .inconsistent, "pin \(pin) is listed twice in pins; give each button its own GPIO line"))
        }
        if let buzzer = c.buttons.buzzerPin, c.buttons.pins.contains(buzzer) {
            errors.append(ConfigError(line: line("buttons", "buzzer_pin"), .inconsistent, "buzzer_pin \(buzzer) is also a button pin; use a free GPIO line"))
        }
        errors += powerChecks(c, line: line)
        if let pin = c.display.extcominPin, c.buttons.pins.contains(pin) || c.buttons.buzzerPin == pin {
            errors.append(ConfigError(line: line("display", "extcomin_pin"), .inconsistent, "extcomin_pin \(pin) is also a button or buzzer pin; use a free GPIO line"))
        }
        if c.rider.restingHr >= c.rider.maxHr {
            errors.append(ConfigError(line: line("rider", "max_hr"), .inconsistent, "max_hr (\(c.rider.maxHr)) must be above resting_hr (\(c.rider.restingHr))"))
        }
        if let lthr = c.rider.lthr, lthr >= c.rider.maxHr || lthr <= c.rider.restingHr {
            errors.append(ConfigError(line: line("rider", "lthr"), .inconsistent, "lthr (\(lthr)) must lie between resting_hr (\(c.rider.restingHr)) and max_hr (\(c.rider.maxHr))"))
        }
        switch c.zones.hrModel {
        case .explicit where c.zones.hrBoundaries.isEmpty && !doc.tables.contains(where: { $0.name == "zones" && $0.entries.contains { $0.key == "hr_boundaries" } }):
            errors.append(ConfigError(line: line("zones", "hr_model"), .missingKey, "hr_model = \"explicit\" needs hr_boundaries = [lower bpm of zone 2, zone 3, ...]"))
        case .lthr where c.rider.lthr == nil:
            errors.append(ConfigError(line: line("zones", "hr_model"), .missingKey, "hr_model = \"lthr\" needs lthr in [rider]"))
        default: break
        }
        if c.zones.hrModel != .explicit, !c.zones.hrBoundaries.isEmpty {
            errors.append(ConfigError(line: line("zones", "hr_boundaries"), .inconsistent, "hr_boundaries are used only with hr_model = \"explicit\"; set that or remove them"))
        }
        if let top = c.zones.hrBoundaries.last, top > c.rider.maxHr {
            errors.append(ConfigError(line: line("zones", "hr_boundaries"), .inconsistent, "hr_boundaries go up to \(top) bpm, above max_hr (\(c.rider.maxHr))"))
        }
        var pairedBy: [String: Int] = [:]
        for s in c.sensors {
            let key = s.transport == .ant ? "ant:\(s.antDeviceNumber ?? 0):\(s.antDeviceType ?? 0)" : "ble:\(s.bleAddress ?? "")"
            pairedBy[key, default: 0] += 1
            if pairedBy[key] == 2 {
                errors.append(ConfigError(line: line("sensor", "transport"), .inconsistent, "the same sensor (\(key)) is paired twice; keep one [[sensor]] block for it"))
            }
        }
        if c.bridge.transport == .serial, let p = c.bridge.path, !p.hasPrefix("/dev/") {
            errors.append(ConfigError(line: line("bridge", "path"), .inconsistent, "transport = \"serial\" needs a device path such as /dev/serial0 (got \(p))"))
        }
        return errors
    }
}

/// Reads one table's keys with typed checks, remembering which keys it looked at so
/// `finish()` can name the unknown ones.
final class TableReader {
    let table: TOMLTable
    var known: [String] = []
    var errors: [ConfigError] = []

    init(_ table: TOMLTable) { self.table = table }

    var where_: String { table.name.isEmpty ? "at the top of the file" : (table.isArrayElement ? "in [[\(table.name)]]" : "in [\(table.name)]") }

    func entry(_ key: String) -> TOMLEntry? { table.entries.first { $0.key == key } }
    func has(_ key: String) -> Bool { entry(key) != nil }

    func missing(_ key: String, _ what: String) {
        errors.append(ConfigError(line: table.line, .missingKey, "this \(table.isArrayElement ? "[[\(table.name)]]" : "[\(table.name)]") block needs \(key): \(what)"))
    }

    private func lookup(_ key: String) -> TOMLEntry? {
        known.append(key)
        return entry(key)
    }

    private func wrongType(_ e: TOMLEntry, _ expected: String, example: String) {
        errors.append(ConfigError(line: e.line, .wrongType, "\(e.key) must be \(expected) (got a \(e.value.typeName)), e.g. \(e.key) = \(example)"))
    }

    func int(_ key: String, _ range: ClosedRange<Int>, hex: Bool = false) -> Int? {
        guard let e = lookup(key) else { return nil }
        guard case .integer(let v) = e.value else {
            wrongType(e, "a whole number", example: hex ? "0x\(String(range.lowerBound, radix: 16))" : "\(range.lowerBound)")
            return nil
        }
        guard let i = Int(exactly: v), range.contains(i) else {
            let shown = hex ? "0x\(String(range.lowerBound, radix: 16))...0x\(String(range.upperBound, radix: 16))" : "\(range.lowerBound)...\(range.upperBound)"
            let got = hex && v >= 0 ? "0x\(String(v, radix: 16, uppercase: true))" : "\(v)"
            errors.append(ConfigError(line: e.line, .outOfRange, "\(key) = \(got) is out of range; allowed: \(shown)"))
            return nil
        }
        return i
    }

    func int(_ key: String, allowed: [Int]) -> Int? {
        guard let e = lookup(key) else { return nil }
        guard case .integer(let v) = e.value else {
            wrongType(e, "a whole number", example: "\(allowed[0])")
            return nil
        }
        guard let i = Int(exactly: v), allowed.contains(i) else {
            errors.append(ConfigError(line: e.line, .notAllowed, "\(key) = \(v) is not allowed; allowed: \(allowed.map(String.init).joined(separator: ", "))"))
            return nil
        }
        return i
    }

    func double(_ key: String, _ range: ClosedRange<Double>) -> Double? {
        guard let e = lookup(key) else { return nil }
        let v: Double
        switch e.value {
        case .float(let d): v = d
        case .integer(let i): v = Double(i)
        default:
            wrongType(e, "a number", example: "\(range.lowerBound)")
            return nil
        }
        guard range.contains(v) else {
            errors.append(ConfigError(line: e.line, .outOfRange, "\(key) = \(v) is out of range; allowed: \(range.lowerBound)...\(range.upperBound)"))
            return nil
        }
        return v
    }

    func bool(_ key: String) -> Bool? {
        guard let e = lookup(key) else { return nil }
        guard case .boolean(let v) = e.value else {
            wrongType(e, "true or false", example: "true")
            return nil
        }
        return v
    }

    func string(_ key: String, maxLength: Int = 256) -> String? {
        guard let e = lookup(key) else { return nil }
        guard case .string(let v) = e.value else {
            wrongType(e, "a quoted string", example: "\"...\"")
            return nil
        }
        guard v.count <= maxLength else {
            errors.append(ConfigError(line: e.line, .outOfRange, "\(key) is longer than \(maxLength) characters"))
            return nil
        }
        return v
    }

    func choice<T: RawRepresentable & CaseIterable>(_ key: String, _ type: T.Type) -> T? where T.RawValue == String {
        let allowed = T.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
        guard let e = lookup(key) else { return nil }
        guard case .string(let v) = e.value else {
            errors.append(ConfigError(line: e.line, .wrongType, "\(key) must be a quoted string (got a \(e.value.typeName)); allowed: \(allowed)"))
            return nil
        }
        guard let c = T(rawValue: v) else {
            errors.append(ConfigError(line: e.line, .notAllowed, "\(key) = \"\(v)\" is not allowed; allowed: \(allowed)"))
            return nil
        }
        return c
    }

    func absolutePath(_ key: String, under prefix: String = "/", maxLength: Int = 255) -> String? {
        known.append(key)
        guard let e = entry(key) else { return nil }
        guard let v = string(key, maxLength: maxLength) else { return nil }
        guard v.hasPrefix(prefix), !v.contains("\0") else {
            errors.append(ConfigError(line: e.line, .notAllowed, "\(key) = \"\(v)\" must be an absolute path starting with \(prefix)"))
            return nil
        }
        return v
    }

    func intArray(_ key: String, count: ClosedRange<Int>, each: ClosedRange<Int>, ascending: Bool = false) -> [Int]? {
        guard let e = lookup(key) else { return nil }
        guard case .array(let items) = e.value else {
            wrongType(e, "an array of whole numbers", example: "[\(each.lowerBound), \(each.lowerBound + 1)]")
            return nil
        }
        var out: [Int] = []
        for item in items {
            guard case .integer(let v) = item else {
                errors.append(ConfigError(line: e.line, .wrongType, "\(key) must hold whole numbers only (found a \(item.typeName))"))
                return nil
            }
            guard let i = Int(exactly: v), each.contains(i) else {
                errors.append(ConfigError(line: e.line, .outOfRange, "\(key) holds \(v), out of range; each must be in \(each.lowerBound)...\(each.upperBound)"))
                return nil
            }
            out.append(i)
        }
        guard count.contains(out.count) else {
            errors.append(ConfigError(line: e.line, .outOfRange, "\(key) has \(out.count) entries; allowed: \(count.lowerBound)...\(count.upperBound)"))
            return nil
        }
        if ascending, zip(out, out.dropFirst()).contains(where: { $0 >= $1 }) {
            errors.append(ConfigError(line: e.line, .notAllowed, "\(key) must be strictly ascending (each zone's lower bound above the previous)"))
            return nil
        }
        return out
    }

    func bleAddress(_ key: String) -> String? {
        known.append(key)
        guard let e = entry(key), let v = string(key, maxLength: 17) else { return nil }
        let parts = v.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 6, parts.allSatisfy({ $0.count == 2 && UInt8($0, radix: 16) != nil }) else {
            errors.append(ConfigError(line: e.line, .notAllowed, "\(key) = \"\(v)\" is not a Bluetooth address; write six hex pairs, e.g. \"C8:3A:1F:00:12:AB\""))
            return nil
        }
        return v.uppercased()
    }

    func hostPort(_ key: String) -> String? {
        known.append(key)
        guard let e = entry(key), let v = string(key, maxLength: 64) else { return nil }
        guard let colon = v.lastIndex(of: ":"), let port = Int(v[v.index(after: colon)...]), (1...65_535).contains(port), colon != v.startIndex else {
            errors.append(ConfigError(line: e.line, .notAllowed, "\(key) = \"\(v)\" must be host:port with a port in 1...65535, e.g. \"127.0.0.1:8080\""))
            return nil
        }
        return v
    }

    /// Reports the keys nobody asked for.
    func finish(allowedHint: String? = nil) {
        var unique: [String] = []
        for k in known where !unique.contains(k) { unique.append(k) }
        for e in table.entries where !unique.contains(e.key) {
            let hint = allowedHint ?? "allowed keys \(where_): \(unique.joined(separator: ", "))"
            errors.append(ConfigError(line: e.line, .unknownKey, "unknown key '\(e.key)' \(where_); \(hint)"))
        }
    }
}
