/// Byte counts of everything the driver has sent.
public struct DisplayStatistics: Sendable, Hashable {
    /// I²C write transactions.
    public var transactions = 0
    /// Bytes after the control byte (commands and their arguments, pixel data).
    public var payloadBytes = 0
    /// Pixel data bytes only.
    public var dataBytes = 0
    /// Page (or page slice) writes.
    public var pageWrites = 0

    public init() {}

    /// Bytes on the wire: per transaction the address byte and the control byte, plus payload.
    public var wireBytes: Int { payloadBytes + 2 * transactions }

    /// Bus time at `clockHz` (9 clocks per byte, start/stop ignored), in microseconds.
    public func busTimeUs(clockHz: Int = 400_000) -> Int { wireBytes * 9 * 1_000_000 / clockHz }
}

/// The SSD1306/SH1106 panel driver (one driver for both controllers, over I²C or SPI: any
/// `DisplayLink`): turns framebuffers into controller transactions, sending only what changed and never
/// more than one page per `flushStep`, so a flush never holds the run loop for more than about
/// 3 ms at 400 kHz (one full page: 128 data bytes + window commands ~ 3.2 ms).
///
/// `present` takes the newest frame; pages not yet sent are simply superseded (the driver keeps
/// one target image, not a queue). The driver also remembers what the controller holds, so a
/// page that changed and changed back sends nothing, and a changed page sends only the columns
/// from its first to its last differing byte. No allocation after `init`.
///
/// Recovery (docs/display.md, "Recovery"). A controller that browned out or whose connector
/// glitched comes back dark (display and charge pump off, page addressing, memory cleared) while
/// later writes are acknowledged, and nothing on I²C can read its state back. So:
/// - after a bus error the owner calls `reinitialize()`: the next flush steps send the init
///   table, then every page, then display on (each step still one bounded piece);
/// - `refreshIfDue(atMs:)` re-asserts the state commands (the init table without its display
///   off, with the current contrast and display on/off) and rewrites the whole frame every
///   `refreshPeriodMs`, so a reset nobody saw is repaired within that period plus one call
///   interval.
public struct DisplayDriver: Sendable {
    /// Pages written per `flushStep` call.
    public static let pagesPerFlushStepMax = 1
    /// Period of the state re-assertion and full rewrite that repair a controller that lost
    /// power without a bus error. Called at least once a second (the board's 1 Hz tick), a reset
    /// is back on screen within this period + 1 s + the 8 flush steps: under 5 s.
    public static let refreshPeriodMs: Int64 = 3_000
    /// Flush steps that send commands rather than pages: init table, state, display on.
    static let commandStepsMax = 3

    public let panel: PanelConfiguration
    public private(set) var statistics = DisplayStatistics()
    /// Whether the display is meant to be on (set by `start` and `setDisplayOn`).
    public private(set) var isOn = false
    public private(set) var contrast: UInt8

    /// The newest frame presented.
    private var target: [UInt8]
    /// What the controller's memory holds, for pages in `shownValid`.
    private var shown: [UInt8]
    private var shownValid: UInt8 = 0
    /// Pages whose target differs from the controller (or is unknown there).
    public private(set) var pendingPages: UInt8
    /// Round-robin cursor so a page that changes every frame cannot starve the others.
    private var nextPage = 0
    private var scratch: [UInt8]

    /// The init table flattened (one transaction per row), built once; `initRowEnds[i]` is the
    /// end of row i; the contrast argument sits at `initContrastIndex`.
    private let initBytes: [UInt8]
    private let initRowEnds: [Int]
    private let initContrastIndex: Int
    /// The state commands: the init table without its display off (one transaction; the display
    /// on/off byte is appended when sent), contrast argument at `stateContrastIndex`.
    private let stateBytes: [UInt8]
    private let stateContrastIndex: Int

    /// Commands still to send, in this order, before (init, state) or after (display on) the pages.
    public private(set) var reinitPending = false
    public private(set) var statePending = false
    public private(set) var displayOnPending = false
    private var nextRefreshAtMs: Int64?
    /// Times the init table was resent (`reinitialize`) and the state re-asserted (refresh).
    public private(set) var reinitializations = 0
    public private(set) var refreshes = 0

    public init(panel: PanelConfiguration) {
        self.panel = panel
        contrast = panel.contrastActive
        target = Array(repeating: 0, count: panel.width * panel.pageCount)
        shown = target
        pendingPages = UInt8(truncatingIfNeeded: (1 << panel.pageCount) - 1)
        scratch = Array(repeating: 0, count: DisplayBusLimits.transactionBytesMax)
        var bytes: [UInt8] = [], ends: [Int] = [], state: [UInt8] = []
        var contrastAt = -1, stateContrastAt = -1
        for row in panel.initSequence {
            precondition(row.count <= DisplayBusLimits.transactionBytesMax)
            if row[0] == OLEDCommand.contrast {
                contrastAt = bytes.count + 1
                stateContrastAt = state.count + 1
            }
            bytes += row
            ends.append(bytes.count)
            if row != [OLEDCommand.displayOff] { state += row }
        }
        precondition(contrastAt > 0 && state.count < DisplayBusLimits.transactionBytesMax, "the state commands fit one transaction")
        initBytes = bytes
        initRowEnds = ends
        initContrastIndex = contrastAt
        stateBytes = state
        stateContrastIndex = stateContrastAt
    }

    /// Whether flush steps are waiting: changed pages, or recovery commands.
    public var hasPendingPages: Bool { pendingPages != 0 || reinitPending || statePending || displayOnPending }
    private var allPages: UInt8 { UInt8(truncatingIfNeeded: (1 << panel.pageCount) - 1) }

    /// Sends the init table (display off), clears the memory, then switches the display on.
    /// Takes one full frame of bus time (~25 ms at 400 kHz): call it at start-up only; after a
    /// bus error use `reinitialize()`, which spreads the same work over flush steps.
    public mutating func start<B: DisplayLink>(bus: inout B) throws(DisplayBusError) {
        isOn = true
        contrast = panel.contrastActive
        reinitPending = false
        statePending = false
        displayOnPending = false
        try sendInitTable(bus: &bus)
        invalidate()
        try flushAll(bus: &bus)
        try setDisplayOn(true, bus: &bus)
    }

    /// Forgets what the controller holds (the next flushes resend every page in full) without
    /// touching its configuration.
    public mutating func invalidate() {
        shownValid = 0
        pendingPages = allPages
    }

    /// After a bus error (the controller may have been reset): the next flush steps send the
    /// init table, every page in full, then display on if it is meant to be on.
    public mutating func reinitialize() {
        reinitPending = true
        statePending = false
        displayOnPending = isOn
        invalidate()
    }

    /// Queues the state commands and a full rewrite when `refreshPeriodMs` has passed since the
    /// last one (on a fixed grid from the first call, so call jitter does not add up). Returns
    /// whether it queued one. Time comes in as a value.
    @discardableResult
    public mutating func refreshIfDue(atMs nowMs: Int64) -> Bool {
        guard let due = nextRefreshAtMs else {
            nextRefreshAtMs = nowMs + Self.refreshPeriodMs
            return false
        }
        guard nowMs >= due else { return false }
        var next = due + Self.refreshPeriodMs
        if next <= nowMs { next = nowMs + Self.refreshPeriodMs }  // after a long pause: restart the grid
        nextRefreshAtMs = next
        if !reinitPending { statePending = true }
        invalidate()
        refreshes += 1
        return true
    }

    /// Takes the framebuffer's dirty pages as the newest frame.
    public mutating func present(_ framebuffer: inout Framebuffer) {
        precondition(framebuffer.width == panel.width && framebuffer.height == panel.height, "framebuffer does not match the panel")
        let dirty = framebuffer.takeDirtyPages()
        let width = panel.width
        for page in 0..<panel.pageCount where dirty & (1 << UInt64(page)) != 0 {
            var differs = shownValid & (1 << UInt8(page)) == 0
            for x in page * width..<(page + 1) * width {
                let b = framebuffer.bytes[x]
                target[x] = b
                if b != shown[x] { differs = true }
            }
            if differs { pendingPages |= 1 << UInt8(page) } else { pendingPages &= ~(1 << UInt8(page)) }
        }
    }

    /// Sends at most one pending page (only its changed columns), or one recovery command step
    /// (the init table, the state commands, display on). Returns the number of pages written
    /// (0 or 1); loop while `hasPendingPages`.
    @discardableResult
    public mutating func flushStep<B: DisplayLink>(bus: inout B) throws(DisplayBusError) -> Int {
        if reinitPending {
            try sendInitTable(bus: &bus)
            reinitPending = false
            reinitializations += 1
            return 0
        }
        if statePending {
            for i in 0..<stateBytes.count { scratch[i] = stateBytes[i] }
            scratch[stateContrastIndex] = contrast
            scratch[stateBytes.count] = isOn ? OLEDCommand.displayOn : OLEDCommand.displayOff
            try transmit(.commands, count: stateBytes.count + 1, bus: &bus)
            statePending = false
            return 0
        }
        guard pendingPages != 0 else {
            if displayOnPending {
                try setDisplayOn(true, bus: &bus)
                displayOnPending = false
            }
            return 0
        }
        var page = nextPage
        for _ in 0..<panel.pageCount {
            if pendingPages & (1 << UInt8(page)) != 0 { break }
            page = (page + 1) % panel.pageCount
        }
        nextPage = (page + 1) % panel.pageCount
        let bit: UInt8 = 1 << UInt8(page)
        let base = page * panel.width
        var first = 0, last = panel.width - 1
        if shownValid & bit != 0 {
            while first < panel.width && target[base + first] == shown[base + first] { first += 1 }
            while last > first && target[base + last] == shown[base + last] { last -= 1 }
        }
        pendingPages &= ~bit
        guard first < panel.width else { return 0 }
        shownValid &= ~bit  // unknown until the write completes
        do {
            try writeWindow(page: page, firstColumn: first, lastColumn: last, bus: &bus)
        } catch {
            pendingPages |= bit  // resent in full by a later step
            throw error
        }
        for x in base + first...base + last { shown[x] = target[x] }
        shownValid |= bit
        statistics.pageWrites += 1
        return 1
    }

    /// Sends everything pending (tests, start-up, the simulator's screenshots).
    public mutating func flushAll<B: DisplayLink>(bus: inout B) throws(DisplayBusError) {
        for _ in 0..<panel.pageCount + Self.commandStepsMax where hasPendingPages { try flushStep(bus: &bus) }
    }

    public mutating func setContrast(_ level: UInt8, bus: inout some DisplayLink) throws(DisplayBusError) {
        try sendCommands([OLEDCommand.contrast, level], bus: &bus)
        contrast = level
    }

    /// Dims the panel while idle (contrastIdle) and restores it when riding (contrastActive).
    public mutating func setDimmed(_ dimmed: Bool, bus: inout some DisplayLink) throws(DisplayBusError) {
        let level = dimmed ? panel.contrastIdle : panel.contrastActive
        if level != contrast { try setContrast(level, bus: &bus) }
    }

    /// Display on or off (sleep: memory is kept, the panel draws ~10 µA).
    public mutating func setDisplayOn(_ on: Bool, bus: inout some DisplayLink) throws(DisplayBusError) {
        try sendCommands([on ? OLEDCommand.displayOn : OLEDCommand.displayOff], bus: &bus)
        isOn = on
        displayOnPending = false
    }

    // MARK: Wire

    private mutating func writeWindow<B: DisplayLink>(page: Int, firstColumn: Int, lastColumn: Int, bus: inout B) throws(DisplayBusError) {
        // Window commands written straight into the scratch buffer: no allocation per page.
        let commandCount: Int
        switch panel.controller {
        case .ssd1306:
            scratch[0] = OLEDCommand.columnAddress
            scratch[1] = UInt8(firstColumn)
            scratch[2] = UInt8(lastColumn)
            scratch[3] = OLEDCommand.pageAddress
            scratch[4] = UInt8(page)
            scratch[5] = UInt8(page)
            commandCount = 6
        case .sh1106:
            let column = firstColumn + panel.controller.columnOffset
            scratch[0] = OLEDCommand.pageStart | UInt8(page)
            scratch[1] = OLEDCommand.setLowerColumn | UInt8(column & 0x0F)
            scratch[2] = OLEDCommand.setHigherColumn | UInt8(column >> 4)
            commandCount = 3
        }
        try transmit(.commands, count: commandCount, bus: &bus)
        var x = page * panel.width + firstColumn
        let end = page * panel.width + lastColumn + 1
        while x < end {
            let n = min(DisplayBusLimits.transactionBytesMax, bus.transactionBytesMax, end - x)
            for i in 0..<n { scratch[i] = target[x + i] }
            try transmit(.data, count: n, bus: &bus)
            statistics.dataBytes += n
            x += n
        }
    }

    /// The init table, one transaction per row, with the current contrast.
    private mutating func sendInitTable<B: DisplayLink>(bus: inout B) throws(DisplayBusError) {
        var start = 0
        for end in initRowEnds {
            for i in start..<end { scratch[i - start] = i == initContrastIndex ? contrast : initBytes[i] }
            try transmit(.commands, count: end - start, bus: &bus)
            start = end
        }
    }

    /// Sends a short command list (contrast, on/off: not on the per-frame path).
    private mutating func sendCommands<B: DisplayLink>(_ bytes: [UInt8], bus: inout B) throws(DisplayBusError) {
        precondition(bytes.count <= DisplayBusLimits.transactionBytesMax)
        for i in 0..<bytes.count { scratch[i] = bytes[i] }
        try transmit(.commands, count: bytes.count, bus: &bus)
    }

    private mutating func transmit<B: DisplayLink>(_ transfer: LinkTransfer, count: Int, bus: inout B) throws(DisplayBusError) {
        let result: Result<Void, DisplayBusError> = scratch.withUnsafeBufferPointer { all in
            do throws(DisplayBusError) {
                try bus.send(transfer, UnsafeBufferPointer(rebasing: all[0..<count]))
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try result.get()
        statistics.transactions += 1
        statistics.payloadBytes += count
    }
}
