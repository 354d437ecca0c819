import AppCore
import RideModel

/// "Durable before the screen confirms": while a state change's journal records (start, pause,
/// resume, lap, end) are still being synced in the background, the screen keeps showing the
/// state that is durable — its mode (countdown, running, paused, summary) and lap — while
/// everything else (live values, timers, page changes within the same mode) moves on at once.
/// When the sync completes the runtime shows the screen again and the change appears. Over
/// storage that syncs in `commit` (the simulator) nothing is ever held.
struct ConfirmationGate {
    /// What the gate keeps of the last screen shown with nothing awaiting durability: only the
    /// state it holds back. (Keeping the whole `ScreenModel` shared its arrays with the core's, so
    /// the core's next change to one copied it: a heap allocation per sensor frame.)
    struct Confirmed {
        var mode: ScreenMode
        /// The core's session state with that screen (`DeviceRuntime.stateShown`).
        var state: SessionState
        var lapNumber: Int
        var lapTimerMs: Int64
    }
    var confirmed: Confirmed?
    /// Screens shown with a state change held back (for tests and status).
    private(set) var heldScreens: UInt64 = 0

    /// What to show for `current`, given whether the last state change is still awaited.
    mutating func screen(_ current: ScreenModel, state: SessionState, awaiting: Bool) -> ScreenModel {
        guard awaiting, let c = confirmed else {
            confirmed = Confirmed(mode: current.mode, state: state, lapNumber: current.lapNumber, lapTimerMs: current.lapTimerMs)
            return current
        }
        let sameMode = Self.kind(current.mode) == Self.kind(c.mode)
        guard !sameMode || current.lapNumber != c.lapNumber else { return current }
        heldScreens &+= 1
        var s = current
        if !sameMode { s.mode = c.mode }
        if current.lapNumber != c.lapNumber {
            s.lapNumber = c.lapNumber
            s.lapTimerMs = c.lapTimerMs
        }
        return s
    }

    /// The mode without its page: a page change is not a state change.
    static func kind(_ m: ScreenMode) -> Int {
        switch m {
        case .idle: 0
        case .countdown: 1
        case .running: 2
        case .paused: 3
        case .summary: 4
        case .confirmDiscard: 5
        case .sensors: 6
        case .courses: 7
        }
    }
}
