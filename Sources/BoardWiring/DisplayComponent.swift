import AppCore
import BoardIO
import Control
import Device
import Display
import RideModel

/// The board's screen as the wiring sees it: a `ScreenPort` whose pages go out one flush step
/// at a time, with its recovery state. `DisplayScreen` over any bus is one.
public protocol DisplayUnit: ScreenPort {
    /// Init table and a cleared screen (start-up only).
    func start() throws(DisplayBusError)
    var hasPendingPages: Bool { get }
    /// Sends at most one changed page (or one recovery command step); returns the pages sent.
    @discardableResult func flushStep(at now: MonotonicInstant) -> Int
    var isAnswering: Bool { get }
    /// "ok", or "failed: " and why the display is not in use.
    var status: String { get }
    var pagesSent: UInt64 { get }
    /// Screen values drawn (shown) so far.
    var frames: UInt64 { get }
    var busErrors: UInt64 { get }
    var onPagesPending: (() -> Void)? { get set }
    var onError: ((DisplayBusError) -> Void)? { get set }
    var onRecovered: (() -> Void)? { get set }
    /// Turns the panel off (shutdown), best effort.
    func blank()
    /// How often `duty(at:)` must run when the screen does not change (a memory LCD's VCOM);
    /// nil: never.
    var dutyPeriodMs: Int64? { get }
    /// The panel's periodic duty, when due.
    func duty(at now: MonotonicInstant)
}

extension PanelScreen: DisplayUnit {}

/// The display on the run loop: started (init table) when it is made, before the runtime's
/// first screen; each `show` that left pages pending schedules a `display.flush` step, one page
/// per loop turn (the first in the turn that queued them), so no flush holds the loop for long.
/// A display that is missing or fails is counted and retried (`DisplayScreen`); the ride goes on.
public final class DisplayComponent: BoardComponent {
    public let unit: (any DisplayUnit)?
    let configuredState: String
    let log: LogPort
    weak var board: BoardWiring?
    var flushTimer: TimerID?
    public private(set) var hardwareErrors: UInt64 = 0

    /// `unit` nil: no display (`--no-display`); `state` says so.
    public init(_ unit: (any DisplayUnit)?, state: String, log: LogPort) {
        self.unit = unit
        configuredState = state
        self.log = log
        guard let unit else { return }
        do { try unit.start() } catch {
            hardwareErrors += 1
            log.log(.error, "display: \(error); running without the display until it answers (retrying every \(DisplayScreen<CountingBus>.retryAfterErrorMs / 1000) s)")
        }
    }

    /// The runtime's screen port (nil without a display).
    public var screen: ScreenPort? { unit }

    public func start(_ board: BoardWiring) throws {
        self.board = board
        guard let unit else { return }
        unit.onPagesPending = { [unowned self] in self.scheduleFlush() }
        unit.onError = { [unowned self] e in
            self.hardwareErrors += 1
            self.log.log(.error, "display: \(e); retrying every \(DisplayScreen<CountingBus>.retryAfterErrorMs / 1000) s")
        }
        unit.onRecovered = { [unowned self] in self.log.log(.info, "display: answering again; init table and frame resent") }
        // A memory LCD's VCOM keeps alternating while nothing changes on screen (idle, paused).
        if let period = unit.dutyPeriodMs {
            dutyTimer = board.loop.scheduleRepeating("display.duty", everyMs: period) { [unowned self] in
                guard let board = self.board else { return }
                self.unit?.duty(at: board.now)
            }
        }
    }

    var dutyTimer: TimerID?

    public var state: String { unit.map { $0.isAnswering ? configuredState : $0.status } ?? configuredState }

    public func writeStatus(into w: inout JSONWriter) {
        w.beginObject("display")
        w.int("pages_sent", Int64(clamping: unit?.pagesSent ?? 0))
        w.int("frames", Int64(clamping: unit?.frames ?? 0))
        w.int("bus_errors", Int64(clamping: unit?.busErrors ?? 0))
        w.endObject()
    }

    /// Flush steps scheduled so far (tests).
    public private(set) var flushSteps: UInt64 = 0
    /// CLOCK_MONOTONIC ms (since the kernel started) when the first screen was wholly sent.
    public private(set) var firstFrameAtMs: Int64?

    /// One page per loop turn: the first step runs in the turn that queued the pages, the rest
    /// in the following turns (a timer 1 ms ahead never fires in the current turn).
    func scheduleFlush() {
        guard flushTimer == nil, let loop = board?.loop else { return }
        flushTimer = loop.scheduleTimer("display.flush", atMs: loop.nowMs, periodMs: nil, flushHandler)
    }

    /// Made once: scheduling a flush step allocates no closure.
    lazy var flushHandler: () -> Void = { [unowned self] in self.flush() }

    func flush() {
        flushTimer = nil
        guard let unit, let board else { return }
        flushSteps &+= 1
        unit.flushStep(at: board.now)
        // Boot to ride-ready (docs/power.md): when the first drawn screen was wholly on the panel.
        if firstFrameAtMs == nil, !unit.hasPendingPages, unit.isAnswering { firstFrameAtMs = MonotonicClock.nowMs }
        if unit.hasPendingPages {
            flushTimer = board.loop.scheduleTimer("display.flush", atMs: board.loop.nowMs + 1, periodMs: nil, flushHandler)
        }
    }

    /// Turns the panel off (shutdown); no flush step follows (a memory LCD stays cleared).
    public func blank() {
        if let t = flushTimer { board?.loop.cancelTimer(t) }
        flushTimer = nil
        unit?.blank()
    }

    public func close() {
        if let t = flushTimer { board?.loop.cancelTimer(t) }
        flushTimer = nil
        if let t = dutyTimer { board?.loop.cancelTimer(t) }
        dutyTimer = nil
    }
}
