import AppCore
import Display

/// Renderer, framebuffer and panel driver together: what the board's screen owns for its
/// display. `show` does no I/O (draw + take the changed pages); `flushStep` sends at most one
/// bounded piece and belongs in the run loop, once per turn while `hasPendingPages`. Any
/// `PanelDriver` whose size has layouts (`ScreenLayouts`) can be driven.
public struct PanelPipeline<Driver: PanelDriver>: Sendable {
    public private(set) var renderer: ScreenRenderer
    public private(set) var framebuffer: Framebuffer
    public private(set) var driver: Driver

    /// `layouts` must be drawn for the panel's size.
    public init(driver: Driver, layouts: ScreenLayouts) {
        precondition(layouts.width == driver.width && layouts.height == driver.height,
                     "layouts for \(layouts.width)x\(layouts.height) on a \(driver.width)x\(driver.height) panel")
        renderer = ScreenRenderer(layouts: layouts)
        framebuffer = Framebuffer(width: driver.width, height: driver.height)
        self.driver = driver
    }

    /// The standard pages laid out for the driver's panel size.
    public init(driver: Driver) {
        self.init(driver: driver, layouts: .standard(width: driver.width, height: driver.height))
    }

    /// The panel's full start-up (one full frame of bus time: start-up only).
    public mutating func start(bus: inout some DisplayLink) throws(DisplayBusError) {
        try driver.start(bus: &bus)
    }

    /// Draws the screen value and queues the pages that changed.
    public mutating func show(_ model: ScreenModel) {
        // The framebuffer is written only here, so it holds the renderer's last output.
        guard renderer.renderChanges(model, into: &framebuffer) else { return }
        driver.present(&framebuffer)
    }

    public var hasPendingPages: Bool { driver.hasPendingPages }

    @discardableResult
    public mutating func flushStep(bus: inout some DisplayLink) throws(DisplayBusError) -> Int {
        try driver.flushStep(bus: &bus)
    }

    public mutating func flushAll(bus: inout some DisplayLink) throws(DisplayBusError) {
        try driver.flushAll(bus: &bus)
    }

    /// Dim while idle (nothing to read at a glance), full contrast otherwise; sends a command
    /// only when the level changes (and nothing on a panel that cannot dim).
    public mutating func applyBrightness(for model: ScreenModel, bus: inout some DisplayLink) throws(DisplayBusError) {
        try driver.setDimmed(model.mode == .idle, bus: &bus)
    }

    /// Resend every page on the next flushes (the controller's configuration is kept).
    public mutating func invalidate() { driver.invalidate() }

    /// After a bus error: the next flush steps bring the panel back (init, every page, on).
    public mutating func reinitialize() { driver.reinitialize() }

    /// The panel's periodic duty (`PanelDriver.refreshIfDue`).
    @discardableResult
    public mutating func refreshIfDue(atMs nowMs: Int64) -> Bool { driver.refreshIfDue(atMs: nowMs) }

    /// Turns the panel off (shutdown).
    public mutating func blank(bus: inout some DisplayLink) throws(DisplayBusError) {
        try driver.setDisplayOn(false, bus: &bus)
    }
}

/// The SSD1306/SH1106 pipeline (the board's 128×64 or 128×32 OLED).
public typealias DisplayPipeline = PanelPipeline<DisplayDriver>

extension PanelPipeline where Driver == DisplayDriver {
    public init(panel: PanelConfiguration = PanelConfiguration()) {
        self.init(driver: DisplayDriver(panel: panel), layouts: .standard(height: panel.height))
    }
}
