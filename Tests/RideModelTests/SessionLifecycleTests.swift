import Testing
@testable import RideModel

/// Every (state, action) pair of workout-model.md §1, valid and invalid.
struct SessionLifecycleTests {
    /// A lifecycle driven into `state` through valid transitions.
    static func lifecycle(in state: SessionState) -> SessionLifecycle {
        var l = SessionLifecycle()
        var t: Int64 = 0
        func go(_ a: SessionAction) { t += 10; try! l.apply(a, at: MonotonicInstant(milliseconds: t)) }
        switch state {
        case .idle: break
        case .prepared: go(.prepare)
        case .running: go(.prepare); go(.start)
        case .paused: go(.prepare); go(.start); go(.pause)
        case .stopped: go(.prepare); go(.start); go(.stop)
        case .ended: go(.prepare); go(.start); go(.stop); go(.save)
        }
        #expect(l.state == state)
        return l
    }

    /// The expected outcome: the new state, or nil when refused.
    static func expected(_ s: SessionState, _ a: SessionAction) -> SessionState? {
        switch (s, a) {
        case (.idle, .prepare), (.ended, .prepare): .prepared
        case (.prepared, .cancel): .idle
        case (.prepared, .start): .running
        case (.running, .pause): .paused
        case (.running, .lap): .running
        case (.paused, .resume): .running
        case (.running, .stop), (.paused, .stop): .stopped
        case (.stopped, .save), (.stopped, .discard): .ended
        case (.ended, .dismiss): .idle
        default: nil
        }
    }

    @Test(arguments: SessionState.allCases)
    func everyActionFromEveryState(state: SessionState) {
        let actions: [SessionAction] = [.prepare, .cancel, .start, .pause, .resume, .lap, .stop, .save, .discard, .dismiss]
        for action in actions {
            var l = Self.lifecycle(in: state)
            let at = MonotonicInstant(milliseconds: 1_000)
            let want = Self.expected(state, action)
            do {
                let got = try l.apply(action, at: at)
                #expect(want == got, "\(action) from \(state) gave \(got), expected refusal")
                #expect(l.lastTransition == at)
            } catch {
                #expect(want == nil, "\(action) from \(state) refused (\(error)) but should give \(String(describing: want))")
                #expect(l.state == state, "a refused transition must not change the state")
            }
        }
    }

    @Test(arguments: [SessionState.prepared, .running, .paused, .stopped])
    func startWhileRideInProgressIsDistinctError(state: SessionState) {
        var l = Self.lifecycle(in: state)
        for action in [SessionAction.prepare] + (state == .prepared ? [] : [SessionAction.start]) {
            #expect(throws: SessionError.rideAlreadyInProgress(state)) {
                try l.apply(action, at: MonotonicInstant(milliseconds: 5_000))
            }
        }
        #expect(SessionError.rideAlreadyInProgress(state).description.contains("ride already in progress"))
    }

    @Test func pauseWhileIdleIsInvalidTransition() {
        var l = SessionLifecycle()
        #expect(throws: SessionError.invalidTransition(from: .idle, action: .pause)) {
            try l.apply(.pause, at: .zero)
        }
    }

    @Test func transitionsMustNotGoBackInTime() {
        var l = Self.lifecycle(in: .running)
        let last = l.lastTransition!
        #expect(throws: SessionError.timeWentBackwards(last: last, requested: MonotonicInstant(milliseconds: 1))) {
            try l.apply(.pause, at: MonotonicInstant(milliseconds: 1))
        }
        #expect(l.state == .running)
    }

    @Test func inProgressFlag() {
        #expect(SessionState.allCases.filter(\.isRideInProgress) == [.prepared, .running, .paused, .stopped])
    }
}
