import AppCore
import BoardIO
import Control
import Device
import RideModel

/// The button lines as the wiring needs them: their levels at start-up, and their edges on the
/// loop. `GPIOButtons` (libgpiod) is the board's; the tests use a double.
public protocol ButtonLines: AnyObject {
    /// The current levels (true = pressed), by line index.
    func currentLevels() throws -> [Bool]
    /// Registers the lines with `loop`; `onEdge(index, active, timestampNs)` runs on its thread.
    func attach(to loop: EventLoop, onEdge: @escaping (Int, Bool, UInt64) -> Void) throws
    /// Reads the edges queued on the lines now, without waiting, into `onEdge`.
    func readQueuedEdges()
    func detach()
}

/// The buttons on the run loop: each edge goes to the runtime as it happened
/// (`DeviceRuntime.buttonEdge`, which debounces), and a `buttons.debounce` timer at the
/// runtime's `buttonsDeadline` settles them. Buttons that cannot be opened are counted and shown
/// in `status`; the ride goes on (`bikecomputer ctl` controls it).
public final class ButtonsComponent: BoardComponent {
    /// An edge timestamp further than this from the loop's clock is on another clock: the loop's
    /// time is used instead.
    public static let timestampSkewMaxMs: Int64 = 10_000

    public private(set) var lines: (any ButtonLines)?
    let map: [(button: Button, offset: UInt32)]
    let log: LogPort
    weak var board: BoardWiring?
    var debounceTimer: TimerID?
    public private(set) var state: String
    public private(set) var hardwareErrors: UInt64
    /// The levels read when the lines were opened (a button held at boot gives no press until it
    /// is released): the runtime's debouncer starts from them.
    public private(set) var initiallyPressed: [Button: Bool] = [:]
    /// CLOCK_MONOTONIC ms (since the kernel started) when the lines were in the loop: a press
    /// from then on is taken (boot to ride-ready, docs/power.md).
    public private(set) var readyAtMs: Int64?

    /// `lines` nil: no buttons (disabled, or opening failed: `state` and `errors` say which).
    public init(_ lines: (any ButtonLines)?, lines map: [(button: Button, offset: UInt32)], state: String, errors: UInt64 = 0, log: LogPort) {
        self.lines = lines
        self.map = map
        self.state = state
        self.log = log
        hardwareErrors = errors
        if let levels = try? lines?.currentLevels() {
            for (i, l) in levels.enumerated() where i < map.count { initiallyPressed[map[i].button] = l }
        }
    }

    public func start(_ board: BoardWiring) throws {
        self.board = board
        guard let lines else { return }
        do {
            try lines.attach(to: board.loop) { [unowned self] index, active, timestampNs in self.edge(index, active, timestampNs) }
            readyAtMs = MonotonicClock.nowMs
        } catch {
            hardwareErrors += 1
            state = "failed: \(error)"
            log.log(.error, "buttons: \(error); running without the buttons (use `bikecomputer ctl` to control the ride)")
            self.lines = nil
        }
    }

    /// Edges read from the lines, and those whose timestamp was on another clock (or ahead of
    /// the loop's): the loop's time stood in for it.
    public private(set) var edgesRead: UInt64 = 0
    public private(set) var edgesRestamped: UInt64 = 0

    /// `buttons` in `ctl status`: the edges read and what the debouncer made of them, so a press
    /// that changed nothing is told apart: a glitch shorter than `debounce_ms` by the kernel's
    /// timestamps, a lost edge (`edges_repeated`), or a press taken late.
    public func writeStatus(into w: inout JSONWriter) {
        guard lines != nil else { return }
        let d = board?.runtime.buttonDebouncer
        w.beginObject("buttons")
        w.int("edges", Int64(clamping: edgesRead))
        w.int("edges_restamped", Int64(clamping: edgesRestamped))
        w.int("edges_ignored", d.map { Int64(clamping: $0.edgesIgnored) })
        w.int("edges_repeated", d.map { Int64(clamping: $0.edgesRepeated) })
        w.int("glitches", d.map { Int64(clamping: $0.glitches) })
        w.int("last_glitch_ms", d?.lastGlitchMs)
        w.endObject()
    }

    func edge(_ index: Int, _ active: Bool, _ timestampNs: UInt64) {
        guard let board, index < map.count else { return }
        edgesRead &+= 1
        var ms = Int64(timestampNs / 1_000_000)
        let nowMs = board.loop.nowMs
        if ms > nowMs || nowMs - ms > Self.timestampSkewMaxMs { // a timestamp on another clock
            ms = nowMs
            edgesRestamped &+= 1
        }
        board.runtime.buttonEdge(map[index].button, pressed: active, at: MonotonicInstant(milliseconds: ms))
        armDebounce()
    }

    /// Before the core decides a long press at its deadline (`BoardWiring.tick`): while a
    /// button is down, the edges the kernel has queued are read and what has settled by now is
    /// handed on, so a release the loop has not read yet counts. A turn that ran past the
    /// deadline (a slow handler, a loaded CPU) otherwise fired the long press of a button
    /// released long before: a tap on START while paused ended the ride.
    func readQueuedEdges() {
        guard let lines, let board else { return }
        if let d = board.runtime.buttonDebouncer, !Button.allCases.contains(where: { d.isPressed($0) }) { return }
        lines.readQueuedEdges()
        board.runtime.settleButtons(at: board.now)
        armDebounce()
    }

    func armDebounce() {
        guard let board else { return }
        if let t = debounceTimer { board.loop.cancelTimer(t) }
        debounceTimer = nil
        guard let d = board.runtime.buttonsDeadline else { return }
        debounceTimer = board.loop.scheduleTimer("buttons.debounce", atMs: d.milliseconds, periodMs: nil) { [unowned self] in
            self.debounceTimer = nil
            board.runtime.settleButtons(at: board.now)
            self.armDebounce()
            board.afterInputs()
        }
    }

    public func close() {
        if let t = debounceTimer { board?.loop.cancelTimer(t) }
        debounceTimer = nil
        lines?.detach()
    }
}
