/// A panel driver: turns framebuffers into the transactions its controller understands, over
/// any `DisplayLink`, a bounded piece per `flushStep` so the run loop is never held long. The
/// board's screen (`PanelScreen`) and the pipeline (`PanelPipeline`) drive panels only through
/// this; the SSD1306/SH1106 (`DisplayDriver`) and the Sharp memory LCD (`SharpMemoryDriver`)
/// are two. A new panel is one type conforming to it (and layouts of its size in Screens).
///
/// The contract: `present` takes the newest frame and does no I/O; `flushStep` sends at most one
/// bounded piece of what changed (or of a recovery step) and returns the pages (bands or line
/// groups) it wrote; `hasPendingPages` says whether a step is waiting. After a link error the
/// owner calls `reinitialize()`; `refreshIfDue` is called at least once a second with the time
/// (the panel's periodic duty: OLED state re-assertion, a memory LCD's VCOM toggle).
public protocol PanelDriver: Sendable {
    var width: Int { get }
    var height: Int { get }
    var statistics: DisplayStatistics { get }
    var hasPendingPages: Bool { get }
    /// Whether the display is meant to be on.
    var isOn: Bool { get }

    /// The full start-up (init, a cleared or complete frame, display on): blocking, start-up only.
    mutating func start<B: DisplayLink>(bus: inout B) throws(DisplayBusError)
    /// Takes the framebuffer's dirty pages as the newest frame (no I/O).
    mutating func present(_ framebuffer: inout Framebuffer)
    /// Sends at most one bounded piece; returns the pages (bands, line groups) written.
    @discardableResult
    mutating func flushStep<B: DisplayLink>(bus: inout B) throws(DisplayBusError) -> Int
    /// Sends everything pending (tests, start-up, screenshots).
    mutating func flushAll<B: DisplayLink>(bus: inout B) throws(DisplayBusError)
    /// Forgets what the panel holds: the next steps resend the whole frame.
    mutating func invalidate()
    /// After a link error: the next steps bring the panel back from any state (init, frame, on).
    mutating func reinitialize()
    /// The panel's periodic duty, when due (time as a value); returns whether it queued work.
    @discardableResult
    mutating func refreshIfDue(atMs nowMs: Int64) -> Bool
    /// Dim while idle where the panel can (an OLED's contrast); nothing where it cannot.
    mutating func setDimmed<B: DisplayLink>(_ dimmed: Bool, bus: inout B) throws(DisplayBusError)
    mutating func setDisplayOn<B: DisplayLink>(_ on: Bool, bus: inout B) throws(DisplayBusError)
    /// How often `refreshIfDue` must run even when the screen does not change (a memory LCD's
    /// VCOM); nil when calling it with each screen (at least once a second) is enough.
    var dutyPeriodMs: Int64? { get }
    /// A panel whose periodic duty is a pin's level (a memory LCD's EXTCOMIN): the level the
    /// pin should have now; nil for none.
    var dutyPinLevel: Bool? { get }
}

extension PanelDriver {
    public var dutyPeriodMs: Int64? { nil }
    public var dutyPinLevel: Bool? { nil }
}

extension DisplayDriver: PanelDriver {
    public var width: Int { panel.width }
    public var height: Int { panel.height }
}
