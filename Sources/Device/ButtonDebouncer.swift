import AppCore
import RideModel

/// Software debounce for the buttons: raw edges (with the kernel's timestamps) in, clean
/// `ButtonEvent` downs and ups out. A level counts once it has held for `debounceMs` without
/// another edge; a bounce storm of any length therefore yields at most one event per settled
/// change, and a glitch shorter than `debounceMs` yields none. Events are stamped with the
/// instant the level was confirmed (last edge + `debounceMs`), so they are in time order with
/// everything else the app core sees. Press, long press and release meaning are decided by
/// `AppCore` from these downs and ups (`AppConfiguration.longPressMs`).
///
/// The runtime calls `edge` for each line event, arms a timer at `nextDeadline`, and calls
/// `advance(to:)` when it fires.
public struct ButtonDebouncer: Sendable {
    public static let debounceMsAllowed: ClosedRange<Int64> = 1...500

    struct Line: Sendable {
        var stablePressed = false
        var rawPressed = false
        var lastEdge = MonotonicInstant.zero
        /// Edges since the last event (all but one are bounces when an event comes).
        var edgesSinceEvent: UInt64 = 0
    }

    public let debounceMs: Int64
    private var lines: [Line]
    /// Edges that did not lead to an event (bounces and glitches).
    public private(set) var edgesIgnored: UInt64 = 0
    /// Edges that reported the level the line already had (a lost edge in between).
    public private(set) var edgesRepeated: UInt64 = 0
    /// Levels that changed and changed back before `debounceMs` (by the kernel's timestamps):
    /// how many, and the last one's length in ms. A tap the rider meant that comes out this short
    /// (an edge's timestamp taken late) shows here instead of vanishing unexplained.
    public private(set) var glitches: UInt64 = 0
    public private(set) var lastGlitchMs: Int64?
    /// Levels that had settled before a later edge was read (the loop came late to the
    /// deadline): handed out by the next `advance`, at the instant they settled.
    private var settledEarlier: [ButtonEvent] = []

    /// `initiallyPressed` is the level read when the lines were requested (a button held at
    /// boot produces no down until it is released and pressed again).
    public init(debounceMs: Int64, initiallyPressed: [Button: Bool] = [:]) {
        precondition(Self.debounceMsAllowed.contains(debounceMs), "debounce \(debounceMs) ms outside \(Self.debounceMsAllowed)")
        self.debounceMs = debounceMs
        lines = Array(repeating: Line(), count: Button.allCases.count)
        settledEarlier.reserveCapacity(2 * Button.allCases.count * 4)
        for (button, pressed) in initiallyPressed {
            lines[Int(button.rawValue)].stablePressed = pressed
            lines[Int(button.rawValue)].rawPressed = pressed
        }
    }

    /// A raw edge: the line's level after it (`pressed` already accounts for active-low) at the
    /// kernel's timestamp. Timestamps that go backwards are clamped to the previous edge.
    public mutating func edge(_ button: Button, pressed: Bool, at instant: MonotonicInstant) {
        let i = Int(button.rawValue)
        // The level before this edge had already held for debounceMs: it settled then, whether
        // or not `advance` ran in time. Without this a tap shorter than the loop's lateness (a
        // slow card sync, a loaded CPU) had its down and up read together and was lost.
        let settledAt = lines[i].lastEdge.advanced(byMs: debounceMs)
        if lines[i].rawPressed != lines[i].stablePressed, instant >= settledAt {
            lines[i].stablePressed = lines[i].rawPressed
            settledEarlier.append(ButtonEvent(button, lines[i].rawPressed ? .down : .up, at: settledAt))
            edgesIgnored += lines[i].edgesSinceEvent - 1
            lines[i].edgesSinceEvent = 0
        }
        if lines[i].rawPressed == pressed {
            edgesRepeated += 1
        } else if lines[i].rawPressed != lines[i].stablePressed, pressed == lines[i].stablePressed {
            // Still unsettled after the check above: the level came back before `settledAt`.
            glitches += 1
            lastGlitchMs = instant.milliseconds(since: lines[i].lastEdge)
        }
        lines[i].rawPressed = pressed
        lines[i].lastEdge = max(lines[i].lastEdge, instant)
        lines[i].edgesSinceEvent += 1
    }

    /// When `advance(to:)` next has something to confirm (nil: nothing pending).
    public var nextDeadline: MonotonicInstant? {
        var earliest: MonotonicInstant? = settledEarlier.first?.instant
        for line in lines where line.rawPressed != line.stablePressed {
            let d = line.lastEdge.advanced(byMs: debounceMs)
            earliest = earliest.map { min($0, d) } ?? d
        }
        return earliest
    }

    /// Confirms the levels that have settled by `now`; returns the events in time order (at
    /// most one per button).
    public mutating func advance(to now: MonotonicInstant) -> [ButtonEvent] {
        var events: [ButtonEvent] = settledEarlier
        settledEarlier.removeAll(keepingCapacity: true)
        for button in Button.allCases {
            let i = Int(button.rawValue)
            let line = lines[i]
            let settledAt = line.lastEdge.advanced(byMs: debounceMs)
            guard settledAt <= now else { continue }
            if line.rawPressed != line.stablePressed {
                lines[i].stablePressed = line.rawPressed
                events.append(ButtonEvent(button, line.rawPressed ? .down : .up, at: settledAt))
                edgesIgnored += line.edgesSinceEvent - 1
            } else {
                edgesIgnored += line.edgesSinceEvent
            }
            lines[i].edgesSinceEvent = 0
        }
        events.sort { $0.instant < $1.instant }
        return events
    }

    /// The confirmed level of `button`.
    public func isPressed(_ button: Button) -> Bool { lines[Int(button.rawValue)].stablePressed }
}
