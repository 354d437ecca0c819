import Configuration
import Device
import Display
import Testing

/// `[display]` of a memory LCD becomes the driver's settings: the model, the spidev node, the
/// clock, lines per step from that clock, VCOM's source.
struct DisplayMappingTests {
    @Test func aSharpPanelMapsToItsDriver() throws {
        let c = try ConfigLoader.load(text: "[buttons]\nchip = \"/dev/gpiochip3\"\n[display]\ntype = \"sharp-ls027\"\nspi_bus = 0\nchip_select = 1\nspi_speed_hz = 1000000\nextcomin_pin = 23").get()
        let s = try ConfigMapping.settings(c)
        let lcd = try #require(s.memoryLCD)
        #expect(lcd.model == .ls027b7dh01 && lcd.devicePath == "/dev/spidev0.1" && lcd.speedHz == 1_000_000)
        #expect(lcd.extcominPin == 23 && lcd.gpioChip == "/dev/gpiochip3")
        #expect(lcd.linesPerStep == 8, "8 lines of 400 px = 418 bytes = 3.3 ms at 1 MHz")
        let d = lcd.driver()
        #expect(d.width == 400 && d.height == 240 && d.vcomSource == .extcomin && d.linesPerStep == 8)
        let small = try #require(try ConfigMapping.settings(try ConfigLoader.load(text: "[display]\ntype = \"sharp-ls013\"\nspi_speed_hz = 2000000").get()).memoryLCD)
        #expect(small.model == .ls013b7dh03 && small.driver().vcomSource == .serial && small.linesPerStep == 16)
        #expect(try ConfigMapping.settings(.defaults).memoryLCD == nil, "the OLED stays the default")
    }
}
