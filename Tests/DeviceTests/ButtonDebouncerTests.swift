import TestSupport
import AppCore
import Device
import RideModel
import Testing

private func at(_ ms: Int64) -> MonotonicInstant { MonotonicInstant(milliseconds: ms) }

/// Feeds edges in time order, advancing the debouncer at each deadline the way the runtime's
/// timer would, and collects the events.
private func run(_ debouncer: inout ButtonDebouncer, edges: [(Button, Bool, Int64)], until endMs: Int64) -> [ButtonEvent] {
    var events: [ButtonEvent] = []
    var pending = edges.sorted { $0.2 < $1.2 }[...]
    while true {
        let nextEdge = pending.first?.2
        let deadline = debouncer.nextDeadline?.milliseconds
        if let d = deadline, nextEdge.map({ d < $0 }) ?? true, d <= endMs {
            events += debouncer.advance(to: at(d))
        } else if let e = pending.first {
            pending = pending.dropFirst()
            debouncer.edge(e.0, pressed: e.1, at: at(e.2))
        } else {
            break
        }
    }
    events += debouncer.advance(to: at(endMs))
    return events
}

struct ButtonDebouncerTests {
    @Test func cleanPressAndRelease() {
        var d = ButtonDebouncer(debounceMs: 30)
        let events = run(&d, edges: [(.startPause, true, 100), (.startPause, false, 400)], until: 1_000)
        #expect(events == [ButtonEvent(.startPause, .down, at: at(130)), ButtonEvent(.startPause, .up, at: at(430))])
        #expect(d.edgesIgnored == 0)
        #expect(d.glitches == 0 && d.lastGlitchMs == nil)
    }

    @Test func glitchShorterThanDebounceIsIgnored() {
        var d = ButtonDebouncer(debounceMs: 30)
        let events = run(&d, edges: [(.lap, true, 100), (.lap, false, 110), (.lap, true, 200), (.lap, false, 229)], until: 1_000)
        #expect(events.isEmpty)
        #expect(d.edgesIgnored == 4)
        #expect(!d.isPressed(.lap))
        // Each press that came back within the debounce time is a glitch, with its length.
        #expect(d.glitches == 2)
        #expect(d.lastGlitchMs == 29)
    }

    /// A bounce on a press that then holds is not a glitch (the level settles as pressed); a
    /// press held exactly the debounce time settles too.
    @Test func glitchesCountOnlyLevelsThatCameBackUnsettled() {
        var d = ButtonDebouncer(debounceMs: 30)
        let events = run(&d, edges: [(.page, true, 100), (.page, false, 105), (.page, true, 108), (.page, false, 400),
                                     (.page, true, 600), (.page, false, 630)], until: 1_000)
        #expect(events.map(\.edge) == [.down, .up, .down, .up])
        #expect(events.map(\.instant) == [at(138), at(430), at(630), at(660)])
        // 100-105 pressed, then released before it settled: one glitch of 5 ms (the 3 ms release
        // that followed was the settled level's own). The 30 ms press at 600 settled at 630, as
        // its release came.
        #expect(d.glitches == 1)
        #expect(d.lastGlitchMs == 5)
    }

    /// Seeded bounce storms: any number of bounces shorter than the debounce time around a
    /// press and a release give exactly one down and one up, at the settle instants.
    @Test func bounceStormsGiveOneDownAndOneUp() {
        let base = UInt64.random(in: 0...UInt64.max / 2)
        for k in 0..<300 {
            let seed = base + UInt64(k)
            var rng = SeededRandom(seed: seed)
            let debounce = Int64.random(in: 5...50, using: &rng)
            var edges: [(Button, Bool, Int64)] = []
            var t = Int64.random(in: 0...1_000, using: &rng)
            func storm(ending level: Bool) -> Int64 {
                let bounces = Int.random(in: 0...40, using: &rng)
                var pressed = level
                // An odd or even number of alternating edges that ends at `level`.
                var seq: [Bool] = []
                for _ in 0...bounces { seq.append(pressed); pressed.toggle() }
                seq.reverse()
                for p in seq {
                    edges.append((.startPause, p, t))
                    t += Int64.random(in: 0...(debounce - 1), using: &rng)
                }
                let last = edges.last!.2
                return last
            }
            let pressSettled = storm(ending: true) + debounce
            t = pressSettled + 1 + Int64.random(in: 0...3_000, using: &rng)
            // The release storm starts with a release edge after the press has settled.
            let releaseSettled = storm(ending: false) + debounce
            var d = ButtonDebouncer(debounceMs: debounce)
            let events = run(&d, edges: edges, until: releaseSettled + 10_000)
            #expect(events == [ButtonEvent(.startPause, .down, at: at(pressSettled)), ButtonEvent(.startPause, .up, at: at(releaseSettled))],
                    "seed \(seed): \(edges.count) edges gave \(events)")
        }
    }

    @Test func buttonsAreIndependentAndEventsInTimeOrder() {
        var d = ButtonDebouncer(debounceMs: 20)
        let events = run(&d, edges: [(.lap, true, 50), (.startPause, true, 40), (.lap, false, 55), (.lap, true, 60)], until: 500)
        #expect(events == [ButtonEvent(.startPause, .down, at: at(60)), ButtonEvent(.lap, .down, at: at(80))])
    }

    @Test func heldAtBootGivesNoDownUntilReleased() {
        var d = ButtonDebouncer(debounceMs: 20, initiallyPressed: [.page: true])
        #expect(d.nextDeadline == nil)
        let events = run(&d, edges: [(.page, false, 100)], until: 500)
        #expect(events == [ButtonEvent(.page, .up, at: at(120))])
    }

    /// The debounced events drive the app core's long press: held ≥ 1.5 s while paused ends
    /// the ride, a short press resumes it.
    @Test func debouncedEventsDriveLongPressInAppCore() {
        func ride(holdMs: Int64) -> SessionState {
            var app = AppCore(configuration: AppConfiguration(countdownSeconds: 0), randomSeed: 1)
            app.handle(.command(.start, at: at(0)))
            app.handle(.tick(at(1_000)))
            app.handle(.command(.pause, at: at(2_000)))
            var d = ButtonDebouncer(debounceMs: 30)
            // Press with bounces at 10 s, release with bounces after `holdMs`.
            let edges: [(Button, Bool, Int64)] = [
                (.startPause, true, 10_000), (.startPause, false, 10_003), (.startPause, true, 10_007),
                (.startPause, false, 10_000 + holdMs), (.startPause, true, 10_002 + holdMs), (.startPause, false, 10_009 + holdMs),
            ]
            for e in run(&d, edges: edges, until: 20_000) {
                if let deadline = app.nextDeadline, deadline < e.instant { app.handle(.tick(deadline)) }
                app.handle(.button(e))
            }
            app.handle(.tick(at(20_000)))
            return app.state
        }
        #expect(ride(holdMs: 200) == .running)
        let long = ride(holdMs: 2_000)
        #expect(long != .paused && long != .running, "a 2 s hold while paused ends the ride (got \(long))")
    }
}
