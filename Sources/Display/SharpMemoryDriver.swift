/// A Sharp memory LCD (LS027B7DH01 400×240, LS013B7DH03 128×128, ...): a reflective panel whose
/// pixels keep their state, written a line at a time over SPI with no D/C line (the command
/// travels in the data) and chip select active high. Lines that changed are sent, at most
/// `linesPerStep` per `flushStep` (one SPI transaction), so a step holds the loop for a bounded
/// time: `linesPerStep(width:clockHz:budgetUs:)` fits a step in a time budget at the link's
/// clock (8 lines of the 400-pixel panel at 1 MHz: 418 bytes, 3.3 ms).
///
/// The wire (Sharp's "Programming Memory LCDs" application note): a command byte whose first
/// bits are M0 (write lines), M1 (VCOM) and M2 (clear all); for each line its 1-based address,
/// the line's pixels leftmost first (1 = white), and 8 trailer bits; 8 more trailer bits after
/// the last line. The panel takes bits least significant first; Linux SPI controllers (the Pi's
/// among them) send the most significant first, so this driver writes each byte already in
/// time order for an MSB-first link: the command bits in the top bits, the address reversed,
/// the leftmost pixel in the top bit.
///
/// VCOM must alternate at 1 Hz or more, image changes or not (a DC bias damages the panel):
/// `refreshIfDue` flips it every `vcomPeriodMs` and queues a toggle command unless a line write
/// carries the new polarity first, or, with EXTMODE high (`VcomSource.extcomin`), the owner
/// drives the EXTCOMIN pin to `dutyPinLevel`. Its owner calls `refreshIfDue` every
/// `dutyPeriodMs` whether the screen changes or not. Without a DISP line, "off" clears the panel
/// to white.
///
/// Nothing on SPI answers: a panel that lost its supply (its memory then drifts) cannot be
/// noticed. So every `rewritePeriodMs` every line is written again, a slice of lines at each
/// VCOM flip (24 lines of 240 every 500 ms; more after a late flip, for the time it came late),
/// which puts a reset panel right within that time.
public struct SharpMemoryDriver: PanelDriver {
    /// Panel sizes this driver knows.
    public struct Model: Sendable, Hashable {
        public var width: Int
        public var height: Int
        public init(width: Int, height: Int) {
            precondition(width > 0 && width % 8 == 0 && width <= Framebuffer.widthMaxPx, "a memory LCD line is whole bytes")
            precondition(height > 0 && height <= 255 && height % Framebuffer.pageHeightPx == 0, "line addresses are 8 bits")
            self.width = width
            self.height = height
        }
        /// 2.7" 400×240.
        public static let ls027b7dh01 = Model(width: 400, height: 240)
        /// 1.28" 128×128.
        public static let ls013b7dh03 = Model(width: 128, height: 128)
    }

    /// Command bits in an MSB-first byte (the panel's M0, M1, M2 in time order).
    public enum Command {
        public static let writeLines: UInt8 = 0x80
        public static let vcomHigh: UInt8 = 0x40
        public static let clearAll: UInt8 = 0x20
    }

    public static let linesPerFlushStepMax = 16
    /// VCOM polarity flips this often: a 1 Hz square wave (Sharp: each polarity at most 1 s).
    public static let vcomPeriodMs: Int64 = 500
    /// Every line is rewritten within this long (a panel that lost its supply is right again).
    public static let rewritePeriodMs: Int64 = 5_000

    /// Where VCOM comes from.
    public enum VcomSource: String, Sendable, Hashable {
        /// The M1 bit of the commands (EXTMODE tied low).
        case serial
        /// The EXTCOMIN pin (EXTMODE tied high): the owner drives it to `dutyPinLevel`.
        case extcomin
    }

    /// Lines per step so that one step's transaction (mode byte, lines, trailer) takes at most
    /// `budgetUs` at `clockHz`, between 1 and `linesPerFlushStepMax`.
    public static func linesPerStep(width: Int, clockHz: Int, budgetUs: Int = 3_500) -> Int {
        let bytes = clockHz / 8 * budgetUs / 1_000_000
        return max(1, min(linesPerFlushStepMax, (bytes - 2) / (width / 8 + 2)))
    }

    public let width: Int
    public let height: Int
    public private(set) var statistics = DisplayStatistics()
    public private(set) var isOn = false
    /// The VCOM polarity the next command carries.
    public private(set) var vcom = false
    let bytesPerLine: Int
    /// The newest frame, packed per line as it goes on the wire.
    var target: [UInt8]
    /// What the panel holds, for lines in `shownValid`.
    var shown: [UInt8]
    var shownValid: [UInt64]
    var pendingLines: [UInt64]
    var clearPending = false
    var vcomPending = false
    var nextVcomAtMs: Int64?
    var scratch: [UInt8]
    /// VCOM flips so far (tests, status).
    public private(set) var vcomToggles = 0
    public let vcomSource: VcomSource
    /// Lines one step sends at most.
    public let linesPerStep: Int
    /// The next line the rolling rewrite marks.
    var rewriteNext = 0
    /// When the rolling rewrite last queued a slice (nil: not yet).
    var lastRewriteAtMs: Int64?

    public init(model: Model = .ls027b7dh01, linesPerStep: Int = SharpMemoryDriver.linesPerFlushStepMax, vcom: VcomSource = .serial) {
        precondition(linesPerStep >= 1 && linesPerStep <= Self.linesPerFlushStepMax, "1...\(Self.linesPerFlushStepMax) lines per step")
        width = model.width
        height = model.height
        bytesPerLine = model.width / 8
        self.linesPerStep = linesPerStep
        vcomSource = vcom
        target = Array(repeating: 0xFF, count: model.height * bytesPerLine)
        shown = target
        let words = (model.height + 63) / 64
        shownValid = Array(repeating: 0, count: words)
        pendingLines = Array(repeating: 0, count: words)
        scratch = Array(repeating: 0, count: 2 + linesPerStep * (bytesPerLine + 2))
        invalidate()
    }

    /// The owner calls `refreshIfDue` this often, screen changes or not.
    public var dutyPeriodMs: Int64? { Self.vcomPeriodMs / 2 }

    /// With EXTCOMIN: the level the pin should have now (it follows VCOM); nil with serial VCOM.
    public var dutyPinLevel: Bool? { vcomSource == .extcomin ? vcom : nil }

    /// Off (blanked at shutdown), only the clear is still to go: no line may follow it.
    public var hasPendingPages: Bool { clearPending || isOn && (vcomPending || pendingLines.contains { $0 != 0 }) }

    func isSet(_ bits: [UInt64], _ line: Int) -> Bool { bits[line >> 6] & (1 << UInt64(line & 63)) != 0 }
    static func set(_ bits: inout [UInt64], _ line: Int, _ on: Bool) {
        if on { bits[line >> 6] |= 1 << UInt64(line & 63) } else { bits[line >> 6] &= ~(1 << UInt64(line & 63)) }
    }

    /// Clears the panel (white), writes the whole frame, display "on".
    public mutating func start<B: DisplayLink>(bus: inout B) throws(DisplayBusError) {
        isOn = true
        clearPending = true
        invalidate()
        try flushAll(bus: &bus)
    }

    public mutating func invalidate() {
        for i in shownValid.indices { shownValid[i] = 0 }
        for line in 0..<height { Self.set(&pendingLines, line, true) }
    }

    public mutating func reinitialize() {
        // The panel may have lost power (its memory is then garbage): cleared, everything again.
        clearPending = true
        invalidate()
        vcomPending = vcomSource == .serial
    }

    @discardableResult
    public mutating func refreshIfDue(atMs nowMs: Int64) -> Bool {
        guard let due = nextVcomAtMs else {
            nextVcomAtMs = nowMs + Self.vcomPeriodMs
            return false
        }
        guard nowMs >= due else { return false }
        var next = due + Self.vcomPeriodMs
        if next <= nowMs { next = nowMs + Self.vcomPeriodMs }
        nextVcomAtMs = next
        vcom.toggle()
        vcomToggles += 1
        vcomPending = vcomSource == .serial
        // The rolling rewrite: the next slice of lines goes out again, as many as the time since
        // the last slice is owed (24 of 240 for a duty on time), so a loop that comes late (a
        // stalled card, a loaded CPU) still rewrites every line within the period.
        let sinceMs = max(Self.vcomPeriodMs, nowMs - (lastRewriteAtMs ?? nowMs))
        lastRewriteAtMs = nowMs
        if isOn {
            let owed = (Int64(height) * sinceMs + Self.rewritePeriodMs - 1) / Self.rewritePeriodMs
            for _ in 0..<Int(min(Int64(height), owed)) {
                Self.set(&shownValid, rewriteNext, false)
                Self.set(&pendingLines, rewriteNext, true)
                rewriteNext = (rewriteNext + 1) % height
            }
        }
        return true
    }

    public mutating func present(_ framebuffer: inout Framebuffer) {
        precondition(framebuffer.width == width && framebuffer.height == height, "framebuffer does not match the panel")
        let dirty = framebuffer.takeDirtyPages()
        let fb = framebuffer
        let n = bytesPerLine
        target.withUnsafeMutableBufferPointer { all in
            for band in 0..<height / Framebuffer.pageHeightPx where dirty & (1 << UInt64(band)) != 0 {
                for line in band * 8..<band * 8 + 8 {
                    let row = UnsafeMutableBufferPointer(rebasing: all[line * n..<(line + 1) * n])
                    fb.packRow(line, into: row, leftmostInMSB: true, drawnIsZero: true)
                }
            }
        }
        for band in 0..<height / Framebuffer.pageHeightPx where dirty & (1 << UInt64(band)) != 0 {
            for line in band * 8..<band * 8 + 8 {
                var differs = !isSet(shownValid, line)
                if !differs {
                    for i in line * n..<(line + 1) * n where target[i] != shown[i] { differs = true; break }
                }
                Self.set(&pendingLines, line, differs)
            }
        }
    }

    /// One SPI transaction: the clear command, up to `linesPerFlushStepMax` changed lines, or the
    /// VCOM toggle, in that order. Returns the lines written.
    @discardableResult
    public mutating func flushStep<B: DisplayLink>(bus: inout B) throws(DisplayBusError) -> Int {
        let v = vcom ? Command.vcomHigh : 0
        if clearPending {
            scratch[0] = Command.clearAll | v
            scratch[1] = 0
            try transmit(count: 2, bus: &bus)
            clearPending = false
            vcomPending = false
            for line in 0..<height where isSet(shownValid, line) {
                for i in line * bytesPerLine..<(line + 1) * bytesPerLine { shown[i] = 0xFF }
            }
            return 0
        }
        guard isOn else { return 0 }
        let perLine = bytesPerLine + 2
        let fit = stepLines(on: bus)
        var count = 0
        var used = 1
        scratch[0] = Command.writeLines | v
        var line = 0
        while line < height && count < fit {
            if isSet(pendingLines, line) {
                scratch[used] = Self.reversed(UInt8(line + 1))
                for i in 0..<bytesPerLine { scratch[used + 1 + i] = target[line * bytesPerLine + i] }
                scratch[used + 1 + bytesPerLine] = 0
                used += perLine
                count += 1
            }
            line += 1
        }
        if count > 0 {
            scratch[used] = 0  // the last line's second trailer byte
            used += 1
            try transmit(count: used, bus: &bus)
            // Mark what was sent (lines before `line` that were pending).
            var marked = 0
            var l = 0
            while marked < count {
                if isSet(pendingLines, l) {
                    for i in l * bytesPerLine..<(l + 1) * bytesPerLine { shown[i] = target[i] }
                    Self.set(&shownValid, l, true)
                    Self.set(&pendingLines, l, false)
                    marked += 1
                }
                l += 1
            }
            statistics.dataBytes += count * bytesPerLine
            statistics.pageWrites += count
            vcomPending = false  // the command carried the current polarity
            return count
        }
        if vcomPending {
            scratch[0] = v
            scratch[1] = 0
            try transmit(count: 2, bus: &bus)
            vcomPending = false
        }
        return 0
    }

    public mutating func flushAll<B: DisplayLink>(bus: inout B) throws(DisplayBusError) {
        let fit = stepLines(on: bus)
        let steps = 2 + (height + fit - 1) / fit
        for _ in 0..<steps where hasPendingPages { try flushStep(bus: &bus) }
    }

    /// Lines one transaction carries on `bus` (at most `linesPerStep`).
    func stepLines<B: DisplayLink>(on bus: B) -> Int {
        let fit = min(linesPerStep, (min(bus.transactionBytesMax, scratch.count) - 2) / (bytesPerLine + 2))
        precondition(fit >= 1, "the link cannot carry one line per transaction")
        return fit
    }

    /// A reflective panel has no backlight or contrast to dim.
    public mutating func setDimmed<B: DisplayLink>(_ dimmed: Bool, bus: inout B) throws(DisplayBusError) {}

    /// Without a DISP line, off is a white panel and on brings the frame back.
    public mutating func setDisplayOn<B: DisplayLink>(_ on: Bool, bus: inout B) throws(DisplayBusError) {
        isOn = on
        if on {
            invalidate()
        } else {
            clearPending = true
            try flushStep(bus: &bus)
        }
    }

    private mutating func transmit<B: DisplayLink>(count: Int, bus: inout B) throws(DisplayBusError) {
        let result: Result<Void, DisplayBusError> = scratch.withUnsafeBufferPointer { all in
            do throws(DisplayBusError) {
                try bus.send(.data, UnsafeBufferPointer(rebasing: all[0..<count]))
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try result.get()
        statistics.transactions += 1
        statistics.payloadBytes += count
    }

    /// `b` with its bit order reversed (a line address in time order for an MSB-first link).
    static func reversed(_ b: UInt8) -> UInt8 {
        var v = b, r: UInt8 = 0
        for _ in 0..<8 { r = r << 1 | v & 1; v >>= 1 }
        return r
    }
}
