extension DeviceConfig.Display {
    /// SPI clocks accepted: a Sharp memory LCD is specified to 1 MHz typical (2 MHz on many
    /// breakouts); below 100 kHz a frame takes seconds.
    public static let spiSpeedRange = 100_000...8_000_000

    /// The keys that belong to the I²C OLEDs and to the SPI panels (each is an error with the
    /// other kind).
    static let oledKeys = ["bus", "address", "height", "contrast", "rotate_180"]
    static let spiKeys = ["spi_bus", "chip_select", "spi_speed_hz", "extcomin_pin"]

    /// /dev/spidevB.C of an SPI panel.
    public var spiDevicePath: String { "/dev/spidev\(spiBus).\(chipSelect)" }

    /// The panel's size in pixels.
    public var size: (width: Int, height: Int) {
        switch type {
        case .ssd1306, .sh1106: (128, height == 32 ? 32 : 64)
        case .sharpLS027: (400, 240)
        case .sharpLS013: (128, 128)
        }
    }
}

extension ConfigLoader {
    /// A key of the other kind of panel is a mistake the rider should hear about (an address
    /// for an SPI panel does nothing): each one is an error saying which keys apply.
    static func displayConsistency(_ r: TableReader, _ d: DeviceConfig.Display) {
        let others = d.type.isSPI ? DeviceConfig.Display.oledKeys : DeviceConfig.Display.spiKeys
        for key in others {
            guard let e = r.entry(key) else { continue }
            let why = d.type.isSPI
                ? "\(key) is for the I2C OLEDs (ssd1306, sh1106); a \(d.type.rawValue) is on SPI: set spi_bus, chip_select, spi_speed_hz (and extcomin_pin if EXTMODE is wired high)"
                : "\(key) is for the SPI memory LCDs (sharp-ls027, sharp-ls013); a \(d.type.rawValue) is on I2C: set bus and address"
            r.errors.append(ConfigError(line: e.line, .inconsistent, why))
        }
    }
}
