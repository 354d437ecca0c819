import AppCore
import Control
import Device
import RideModel

/// A headless simulation script. Text, one instruction per line (see docs/simulator.md):
///
///     # comment
///     seed 7
///     duration 1h30m
///     sensors hr power speed cadence
///     at 0s press start
///     at 20m hold start 2s
///     at 10m command lap
///     at 11m command target hr 3
///     at 12m marker water 250
///     at 5m dropout hr 30s
///     at 30m bridge-restart 5s
///     at 40m crash
///     at 45m power-cut
///     at 50m disk-full 2m
///     at 55m screenshot climb
///     at 12m car 70kmh               (with `sensors … radar`)
///     at 14m radar-off 1m
///
///     at 20m detour 300m 2m        (with a course: ride 300 m beside it for 2 min)
///     at 0s ride-backwards         (with a course: from its end to its start)
///     battery 40% 20%/h          # the unit's battery: its charge at the start, its drain
///     at 1h charger on           # (docs/power.md); charger off; battery 12% (set the charge)
///     at 1h30m power-on          # the unit is switched on again after it powered itself off
///     at 2h hold power 3s        # the power button held
///
/// Times are offsets on the simulated clock from the start of the simulation.
public struct Scenario: Sendable, Hashable {
    public enum Sensor: String, Sendable, Hashable, CaseIterable {
        case hr, power, speed, cadence
        /// The board's GPS (through gpsd) and barometer (docs/gps.md).
        case gps, baro
        /// An ANT+ rear radar (`car`, `radar-off`).
        case radar

        /// The bridge's four sensors: a scenario's sensors unless it names them.
        public static let radio: Set<Sensor> = [.hr, .power, .speed, .cadence]
    }

    public enum Action: Sendable, Hashable {
        case press(Button)
        case hold(Button, ms: Int64)
        case command(ControlCommand)
        case dropout(Sensor, ms: Int64)
        case bridgeRestart(ms: Int64)
        /// The process dies (SIGKILL): everything in memory is lost; the journal survives.
        case crash
        /// Power is cut: the simulated flash also loses what was not synced.
        case powerCut
        /// The GPS receiver loses its fix (it reports "no fix") for this long.
        case gpsLost(ms: Int64)
        case diskFull(ms: Int64)
        case screenshot(String)
        /// A car comes up behind at this speed (m/s); the radar sees it.
        case car(speedMps: Double)
        /// The radar is switched off (its shutdown page) for this long.
        case radarOff(ms: Int64)
        /// The rider leaves the course (docs/navigation.md): out to `offsetM` beside it and back,
        /// over `ms`.
        case detour(offsetM: Double, ms: Int64)
        /// The rider rides the course from its end to its start.
        case rideBackwards
        /// `course load NAME` from the control socket (the course given with `--course`).
        case courseLoad(String)
        /// The unit's battery: the charger plugged in or out, the charge set (docs/power.md).
        case charger(Bool)
        case batteryLevel(Double)
        /// The rider switches the unit on again (after it powered itself off).
        case powerOn

        /// A press or a hold of one of the unit's buttons.
        public var isButton: Bool {
            switch self {
            case .press, .hold: true
            default: false
            }
        }
    }

    /// The unit's battery (`battery START% DRAIN%/h`): nil, no battery gauge.
    public struct BatteryPack: Sendable, Hashable {
        public var startPercent: Double
        public var drainPercentPerHour: Double
        public init(startPercent: Double, drainPercentPerHour: Double) {
            self.startPercent = startPercent
            self.drainPercentPerHour = drainPercentPerHour
        }
    }

    public struct Step: Sendable, Hashable {
        public var atMs: Int64
        public var action: Action
        public var line: Int
    }

    public var seed: UInt64?
    public var durationMs: Int64
    public var sensors: Set<Sensor>
    public var battery: BatteryPack? = nil
    /// In time order (file order for equal times).
    public var steps: [Step]

    public init(seed: UInt64? = nil, durationMs: Int64, sensors: Set<Sensor> = Sensor.radio, steps: [Step] = []) {
        self.seed = seed
        self.durationMs = durationMs
        self.sensors = sensors
        self.steps = steps
    }

    /// A mistake in a scenario file, with its line.
    public struct ParseError: Error, Sendable, Hashable, CustomStringConvertible {
        public var line: Int
        public var message: String
        public var description: String { "scenario line \(line): \(message)" }
    }

    /// Parses "1h2m3s", "90s", "1500ms", "2m".
    public static func parseDuration(_ text: Substring) -> Int64? {
        var total: Int64 = 0
        var number: Int64 = 0
        var haveNumber = false
        var i = text.startIndex
        guard !text.isEmpty else { return nil }
        while i < text.endIndex {
            let c = text[i]
            if let d = c.wholeNumberValue, c.isASCII {
                number = number * 10 + Int64(d)
                haveNumber = true
                guard number < 1_000_000_000 else { return nil }
                i = text.index(after: i)
                continue
            }
            guard haveNumber else { return nil }
            let rest = text[i...]
            let unitMs: Int64
            if rest.hasPrefix("ms") { unitMs = 1; i = text.index(i, offsetBy: 2) }
            else if c == "h" { unitMs = 3_600_000; i = text.index(after: i) }
            else if c == "m" { unitMs = 60_000; i = text.index(after: i) }
            else if c == "s" { unitMs = 1_000; i = text.index(after: i) }
            else { return nil }
            total += number * unitMs
            number = 0
            haveNumber = false
        }
        guard !haveNumber else { return nil } // a bare number has no unit
        return total
    }

    static func button(_ word: Substring) -> Button? {
        switch word {
        case "start", "start_pause", "startpause": .startPause
        case "lap": .lap
        case "page": .page
        case "power": .power
        default: nil
        }
    }

    public static func parse(_ text: String) throws(ParseError) -> Scenario {
        var scenario = Scenario(durationMs: 3_600_000)
        var sawDuration = false
        var lineNumber = 0
        for rawLine in text.split(separator: "\n", omittingEmptySubsequences: false) {
            lineNumber += 1
            let noComment = rawLine.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let words = noComment.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" })
            guard let head = words.first else { continue }
            func fail(_ m: String) -> ParseError { ParseError(line: lineNumber, message: m) }
            func duration(_ i: Int, _ what: String) throws(ParseError) -> Int64 {
                guard i < words.count else { throw fail("missing \(what) (e.g. 30s, 2m, 1h)") }
                guard let d = parseDuration(words[i]) else { throw fail("'\(words[i])' is not a duration (e.g. 1500ms, 30s, 2m, 1h30m)") }
                return d
            }
            switch head {
            case "seed":
                guard words.count == 2, let s = UInt64(words[1]) else { throw fail("seed takes one whole number") }
                scenario.seed = s
            case "duration":
                guard words.count == 2 else { throw fail("duration takes one value, e.g. duration 1h") }
                scenario.durationMs = try duration(1, "duration")
                sawDuration = true
            case "battery":
                guard words.count == 3, words[1].hasSuffix("%"), let start = Double(words[1].dropLast()), (0...100).contains(start),
                      words[2].hasSuffix("%/h"), let drain = Double(words[2].dropLast(3)), drain >= 0, drain <= 1_000 else {
                    throw fail("battery takes the charge at the start and its drain, e.g. battery 40% 20%/h")
                }
                scenario.battery = BatteryPack(startPercent: start, drainPercentPerHour: drain)
            case "sensors":
                var set = Set<Sensor>()
                for w in words.dropFirst() {
                    guard let s = Sensor(rawValue: String(w)) else { throw fail("unknown sensor '\(w)'; use hr, power, speed, cadence, gps, baro, radar") }
                    set.insert(s)
                }
                scenario.sensors = set
            case "at":
                let at = try duration(1, "time")
                guard words.count >= 3 else { throw fail("'at TIME' needs an action: press, hold, command, marker, dropout, bridge-restart, gps-lost, crash, power-cut, disk-full, detour, ride-backwards, screenshot, car, radar-off, charger, battery, power-on") }
                let action: Action
                switch words[2] {
                case "press":
                    guard words.count == 4, let b = button(words[3]) else { throw fail("press takes a button: start, lap, page or power") }
                    action = .press(b)
                case "hold":
                    guard words.count == 5, let b = button(words[3]) else { throw fail("hold takes a button and a duration, e.g. hold start 2s") }
                    action = .hold(b, ms: try duration(4, "hold time"))
                case "command":
                    // Any control-socket request that acts on the ride (docs/board.md): start,
                    // pause, lap, end, marker water 250, target hr 3, autolap 5km, ...
                    guard words.count >= 4 else { throw fail("command takes a control request, e.g. command lap, command target hr 3") }
                    let line = words[3...].joined(separator: " ")
                    switch ControlProtocol.parse(line) {
                    case .success(.command(let c)): action = .command(c)
                    case .success(.courseLoad(let name)): action = .courseLoad(name)
                    case .success: throw fail("'\(line)' does not act on the ride; status and help are for the control socket")
                    case .failure(let e): throw fail("\(e)")
                    }
                case "marker":
                    guard words.count >= 4 else { throw fail("marker takes a kind (water, food, note, segment) and an optional value") }
                    let kind: RideEvent.MarkerKind
                    switch words[3] {
                    case "water": kind = .water
                    case "food": kind = .food
                    case "note": kind = .note
                    case "segment": kind = .segment
                    default: throw fail("unknown marker '\(words[3])'; use water, food, note, segment")
                    }
                    var value: Int64 = 0
                    if words.count >= 5 {
                        guard let v = Int64(words[4]), v >= 0 else { throw fail("marker value must be a whole number ≥ 0") }
                        value = v
                    }
                    action = .command(.marker(kind, value: value))
                case "dropout":
                    guard words.count == 5, let s = Sensor(rawValue: String(words[3])) else { throw fail("dropout takes a sensor and a duration, e.g. dropout hr 30s") }
                    action = .dropout(s, ms: try duration(4, "dropout length"))
                case "bridge-restart":
                    action = .bridgeRestart(ms: words.count >= 4 ? try duration(3, "outage") : 2_000)
                case "gps-lost":
                    guard words.count == 4 else { throw fail("gps-lost takes a duration, e.g. gps-lost 30s") }
                    action = .gpsLost(ms: try duration(3, "how long the fix is lost"))
                case "detour":
                    guard words.count == 5, words[3].hasSuffix("m"), let m = Double(words[3].dropLast()), m > 0, m <= 50_000 else {
                        throw fail("detour takes how far from the course and for how long, e.g. detour 300m 2m")
                    }
                    action = .detour(offsetM: m, ms: try duration(4, "detour length"))
                case "ride-backwards":
                    guard words.count == 3 else { throw fail("ride-backwards takes nothing") }
                    action = .rideBackwards
                case "crash": action = .crash
                case "power-cut": action = .powerCut
                case "disk-full":
                    guard words.count == 4 else { throw fail("disk-full takes a duration, e.g. disk-full 2m") }
                    action = .diskFull(ms: try duration(3, "disk-full length"))
                case "car":
                    // "car 70kmh" (or "car 70"): the car's speed in km/h.
                    guard words.count == 4 else { throw fail("car takes a speed, e.g. car 70kmh") }
                    let text = words[3].hasSuffix("kmh") ? words[3].dropLast(3) : words[3]
                    guard let kmh = Double(text), kmh > 0, kmh <= 250 else { throw fail("'\(words[3])' is not a car's speed (e.g. 70kmh, at most 250)") }
                    guard scenario.sensors.contains(.radar) else { throw fail("car needs a radar: add radar to the sensors line (before this step)") }
                    action = .car(speedMps: kmh / 3.6)
                case "radar-off":
                    guard words.count == 4 else { throw fail("radar-off takes a duration, e.g. radar-off 2m") }
                    action = .radarOff(ms: try duration(3, "how long the radar is off"))
                case "charger":
                    guard words.count == 4, words[3] == "on" || words[3] == "off" else { throw fail("charger takes on or off") }
                    action = .charger(words[3] == "on")
                case "battery":
                    guard words.count == 4, words[3].hasSuffix("%"), let p = Double(words[3].dropLast()), (0...100).contains(p) else {
                        throw fail("battery takes a charge, e.g. at 1h battery 12%")
                    }
                    action = .batteryLevel(p)
                case "power-on": action = .powerOn
                case "screenshot":
                    guard words.count == 4 else { throw fail("screenshot takes a name") }
                    guard words[3].allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
                        throw fail("screenshot names may use letters, digits, - and _")
                    }
                    action = .screenshot(String(words[3]))
                default:
                    throw fail("unknown action '\(words[2])'")
                }
                scenario.steps.append(Step(atMs: at, action: action, line: lineNumber))
            default:
                throw fail("unknown instruction '\(head)'; use seed, duration, sensors, battery or at")
            }
        }
        if !sawDuration, let last = scenario.steps.map(\.atMs).max() {
            scenario.durationMs = max(scenario.durationMs, last + 60_000)
        }
        if let late = scenario.steps.first(where: { $0.atMs > scenario.durationMs }) {
            throw ParseError(line: late.line, message: "this step is after the end of the scenario (duration)")
        }
        scenario.steps = scenario.steps.enumerated().sorted { ($0.element.atMs, $0.offset) < ($1.element.atMs, $1.offset) }.map(\.element)
        return scenario
    }
}
