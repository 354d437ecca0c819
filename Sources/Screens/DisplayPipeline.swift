import AppCore
import Display

/// Renderer, framebuffer and driver together: what the device runtime owns for its display.
/// `show` does no I/O (draw + take the changed pages); `flushStep` sends at most one page and
/// belongs in the run loop, once per turn while `hasPendingPages`.
public struct DisplayPipeline: Sendable {
    public private(set) var renderer: ScreenRenderer
    public private(set) var framebuffer: Framebuffer
    public private(set) var driver: DisplayDriver

    public init(panel: PanelConfiguration = PanelConfiguration()) {
        renderer = ScreenRenderer(layouts: .standard(height: panel.height))
        framebuffer = Framebuffer(width: panel.width, height: panel.height)
        driver = DisplayDriver(panel: panel)
    }

    /// Init sequence, cleared memory, display on (one full frame of bus time: start-up only).
    public mutating func start(bus: inout some DisplayBus) throws(DisplayBusError) {
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
    public mutating func flushStep(bus: inout some DisplayBus) throws(DisplayBusError) -> Int {
        try driver.flushStep(bus: &bus)
    }

    public mutating func flushAll(bus: inout some DisplayBus) throws(DisplayBusError) {
        try driver.flushAll(bus: &bus)
    }

    /// Dim while idle (nothing to read at a glance), full contrast otherwise; sends a command
    /// only when the level changes.
    public mutating func applyBrightness(for model: ScreenModel, bus: inout some DisplayBus) throws(DisplayBusError) {
        try driver.setDimmed(model.mode == .idle, bus: &bus)
    }

    /// Resend every page on the next flushes (the controller's configuration is kept).
    public mutating func invalidate() { driver.invalidate() }

    /// After a bus error: the next flush steps resend the init table, every page, display on.
    public mutating func reinitialize() { driver.reinitialize() }

    /// The periodic state re-assertion and full rewrite (`DisplayDriver.refreshIfDue`).
    @discardableResult
    public mutating func refreshIfDue(atMs nowMs: Int64) -> Bool { driver.refreshIfDue(atMs: nowMs) }
}
