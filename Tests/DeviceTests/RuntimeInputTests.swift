import AppCore
import Control
import Device
import Journal
import RideModel
import Sensors
import Testing

/// The runtime's typed inputs other than sensor bytes: control lines (parsed, dispatched and
/// answered in one place), button edges (debounced or not), and the boot sequence.
struct RuntimeInputTests {
    static func device(debounceMs: Int64? = nil) -> DeviceRuntime {
        let opened = FlashJournal.open(storage: SimulatedFlash(), randomSeed: 3, deviceNow: .zero)
        return DeviceRuntime.boot((opened.journal, opened.core, opened.report), archive: DiscardingArchive(), log: MemoryLog(),
                                  buttonDebounceMs: debounceMs, wall: nil, at: .zero)
    }

    static func noStatus() -> String { "{}" }

    @Test func controlLinesAreAnsweredByTheCore() {
        let d = Self.device()
        let start = d.control("start", at: ms(10), status: Self.noStatus)
        #expect(start.line.hasPrefix("ok prepared: countdown started") && !start.isError, "\(start)")
        let again = d.control("START", at: ms(20), status: Self.noStatus)
        #expect(again.isError && again.line.hasPrefix("error prepared: "), "a start during a ride is refused: \(again)")
        let unknown = d.control("fly away", at: ms(30), status: Self.noStatus)
        #expect(unknown.isError && unknown.line.hasPrefix("error unknown command 'fly'"))
        let help = d.control("help", at: ms(40), status: Self.noStatus)
        #expect(help.line.hasPrefix("ok commands: start"))
        let status = d.control("status", at: ms(50)) { "{\"state\":\"\(d.state)\"}" }
        #expect(status.line == "ok {\"state\":\"prepared\"}")
    }

    @Test func subscribeNeedsAStreamAndGetsItsSnapshot() {
        let d = Self.device()
        #expect(d.control("subscribe", at: ms(0), status: Self.noStatus).isError)
        let stream = ControlStream(streamID: 7)
        _ = d.addObserver(stream)
        let sub = d.control("subscribe", stream: stream, at: ms(0), status: Self.noStatus)
        #expect(sub.line.hasPrefix("ok subscribed stream=0000000000000007"))
        #expect(sub.subscription?.first?.contains("\"type\":\"snapshot\"") == true)
    }

    /// One pairing-code rule (six digits) from the parser to the screen. Before it, `pairing-code
    /// 1234` was accepted by the parser and the run loop and drawn as "001234", a code the
    /// companion never issued.
    @Test func pairingCodeIsSixDigitsShownWithLeadingZeros() {
        let d = Self.device()
        let shown = d.control("pairing-code 012345", at: ms(0), status: Self.noStatus)
        #expect(shown.line == "ok pairing code shown" && !shown.isError, "\(shown)")
        #expect(d.core.screen.pairingCode == 12_345)
        let short = d.control("pairing-code 1234", at: ms(1), status: Self.noStatus)
        #expect(short.isError && short.line.contains("six digits"), "\(short)")
        #expect(d.core.screen.pairingCode == 12_345, "a refused code changes nothing")
        let cleared = d.control("pairing-code clear", at: ms(2), status: Self.noStatus)
        #expect(cleared.line == "ok pairing code cleared")
        #expect(d.core.screen.pairingCode == nil)
    }

    @Test func rawButtonEdgesAreDebouncedBeforeTheCore() {
        let d = Self.device(debounceMs: 30)
        // A bouncing press: down, up, down within the debounce time.
        d.buttonEdge(.startPause, pressed: true, at: ms(100))
        d.buttonEdge(.startPause, pressed: false, at: ms(105))
        d.buttonEdge(.startPause, pressed: true, at: ms(110))
        #expect(d.state == .idle, "nothing reaches the core before the level settles")
        #expect(d.buttonsDeadline == ms(140))
        d.settleButtons(at: ms(139))
        #expect(d.state == .idle)
        d.settleButtons(at: ms(140))
        #expect(d.state == .prepared, "one down, stamped when it settled")
        #expect(d.buttonsDeadline == nil)
        #expect(d.buttonDebouncer?.edgesIgnored == 2)
    }

    @Test func withoutDebounceAnEdgeIsAPressAtOnce() {
        let d = Self.device()
        d.buttonEdge(.startPause, pressed: true, at: ms(100))
        #expect(d.state == .prepared)
        #expect(d.buttonsDeadline == nil)
    }

    /// The boot sequence announces every role's first state: expected roles the data source has
    /// no paired sensor for show as not configured, not as searching forever.
    @Test func bootAnnouncesSensorRoles() {
        let d = Self.device()
        for role in SensorRole.allCases { #expect(d.core.screen.sensor(role) == .notConfigured) }
    }
}
