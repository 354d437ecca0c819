import BoardIO

/// The buttons: one input line per button on one chip, each line's event fd registered with
/// the run loop (no polling timer, no thread). Edges go to `onEdge` as (button index, active,
/// timestamp); debouncing and meaning are the caller's (Device.ButtonDebouncer, AppCore).
public final class GPIOButtons {
    public struct LineSpec: Sendable, Hashable {
        public var offset: UInt32
        public init(offset: UInt32) { self.offset = offset }
    }

    public static let buttonsMax = 8

    public let lines: [GPIOInputLine]
    private var registrations: [IORegistration] = []
    private weak var attachedLoop: EventLoop?
    private var onEdge: ((Int, Bool, UInt64) -> Void)?
    /// Read errors (counted; the line stays registered).
    public private(set) var readErrors: UInt64 = 0
    public private(set) var lastError: GPIOError?

    /// Requests every line; if one fails, the ones already requested are released and the
    /// error says which line and why.
    public init(chip: String, offsets: [UInt32], activeLow: Bool, bias: GPIOBias, consumer: String = "bikecomputer") throws(GPIOError) {
        precondition(offsets.count <= Self.buttonsMax, "more than \(Self.buttonsMax) buttons")
        var requested: [GPIOInputLine] = []
        for offset in offsets {
            requested.append(try GPIOInputLine(chip: chip, offset: offset, activeLow: activeLow, bias: bias, consumer: consumer))
        }
        lines = requested
    }

    /// The current levels (true = pressed), for the debouncer's initial state.
    public func currentLevels() throws(GPIOError) -> [Bool] {
        var levels: [Bool] = []
        for line in lines { levels.append(try line.isActive()) }
        return levels
    }

    /// Registers each line's event fd with `loop`; `onEdge(index, active, timestampNs)` runs on
    /// the loop's thread for each edge.
    public func attach(to loop: EventLoop, onEdge: @escaping (Int, Bool, UInt64) -> Void) throws(EventLoopError) {
        attachedLoop = loop
        self.onEdge = onEdge
        for (index, line) in lines.enumerated() {
            let r = try loop.register(line.eventFD, "gpio.buttons", interest: .read) { [unowned self, unowned line] _ in
                self.read(line, index, onEdge)
            }
            registrations.append(r)
        }
    }

    /// Reads the edges queued on every line now, as the loop does when a line's descriptor is
    /// ready (the event fds are non-blocking: a line with none queued gives none).
    public func readQueuedEdges() {
        guard let onEdge else { return }
        for (index, line) in lines.enumerated() { read(line, index, onEdge) }
    }

    private func read(_ line: GPIOInputLine, _ index: Int, _ onEdge: (Int, Bool, UInt64) -> Void) {
        do throws(GPIOError) {
            try line.readEdges { edge in onEdge(index, edge.active, edge.timestampNs) }
        } catch {
            readErrors += 1
            lastError = error
        }
    }

    /// Stops watching the lines (also done when the buttons are released).
    public func detach() {
        if let loop = attachedLoop {
            for r in registrations { loop.deregister(r) }
        }
        registrations.removeAll()
        attachedLoop = nil
        onEdge = nil
    }

    deinit { detach() }
}
