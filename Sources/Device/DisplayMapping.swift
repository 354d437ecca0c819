import Configuration
import Display

/// A Sharp memory LCD as `[display]` describes it: which panel, its spidev node and clock, where
/// VCOM comes from, and how many lines one flush step may send at that clock (a step stays
/// within `stepBudgetUs`, as an OLED page does on I²C).
public struct MemoryLCDSettings: Sendable, Hashable {
    public var model: SharpMemoryDriver.Model
    public var name: String
    public var devicePath: String
    public var speedHz: Int
    /// The EXTCOMIN line on `gpioChip` (EXTMODE high); nil: VCOM by command.
    public var extcominPin: UInt32?
    public var gpioChip: String
    public var linesPerStep: Int

    /// The longest a flush step's transaction may take on the wire.
    public static let stepBudgetUs = 3_500

    /// The driver these settings describe.
    public func driver() -> SharpMemoryDriver {
        SharpMemoryDriver(model: model, linesPerStep: linesPerStep, vcom: extcominPin == nil ? .serial : .extcomin)
    }
}

extension ConfigMapping {
    /// The memory LCD of `[display]`, nil for an OLED.
    public static func memoryLCD(_ c: DeviceConfig) -> MemoryLCDSettings? {
        let d = c.display
        let model: SharpMemoryDriver.Model
        switch d.type {
        case .ssd1306, .sh1106: return nil
        case .sharpLS027: model = .ls027b7dh01
        case .sharpLS013: model = .ls013b7dh03
        }
        return MemoryLCDSettings(model: model, name: d.type.rawValue, devicePath: d.spiDevicePath, speedHz: d.spiSpeedHz,
                                 extcominPin: d.extcominPin.map { UInt32($0) }, gpioChip: c.buttons.chip,
                                 linesPerStep: SharpMemoryDriver.linesPerStep(width: model.width, clockHz: d.spiSpeedHz,
                                                                              budgetUs: MemoryLCDSettings.stepBudgetUs))
    }
}
