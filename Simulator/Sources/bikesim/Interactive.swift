import AppCore
import Device
import RideModel
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
    let drawScreen: (ScreenModel) -> [String]
    var showHelp = false
    var lastDrawMs: Int64 = -1_000
    var quit = false

    init(sim: HeadlessRun, terminal: Terminal, speed: Double, drawScreen: @escaping (ScreenModel) -> [String]) {
        self.sim = sim
        self.terminal = terminal
        self.speed = speed
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
    mutating func handle(key: UInt8) -> Double? {
        switch key {
        case UInt8(ascii: "s"): sim.inject(.press(.startPause))
        case UInt8(ascii: "l"): sim.inject(.press(.lap))
        case UInt8(ascii: "p"): sim.inject(.press(.page))
        case UInt8(ascii: "S"): sim.inject(.hold(.startPause, ms: 2_000))
        case UInt8(ascii: "L"): sim.inject(.hold(.lap, ms: 2_000))
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

    mutating func redrawIfDue() {
        let now = Clock.monotonicMs()
        guard now - lastDrawMs >= 100 else { return }
        lastDrawMs = now
        draw()
    }

    func draw() {
        let core = sim.runtime.core
        var lines = drawScreen(core.screen)
        let sensors = SensorRole.allCases.map { "\($0)=\(core.screen.sensor($0))" }.joined(separator: " ")
        let device = sim.isDeviceDown ? "DEVICE RESTARTING" : "\(core.state)"
        lines.append("sim \(TextScreen.clock(sim.nowMs)) ×\(TextScreen.format(speed, decimals: speed < 1 ? 2 : 0))  \(device)  \(sensors)  journal \(core.screen.storage)")
        lines.append(showHelp ? "" : "? help   q quit")
        if showHelp { lines += Self.help }
        terminal.draw(lines)
    }
}
