import AppCore
import Device
import Display
import RideModel
import Screens

/// The board's `ScreenPort` for any panel on any link: renders the screen value into the
/// pipeline (no I/O) and leaves the changed pages queued; the run loop sends them with
/// `flushStep`, one bounded piece per loop turn, so no flush blocks the loop for long. Dims
/// while idle (where the panel can). `DisplayScreen<Bus>` is the SSD1306/SH1106 one.
///
/// The ride never stops for the display (docs/display.md, "Recovery"):
/// - a bus error (or a display that is missing when `start` runs) is counted, the display is
///   left alone for `retryAfterErrorMs`, and the next attempt resends the init table, the whole
///   frame and display on: a display plugged in late or back from a brown-out is used as soon as
///   it answers;
/// - every `DisplayDriver.refreshPeriodMs` the state commands are re-asserted and the frame
///   rewritten, so a controller that lost power without any bus error is back within 5 s.
public final class PanelScreen<Driver: PanelDriver, Bus: DisplayLink>: ScreenPort {
    public static var retryAfterErrorMs: Int64 { 5_000 }

    public private(set) var pipeline: PanelPipeline<Driver>
    public var bus: Bus
    public private(set) var busErrors: UInt64 = 0
    public private(set) var lastError: DisplayBusError?
    /// Whether the last transaction was acknowledged (false before `start` and after an error
    /// until an attempt succeeds).
    public private(set) var isAnswering = false
    /// Times the display came back after errors.
    public private(set) var recoveries: UInt64 = 0
    public private(set) var pagesSent: UInt64 = 0
    public private(set) var frames: UInt64 = 0
    var suspendedUntil: MonotonicInstant?
    var lastNow = MonotonicInstant.zero
    /// Called from `show` when pages are waiting to be sent (the loop schedules a flush step).
    public var onPagesPending: (() -> Void)?
    /// Called when the display stops answering, or fails with a different error than before
    /// (not at every retry: a display missing for a whole ride logs once).
    public var onError: ((DisplayBusError) -> Void)?
    /// Called when the display answers again after errors.
    public var onRecovered: (() -> Void)?
    /// Drives a panel's duty pin (a memory LCD's EXTCOMIN) to the level given; returns whether
    /// it could. Nil: the panel has no such pin wired.
    public var dutyPin: ((Bool) -> Bool)?
    /// The level last put on the duty pin.
    var dutyPinLevel: Bool?
    /// Duty pin levels that could not be set.
    public private(set) var dutyPinErrors: UInt64 = 0

    public init(bus: Bus, pipeline: PanelPipeline<Driver>) {
        self.bus = bus
        self.pipeline = pipeline
    }

    /// Init sequence and a cleared screen (start-up only: one full frame of bus time). On an
    /// error the screen stays usable: the error is counted and reported, and the display is
    /// retried every `retryAfterErrorMs` from the following `show` calls.
    public func start() throws(DisplayBusError) {
        do {
            try pipeline.start(bus: &bus)
            isAnswering = true
        } catch {
            failed(error)
            throw error
        }
    }

    public func show(_ screen: ScreenModel, at now: MonotonicInstant) {
        lastNow = max(lastNow, now)
        frames &+= 1
        pipeline.show(screen)
        if !isSuspended {
            refreshDuty()
            let sent = transactions
            do {
                try pipeline.applyBrightness(for: screen, bus: &bus)
                if transactions != sent { answered() }
            } catch {
                failed(error)
            }
        }
        if pipeline.hasPendingPages && !isSuspended { onPagesPending?() }
    }

    /// How often `duty(at:)` must run when nothing is shown (a memory LCD's VCOM); nil: never.
    public var dutyPeriodMs: Int64? { pipeline.driver.dutyPeriodMs }

    /// The panel's periodic duty when due (VCOM, the rolling rewrite), screen changes or not;
    /// pages it queues go out by the usual flush steps. An EXTCOMIN pin keeps toggling while the
    /// bus is suspended after an error (it is not on the bus).
    public func duty(at now: MonotonicInstant) {
        lastNow = max(lastNow, now)
        refreshDuty()
        if !isSuspended && pipeline.hasPendingPages { onPagesPending?() }
    }

    private func refreshDuty() {
        pipeline.refreshIfDue(atMs: lastNow.milliseconds)
        if let level = pipeline.driver.dutyPinLevel, level != dutyPinLevel, let pin = dutyPin {
            if pin(level) { dutyPinLevel = level } else { dutyPinErrors &+= 1 }
        }
    }

    var isSuspended: Bool {
        guard let until = suspendedUntil else { return false }
        if lastNow >= until { suspendedUntil = nil; return false }
        return true
    }

    public var hasPendingPages: Bool { pipeline.hasPendingPages && !isSuspended }

    /// Sends at most one changed page (or one recovery command step); returns the pages sent
    /// (0 or 1).
    @discardableResult
    public func flushStep(at now: MonotonicInstant) -> Int {
        lastNow = max(lastNow, now)
        guard !isSuspended, pipeline.hasPendingPages else { return 0 }
        let sent = transactions
        do {
            let n = try pipeline.flushStep(bus: &bus)
            if transactions != sent { answered() }
            pagesSent &+= UInt64(n)
            return n
        } catch {
            failed(error)
            return 0
        }
    }

    /// What `ctl status` shows: "ok", or "failed: " and why the display is not in use.
    public var status: String {
        if isAnswering { return "ok" }
        guard let e = lastError else { return "not started" }
        return "failed: \(e); not in use, retrying every \(Self.retryAfterErrorMs / 1000) s (\(busErrors) errors so far)"
    }

    private var transactions: Int { pipeline.driver.statistics.transactions }

    private func answered() {
        guard !isAnswering, lastError != nil else { return }
        isAnswering = true
        recoveries &+= 1
        onRecovered?()
    }

    func failed(_ error: DisplayBusError) {
        busErrors &+= 1
        let news = isAnswering || lastError != error
        isAnswering = false
        lastError = error
        suspendedUntil = lastNow.advanced(byMs: Self.retryAfterErrorMs)
        pipeline.reinitialize() // init table, every page, display on once the bus answers again
        if news { onError?(error) }
    }

    /// Turns the panel off (shutdown), best effort.
    public func blank() {
        do { try pipeline.blank(bus: &bus) } catch {}
    }
}

/// The SSD1306/SH1106 screen on a bus (I²C on the board, the emulator in tests).
public typealias DisplayScreen<Bus: DisplayLink> = PanelScreen<DisplayDriver, Bus>

extension PanelScreen where Driver == DisplayDriver {
    public convenience init(bus: Bus, panel: PanelConfiguration) {
        self.init(bus: bus, pipeline: DisplayPipeline(panel: panel))
    }
}

/// The SPI device of a memory LCD in measurement mode: accepts everything, calls `onData` for
/// each transaction (every memory LCD transaction is data) and optionally spins for the time
/// the bytes take at `emulatedClockHz` (8 bits a byte).
public struct LatencyProbeSPI: SPIWriter {
    public private(set) var transactions = 0
    public var onData: (() -> Void)?
    public var emulatedClockHz: Int
    let nowNs: () -> UInt64

    public init(emulatedClockHz: Int = 0, nowNs: @escaping () -> UInt64) {
        self.emulatedClockHz = emulatedClockHz
        self.nowNs = nowNs
    }

    public mutating func write(_ bytes: UnsafeBufferPointer<UInt8>) throws(DisplayBusError) {
        transactions += 1
        onData?()
        if emulatedClockHz > 0 {
            let until = nowNs() &+ UInt64(bytes.count * 8) * 1_000_000_000 / UInt64(emulatedClockHz)
            while nowNs() < until {}
        }
    }
}

/// A memory LCD's screen in measurement mode.
public typealias LatencyProbeLCD = PanelScreen<SharpMemoryDriver, SPIDisplayLink<LatencyProbeSPI, NoDataCommandLine>>

/// A display bus for measurements: accepts everything, and calls `onPage` with each data
/// transaction (a page's bytes) so the run loop can time "sensor frame → first changed page
/// handed to the bus". Optionally spins for the time the bytes would take on a real I²C bus.
public struct LatencyProbeBus: DisplayBus {
    public private(set) var transactions = 0
    public private(set) var dataTransactions = 0
    public var onData: (() -> Void)?
    /// Emulated bus clock (0: no delay); bytes × 9 bits / clock is spent busy-waiting.
    public var emulatedClockHz: Int
    let nowNs: () -> UInt64

    public init(emulatedClockHz: Int = 0, nowNs: @escaping () -> UInt64, onData: (() -> Void)? = nil) {
        self.emulatedClockHz = emulatedClockHz
        self.nowNs = nowNs
        self.onData = onData
    }

    public mutating func write(control: UInt8, _ bytes: UnsafeBufferPointer<UInt8>) throws(DisplayBusError) {
        transactions += 1
        if control == OLEDControl.data {
            dataTransactions += 1
            onData?()
        }
        if emulatedClockHz > 0 {
            let ns = UInt64((bytes.count + 2) * 9) * 1_000_000_000 / UInt64(emulatedClockHz)
            let until = nowNs() &+ ns
            while nowNs() < until {}
        }
    }
}
