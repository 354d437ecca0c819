import Configuration
import Testing

/// `[display] type` chooses the panel; each kind's keys are errors with the other kind.
struct DisplayConfigTests {
    func load(_ text: String) -> Result<DeviceConfig, ConfigErrors> { ConfigLoader.load(text: text) }

    @Test func aSharpPanelOnSPI() throws {
        let c = try load("""
        [buttons]
        pins = [17, 27, 22]
        [display]
        type = "sharp-ls027"
        spi_bus = 1
        chip_select = 2
        spi_speed_hz = 2000000
        extcomin_pin = 23
        """).get()
        #expect(c.display.type == .sharpLS027 && c.display.type.isSPI)
        #expect(c.display.spiDevicePath == "/dev/spidev1.2")
        #expect(c.display.spiSpeedHz == 2_000_000 && c.display.extcominPin == 23)
        #expect(c.display.size == (400, 240))
        #expect(try load("[display]\ntype = \"sharp-ls013\"").get().display.size == (128, 128))
        #expect(try load("").get().display.size == (128, 64))
    }

    /// An OLED key on an SPI panel (and the reverse) is an error that names the keys that apply.
    @Test func keysOfTheOtherKindOfPanelAreErrors() {
        guard case .failure(let e) = load("[display]\ntype = \"sharp-ls027\"\naddress = 0x3C\nheight = 32") else {
            Issue.record("accepted")
            return
        }
        #expect(e.errors.count == 2)
        #expect(e.errors.allSatisfy { $0.kind == .inconsistent && $0.message.contains("spi_bus") })
        #expect(e.errors.map(\.line) == [3, 4])
        guard case .failure(let f) = load("[display]\ntype = \"sh1106\"\nchip_select = 1") else {
            Issue.record("accepted")
            return
        }
        #expect(f.errors.count == 1 && f.errors[0].message.contains("set bus and address"))
    }

    @Test func outOfRangeAndClashingPins() {
        for text in ["[display]\ntype = \"sharp-ls027\"\nspi_speed_hz = 50000",
                     "[display]\ntype = \"sharp-ls027\"\nspi_speed_hz = 20000000",
                     "[display]\ntype = \"sharp-ls999\"",
                     "[buttons]\npins = [17, 27]\n[display]\ntype = \"sharp-ls027\"\nextcomin_pin = 27",
                     "[buttons]\npins = [17, 27]\nbuzzer_pin = 18\n[display]\ntype = \"sharp-ls027\"\nextcomin_pin = 18"] {
            guard case .failure(let e) = load(text) else { Issue.record("accepted: \(text)"); continue }
            #expect(e.errors.count == 1, "\(text): \(e.errors)")
        }
        guard case .failure(let e) = load("[display]\ntype = \"sharp-ls999\"") else { return }
        #expect(e.errors[0].message.contains("sharp-ls027") && e.errors[0].message.contains("ssd1306"), "says what is allowed")
    }

    /// What `config check` prints reads back to the same config, for both kinds of panel.
    @Test func renderRoundTripsBothKinds() throws {
        for text in ["[display]\ntype = \"sharp-ls013\"\nspi_bus = 0\nchip_select = 1\nspi_speed_hz = 500000\nextcomin_pin = 5",
                     "[display]\ntype = \"sharp-ls027\"",
                     "[display]\ntype = \"sh1106\"\naddress = 0x3D\nheight = 32"] {
            let c = try load(text).get()
            let again = try load(c.renderTOML()).get()
            #expect(again.display == c.display, "\(text)")
        }
    }
}
