import TestSupport
import Configuration
import Foundation
import Testing

private func errors(_ text: String) -> [ConfigError] {
    switch ConfigLoader.load(text: text) {
    case .success: return []
    case .failure(let e): return e.errors
    }
}

struct TOMLTests {
    @Test func valuesAndLines() {
        let text = """
        # comment
        top = 1
        [a]
        s = "x \\"q\\" \\u00e9" # trailing comment
        l = 'C:\\path'
        i = 0x1_0
        j = 1_000
        f = 2.5e3
        b = false
        arr = [ 1, 2,
                3, # comment inside
        ]
        strs = ["a", 'b']
        [[arr_t]]
        k = 1
        [[arr_t]]
        k = 2
        """
        let (doc, errs) = TOMLDocument.parse(text)
        #expect(errs.isEmpty, "\(errs)")
        #expect(doc.tables.map(\.name) == ["", "a", "arr_t", "arr_t"])
        #expect(doc.tables[0].entries == [TOMLEntry(key: "top", value: .integer(1), line: 2)])
        let a = doc.tables[1].entries
        #expect(a.map(\.key) == ["s", "l", "i", "j", "f", "b", "arr", "strs"])
        #expect(a.map(\.line) == [4, 5, 6, 7, 8, 9, 10, 13])
        #expect(a[0].value == .string("x \"q\" é"))
        #expect(a[1].value == .string("C:\\path"))
        #expect(a[2].value == .integer(16)) // hex is unsigned in TOML (tomllib refuses -0x10)
        #expect(a[3].value == .integer(1_000))
        #expect(a[4].value == .float(2_500))
        #expect(a[5].value == .boolean(false))
        #expect(a[6].value == .array([.integer(1), .integer(2), .integer(3)]))
        #expect(a[7].value == .array([.string("a"), .string("b")]))
        #expect(doc.tables[3].line == 16)
    }

    @Test func syntaxErrorsCarryTheirLine() {
        let cases: [(String, Int, String)] = [
            ("a = \"open", 1, "not closed"),
            ("\n\nkey value", 3, "expected '='"),
            ("x = [1, 2", 1, "not closed"),
            ("x = {a = 1}", 1, "inline tables"),
            ("x.y = 1", 1, "dotted keys"),
            ("x = 1979-05-27", 1, "dates"),
            ("x = yes", 1, "quotes"),
            ("x = 1 2", 1, "after the value"),
            ("x = 012", 1, "not a number"),
            ("x = \"\"\"a\"\"\"", 1, "multi-line"),
            ("[a]\n[a]", 2, "twice"),
            ("a = 1\na = 2", 2, "set twice"),
            ("[a", 1, "']'"),
            ("x = \"bad \\q\"", 1, "unknown escape"),
            ("x =", 1, "missing value"),
        ]
        for (text, line, fragment) in cases {
            let (_, errs) = TOMLDocument.parse(text)
            #expect(errs.count == 1, "\(text.debugDescription): \(errs)")
            #expect(errs.first?.line == line, "\(text.debugDescription): \(errs)")
            #expect(errs.first?.message.contains(fragment) == true, "\(text.debugDescription): \(errs)")
        }
    }

    /// Random bytes and mangled configs never crash the parser, and every error's line lies
    /// within the text.
    @Test func randomInputNeverCrashes() throws {
        let base = try String(contentsOfFile: boardConfigPath, encoding: .utf8)
        let seed = UInt64.random(in: 1...UInt64.max)
        var rng = SeededRandom(seed: seed)
        let alphabet = Array("[]=\"'#\n ,.abc01_-x{}\\\t".unicodeScalars)
        for _ in 0..<300 {
            var scalars = Array(base.unicodeScalars)
            for _ in 0..<Int.random(in: 1...20, using: &rng) {
                let i = Int.random(in: 0..<scalars.count, using: &rng)
                if Bool.random(using: &rng) { scalars[i] = alphabet.randomElement(using: &rng)! } else { scalars.remove(at: i) }
            }
            var text = String.UnicodeScalarView()
            text.append(contentsOf: scalars)
            let lineCount = String(text).split(separator: "\n", omittingEmptySubsequences: false).count
            if case .failure(let e) = ConfigLoader.load(text: String(text)) {
                #expect(e.errors.allSatisfy { $0.line >= 0 && $0.line <= lineCount }, "seed \(seed)")
                #expect(e.errors.allSatisfy { !$0.message.isEmpty }, "seed \(seed)")
            }
        }
    }
}

let boardConfigPath: String = {
    // Tests/BoardTests/ConfigTests.swift → the package root.
    let here = URL(fileURLWithPath: #filePath)
    return here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("board/config.toml").path
}()

struct ConfigTests {
    /// The shipped board/config.toml is the documented default config: it loads without error
    /// and equals the built-in defaults.
    @Test func shippedConfigIsTheDefaults() throws {
        let text = try String(contentsOfFile: boardConfigPath, encoding: .utf8)
        let loaded = try ConfigLoader.load(text: text).get()
        var expected = DeviceConfig.defaults
        expected.bridge.path = expected.bridge.effectivePath
        #expect(loaded == expected)
    }

    /// Files saved on Windows: CRLF line endings and a byte-order mark.
    @Test func crlfAndByteOrderMark() throws {
        let c = try ConfigLoader.load(text: "\u{FEFF}[display]\r\naddress = 0x3D\r\ntype = \"sh1106\" # note\r\n").get()
        #expect(c.display.address == 0x3D && c.display.type == .sh1106)
        let errs = errors("[display]\r\n\r\nheight = 48\r\n")
        #expect(errs.map(\.line) == [3])
    }

    @Test func emptyFileGivesDefaults() throws {
        #expect(try ConfigLoader.load(text: "").get() == DeviceConfig.defaults)
        #expect(try ConfigLoader.load(text: "# nothing\n\n").get() == DeviceConfig.defaults)
    }

    @Test func valuesAreApplied() throws {
        let c = try ConfigLoader.load(text: """
        [buttons]
        pins = [5, 6]
        bias = "disabled"
        active_low = false
        buzzer_pin = 13
        [display]
        type = "sh1106"
        address = 0x3D
        height = 32
        [bridge]
        transport = "serial"
        path = "/dev/ttyAMA0"
        baud = 230400
        [[sensor]]
        transport = "ant"
        role = "heart_rate"
        ant_device_number = 12345
        ant_device_type = 120
        [[sensor]]
        transport = "ble"
        role = "power"
        ble_address = "c8:3a:1f:00:12:ab"
        name = "Pedals"
        [rider]
        max_hr = 190
        lthr = 170
        [zones]
        hr_model = "explicit"
        hr_boundaries = [120, 140, 155, 170]
        power_boundaries = [110, 150, 180, 210, 240, 300]
        [training]
        auto_pause_speed_kmh = 4
        auto_lap = true
        [storage]
        fsync_interval_ms = 500
        """).get()
        #expect(c.buttons.pins == [5, 6] && c.buttons.bias == .disabled && !c.buttons.activeLow && c.buttons.buzzerPin == 13)
        #expect(c.display.type == .sh1106 && c.display.address == 0x3D && c.display.height == 32)
        #expect(c.bridge.transport == .serial && c.bridge.effectivePath == "/dev/ttyAMA0" && c.bridge.baud == 230_400)
        #expect(c.sensors.count == 2)
        #expect(c.sensors[0].antDeviceNumber == 12_345 && c.sensors[0].role == .heartRate)
        #expect(c.sensors[1].bleAddress == "C8:3A:1F:00:12:AB" && c.sensors[1].name == "Pedals")
        #expect(c.rider.maxHr == 190 && c.rider.lthr == 170 && c.rider.restingHr == 60)
        #expect(c.zones.hrModel == .explicit && c.zones.hrBoundaries == [120, 140, 155, 170])
        #expect(c.training.autoPauseSpeedKmh == 4 && c.training.autoLap)
        #expect(c.storage.fsyncIntervalMs == 500)
    }

    /// Every kind of bad input: the right kind, the right line, and a message that names what
    /// is allowed.
    @Test func everyKindOfBadInput() {
        let cases: [(String, ConfigError.Kind, Int, String)] = [
            ("[buttons]\nfoo = 1", .unknownKey, 2, "allowed keys in [buttons]: chip, pins"),
            ("stray = 1", .unknownKey, 1, "under a [table]"),
            ("[wheels]", .unknownTable, 1, "allowed tables"),
            ("[sensor]\nrole = \"power\"", .unknownTable, 1, "[[sensor]]"),
            ("[buttons]\nlong_press_ms = \"long\"", .wrongType, 2, "whole number"),
            ("[buttons]\nactive_low = 1", .wrongType, 2, "true or false"),
            ("[buttons]\npins = 17", .wrongType, 2, "array"),
            ("[buttons]\npins = [17, \"x\"]", .wrongType, 2, "whole numbers only"),
            ("[buttons]\npins = [17]", .outOfRange, 2, "2...3"),
            ("[buttons]\ndebounce_ms = 0", .outOfRange, 2, "1...500"),
            ("[buttons]\nbias = \"up\"", .notAllowed, 2, "\"pull-up\""),
            ("[buttons]\nchip = \"gpiochip0\"", .notAllowed, 2, "/dev/"),
            ("[display]\naddress = 0x80", .outOfRange, 2, "0x3...0x77"),
            ("[display]\ntype = \"oled\"", .notAllowed, 2, "\"ssd1306\", \"sh1106\""),
            ("[display]\nheight = 48", .notAllowed, 2, "32, 64"),
            ("[display]\ncontrast = 256", .outOfRange, 2, "0...255"),
            ("[bridge]\ntransport = \"usb\"", .notAllowed, 2, "\"unix\", \"serial\""),
            ("[bridge]\nbaud = 1234", .notAllowed, 2, "115200"),
            ("[bridge]\ntransport = \"serial\"\npath = \"/tmp/x\"", .inconsistent, 3, "/dev/serial0"),
            ("[[sensor]]\nrole = \"power\"", .missingKey, 1, "transport"),
            ("[[sensor]]\ntransport = \"ant\"\nrole = \"power\"", .missingKey, 1, "ant_device_number"),
            ("[[sensor]]\ntransport = \"ble\"\nrole = \"power\"\nble_address = \"C8:3A\"", .notAllowed, 4, "six hex pairs"),
            ("[[sensor]]\ntransport = \"ble\"\nrole = \"power\"\nble_address = \"C8:3A:1F:00:12:AB\"\nant_device_number = 5", .inconsistent, 5, "transport = \"ant\""),
            ("[[sensor]]\ntransport = \"ant\"\nrole = \"gears\"\nant_device_number = 5", .notAllowed, 3, "heart_rate"),
            ("[bike]\nwheel_circumference_mm = 20", .outOfRange, 2, "500...3500"),
            ("[rider]\nresting_hr = 100\nmax_hr = 100", .inconsistent, 3, "above resting_hr"),
            ("[rider]\nlthr = 200\nmax_hr = 190", .inconsistent, 2, "between resting_hr"),
            ("[zones]\nhr_model = \"explicit\"", .missingKey, 2, "hr_boundaries"),
            ("[zones]\nhr_model = \"lthr\"", .missingKey, 2, "lthr in [rider]"),
            ("[zones]\nhr_model = \"explicit\"\nhr_boundaries = [140, 120]", .notAllowed, 3, "ascending"),
            ("[zones]\nhr_boundaries = [120, 140]", .inconsistent, 2, "explicit"),
            ("[training]\nauto_pause_speed_kmh = \"slow\"", .wrongType, 2, "a number"),
            ("[training]\nauto_lap_distance_m = 10", .outOfRange, 2, "100...100000"),
            ("[storage]\nfsync_interval_ms = 5000", .outOfRange, 2, "50...1000"),
            ("[storage]\ndata_dir = \"rides\"", .notAllowed, 2, "absolute path"),
            ("[control]\nsocket = \"/\(String(repeating: "s", count: 120))\"", .outOfRange, 2, "longer than 107"),
            ("[companion]\nlisten = \"localhost\"", .notAllowed, 2, "host:port"),
            ("[companion]\nenabled = \"yes\"", .wrongType, 2, "true or false"),
            ("[buttons]\npins = [17, 27, 17]", .inconsistent, 2, "listed twice"),
            ("[buttons]\npins = [17, 27]\nbuzzer_pin = 27", .inconsistent, 3, "also a button pin"),
            ("[rider]\nage = 1.5", .wrongType, 2, "whole number"),
            ("x = [1", .syntax, 1, "not closed"),
        ]
        for (text, kind, line, fragment) in cases {
            let errs = errors(text)
            #expect(errs.count == 1, "\(text.debugDescription): \(errs)")
            guard let e = errs.first else { continue }
            #expect(e.kind == kind, "\(text.debugDescription): \(e)")
            #expect(e.line == line, "\(text.debugDescription): \(e)")
            #expect(e.message.contains(fragment), "\(text.debugDescription): \(e.message)")
        }
    }

    /// All problems are reported, not just the first, in line order.
    @Test func allErrorsAreCollected() {
        let errs = errors("""
        [buttons]
        debounce_ms = 0
        colour = "red"
        [display]
        type = "lcd"
        [nope]
        [rider]
        ftp = 5000
        """)
        #expect(errs.map(\.line) == [2, 3, 5, 6, 8])
        #expect(errs.map(\.kind) == [.outOfRange, .unknownKey, .notAllowed, .unknownTable, .outOfRange])
        let report = ConfigErrors(errors: errs).report(path: "/etc/bikecomputer/config.toml")
        #expect(report.split(separator: "\n").first == "/etc/bikecomputer/config.toml:2: debounce_ms = 0 is out of range; allowed: 1...500")
    }

    /// Rendering and loading again gives the same configuration, for random valid configs.
    @Test func renderRoundTrips() throws {
        let seed = UInt64.random(in: 1...UInt64.max)
        var rng = SeededRandom(seed: seed)
        for _ in 0..<100 {
            var c = DeviceConfig()
            c.buttons.pins = Array(Set((0..<Int.random(in: 2...3, using: &rng)).map { _ in Int.random(in: 0...40, using: &rng) })).sorted()
            if c.buttons.pins.count < 2 { c.buttons.pins = [1, 2] }
            c.buttons.bias = DeviceConfig.Buttons.Bias.allCases.randomElement(using: &rng)!
            c.buttons.debounceMs = Int.random(in: 1...500, using: &rng)
            c.display.type = DeviceConfig.Display.Controller.allCases.randomElement(using: &rng)!
            // Each kind of panel has its own keys (an I2C address for an OLED, the SPI device and
            // clock for a memory LCD): a config sets only those.
            if c.display.type.isSPI {
                c.display.chipSelect = Int.random(in: 0...15, using: &rng)
                c.display.spiSpeedHz = Int.random(in: DeviceConfig.Display.spiSpeedRange, using: &rng)
            } else {
                c.display.address = Int.random(in: 3...0x77, using: &rng)
            }
            c.bridge.transport = .serial
            c.bridge.path = "/dev/ttyS\(Int.random(in: 0...9, using: &rng))"
            c.training.autoPauseSpeedKmh = Double(Int.random(in: 5...150, using: &rng)) / 10
            c.storage.dataDir = "/data/with \"quote\" \\ \(Int.random(in: 0...99, using: &rng))"
            var s = DeviceConfig.Sensor(transport: .ble, role: DeviceConfig.Sensor.Role.allCases.randomElement(using: &rng)!)
            s.bleAddress = (0..<6).map { _ in String(format: "%02X", Int.random(in: 0...255, using: &rng)) }.joined(separator: ":")
            c.sensors = [s]
            let text = c.renderTOML()
            let back = try ConfigLoader.load(text: text).get()
            #expect(back == c, "seed \(seed)\n\(text)")
        }
    }
}
