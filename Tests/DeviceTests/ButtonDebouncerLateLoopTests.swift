import AppCore
import Device
import RideModel
import TestSupport
import Testing

/// The debouncer when the run loop comes late: edges read in a batch after their deadlines
/// passed (a slow SD-card sync, a loaded CPU; seen in the VM tests under TCG). The events must be
/// the same as with a loop that is always on time. Before the fix a tap shorter than the
/// lateness had its down and up read together and was lost.
struct ButtonDebouncerLateLoopTests {
    func at(_ ms: Int64) -> MonotonicInstant { MonotonicInstant(milliseconds: ms) }

    @Test func aTapReadAfterItsReleaseIsNotLost() {
        var d = ButtonDebouncer(debounceMs: 30)
        d.edge(.startPause, pressed: true, at: at(1_000))
        d.edge(.startPause, pressed: false, at: at(1_200))   // both edges read at 1,500
        #expect(d.nextDeadline == at(1_030), "the settled down is due at once")
        let events = d.advance(to: at(1_500))
        #expect(events == [ButtonEvent(.startPause, .down, at: at(1_030)), ButtonEvent(.startPause, .up, at: at(1_230))])
        #expect(d.nextDeadline == nil)
    }

    @Test func aGlitchReadLateIsStillIgnored() {
        var d = ButtonDebouncer(debounceMs: 30)
        d.edge(.lap, pressed: true, at: at(1_000))
        d.edge(.lap, pressed: false, at: at(1_010))
        #expect(d.advance(to: at(2_000)).isEmpty)
        #expect(d.edgesIgnored == 2)
    }

    /// Random edge sequences on all buttons: a loop that reads every edge at once and advances
    /// once at the end yields exactly the events of a loop that is always on time.
    @Test func aLateLoopSeesWhatAnOnTimeLoopSees() {
        for seed: UInt64 in 1...200 {
            var g = SeededRandom(seed: seed)
            var edges: [(Button, Bool, Int64)] = []
            var t: Int64 = 0
            var level = [false, false, false]
            for _ in 0..<g.int(1...40) {
                t += Int64(g.chance(0.5) ? g.int(1...40) : g.int(41...400))
                let b = Button.allCases[g.int(0...2)]
                level[Int(b.rawValue)].toggle()
                edges.append((b, level[Int(b.rawValue)], t))
            }
            let end = t + 1_000

            var onTime = ButtonDebouncer(debounceMs: 30)
            var expected: [ButtonEvent] = []
            var i = 0
            while true {
                if let d = onTime.nextDeadline, i == edges.count || d.milliseconds < edges[i].2 {
                    expected += onTime.advance(to: d)
                } else if i < edges.count {
                    onTime.edge(edges[i].0, pressed: edges[i].1, at: at(edges[i].2))
                    i += 1
                } else {
                    break
                }
            }
            expected += onTime.advance(to: at(end))

            var late = ButtonDebouncer(debounceMs: 30)
            for e in edges { late.edge(e.0, pressed: e.1, at: at(e.2)) }
            var got = late.advance(to: at(end))
            got += late.advance(to: at(end))
            #expect(got == expected, "seed \(seed)")
            #expect(late.edgesIgnored == onTime.edgesIgnored, "seed \(seed)")
        }
    }
}
