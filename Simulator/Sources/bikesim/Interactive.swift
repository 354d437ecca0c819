import AppCore
import Device
import RideModel
import Glibc
import Simulation

/// The interactive simulator: the demo ride in the terminal, keys for the buttons.
struct Interactive {
    static let help = [
        "keys: s start/pause   l lap   p page   S long-press start (end while paused)",
        "      L long-press lap (discard on the summary)   w log 250 ml water",
        "      c crash (and recover)   x power cut   d HR dropout 20 s   b bridge restart",
        "      + faster   - slower   ? help   q quit",
    ]

    let sim: HeadlessRun
    let terminal: Terminal
    var speed: Double
    /// The panel as text lines in a rendering.
    let drawScreen: (TerminalRendering) -> [String]
    /// `--render`: always this rendering; nil picks the densest that fits (and re-picks on resize).
    let forcedRendering: TerminalRendering?
    /// Called after each draw with the rendering used (nil: the terminal is too small).
    var onDraw: ((TerminalRendering?) -> Void)?
    var showHelp = false
    var lastDrawMs: Int64 = -1_000
    var quit = false
    /// The terminal's size as last read (nil until the first draw).
    var size: (columns: Int, rows: Int)?
    var clearBeforeDraw = true
    /// The panel's size in pixels.
    let panel: (width: Int, height: Int)

    init(sim: HeadlessRun, terminal: Terminal, speed: Double, rendering: TerminalRendering? = nil,
         panel: (width: Int, height: Int) = (128, 64), drawScreen: @escaping (TerminalRendering) -> [String]) {
        self.sim = sim
        self.terminal = terminal
        self.speed = speed
        self.forcedRendering = rendering
        self.panel = panel
        self.drawScreen = drawScreen
    }

    /// Runs until the scenario ends or the rider quits.
    mutating func run() {
        terminal.enterRaw()
        defer { terminal.restore() }
        var realStart = Clock.monotonicMs()
        var simStart: Int64 = 0
        while !quit {
            guard let next = sim.nextEventTime(), next <= sim.scenario.durationMs else { break }
            // Wait (reading keys) until the next event is due at the chosen speed.
            while !quit {
                let due = realStart + Int64(Double(next - simStart) / speed)
                let waitMs = due - Clock.monotonicMs()
                redrawIfDue()
                if waitMs <= 0 { break }
                let keys = terminal.readKeys(timeoutMs: Int32(min(waitMs, 50)))
                for k in keys {
                    if let newSpeed = handle(key: k) {
                        // Keep the simulated time continuous when the speed changes.
                        simStart = sim.nowMs
                        realStart = Clock.monotonicMs()
                        speed = newSpeed
                    }
                }
                if !keys.isEmpty { break }
            }
            sim.advance(to: max(sim.nowMs, min(next, simStart + Int64(Double(Clock.monotonicMs() - realStart) * speed))))
        }
        draw()
    }

    /// Returns a new speed when the key changed it.
    /// A button key gives the rider the buttons: the scenario's own presses stop
    /// (`HeadlessRun.scriptedButtons`).
    mutating func handle(key: UInt8) -> Double? {
        switch key {
        case UInt8(ascii: "s"): press(.press(.startPause))
        case UInt8(ascii: "l"): press(.press(.lap))
        case UInt8(ascii: "p"): press(.press(.page))
        case UInt8(ascii: "S"): press(.hold(.startPause, ms: 2_000))
        case UInt8(ascii: "L"): press(.hold(.lap, ms: 2_000))
        case UInt8(ascii: "w"): sim.inject(.command(.marker(.water, value: 250)))
        case UInt8(ascii: "c"): sim.inject(.crash)
        case UInt8(ascii: "x"): sim.inject(.powerCut)
        case UInt8(ascii: "d"): sim.inject(.dropout(.hr, ms: 20_000))
        case UInt8(ascii: "b"): sim.inject(.bridgeRestart(ms: 5_000))
        case UInt8(ascii: "+"): return min(speed * 2, 256)
        case UInt8(ascii: "-"): return max(speed / 2, 0.25)
        case UInt8(ascii: "?"): showHelp.toggle()
        case UInt8(ascii: "q"), 3, 4: quit = true
        default: break
        }
        lastDrawMs = -1_000
        return nil
    }

    mutating func press(_ button: Scenario.Action) {
        precondition(button.isButton, "press(_:) is for the buttons")
        sim.scriptedButtons = false
        sim.inject(button)
    }

    mutating func redrawIfDue() {
        let now = Clock.monotonicMs()
        guard now - lastDrawMs >= 100 || terminalResized != 0 else { return }
        lastDrawMs = now
        draw()
    }

    /// The terminal's size: TIOCGWINSZ, else $COLUMNS/$LINES; nil when nothing says.
    static func terminalSize() -> (columns: Int, rows: Int)? {
        if let s = Terminal.size() { return s }
        if let c = getenv("COLUMNS").flatMap({ Int(String(cString: $0)) }), let r = getenv("LINES").flatMap({ Int(String(cString: $0)) }),
           c > 0, r > 0 { return (c, r) }
        return nil
    }

    mutating func draw() {
        if terminalResized != 0 || size == nil {
            terminalResized = 0
            size = Self.terminalSize() ?? (Int.max, Int.max)
            clearBeforeDraw = true
        }
        let (columns, rows) = size!
        let clear = clearBeforeDraw
        clearBeforeDraw = false
        guard let rendering = forcedRendering ?? TerminalRendering.choose(columns: columns, rows: rows, width: panel.width, height: panel.height) else {
            // Too small for any rendering: say what it needs instead of a wrapped mess.
            terminal.draw(Self.tooSmall(columns: columns, rows: rows, panel: panel), columns: columns, rows: rows, clearFirst: clear)
            onDraw?(nil)
            return
        }
        let core = sim.runtime.core
        var lines = drawScreen(rendering)
        let sensors = SensorRole.allCases.filter { core.screen.sensor($0) != .notConfigured }
            .map { "\($0):\(Self.stateWord(core.screen.sensor($0)))" }.joined(separator: " ")
        let device = sim.isDeviceDown ? "DEVICE RESTARTING" : "\(core.state)"
        lines.append("sim \(TextScreen.clock(sim.nowMs)) ×\(TextScreen.format(speed, decimals: speed < 1 ? 2 : 0))  \(device)  \(sensors)  journal \(core.screen.storage)")
        if rendering.isScaled {
            // Said on the screen, not only in the docs: this picture is not every pixel.
            let full = TerminalRendering.braille.terminalSize(width: panel.width, height: panel.height)
            lines.append("\(panel.width)×\(panel.height) panel scaled 1:2 (a dot per 2×2 pixels); every pixel in a \(full.columns)×\(full.rows) window")
        }
        if showHelp {
            lines.append("")
            lines += Self.help
        } else if core.state == .idle {
            // The first screen: how to start riding (the demo also presses start by itself, until
            // the rider's first button key).
            lines.append("press s to start the ride   ? help   q quit")
        } else {
            lines.append("? help   q quit")
        }
        terminal.draw(lines, columns: columns, rows: rows, clearFirst: clear)
        onDraw?(rendering)
    }

    /// What a too-small terminal shows: its size, what is needed, and the ways out.
    static func tooSmall(columns: Int, rows: Int, panel: (width: Int, height: Int) = (128, 64)) -> [String] {
        let words = [
            "bikesim: this terminal is \(columns)×\(rows);", "the \(panel.width)×\(panel.height) panel needs at least",
            TerminalRendering.requirements(width: panel.width, height: panel.height) + ".", "Enlarge the window (or the font smaller);",
            "it redraws at once.", "q quits."
        ]
        // Wrapped to the width by hand, so even a tiny terminal shows whole words.
        var lines: [String] = []
        var line = ""
        for w in words.joined(separator: " ").split(separator: " ") {
            if !line.isEmpty && line.count + 1 + w.count > columns { lines.append(line); line = "" }
            line += (line.isEmpty ? "" : " ") + w
        }
        if !line.isEmpty { lines.append(line) }
        return lines
    }

    static func stateWord(_ s: SensorState) -> String {
        switch s {
        case .connected: "ok"
        case .notConfigured: "off"
        default: "\(s)"
        }
    }
}
