import AppCore
import RideModel
import Training

/// The control socket's line protocol. A request is one line: a command word and, for
/// `marker`, a kind and a value. Every reply is one line that starts with `ok ` or `error `:
///
///     start | pause | resume | lap | end | discard | dismiss | page
///     marker [generic|water|food|note|segment] [VALUE]   (water: ml, food: kcal)
///     target hr|power ZONE|off      (ZONE as shown on the screen: 2 or z2)
///     zones hr|power B1,B2,...|preferred   (custom zones for the next ride only)
///     autopause on|off              autolap off|5km|10min
///     sensors scan|stop|found|pair|forget …   (`SensorsControl`)
///     course list | course load NAME | course clear | course   (docs/navigation.md)
///     status            → ok {JSON StatusReport}
///     help              → ok the command list
///
///     ok running: ride paused          error idle: there is no ride to pause
///
/// Parsing and formatting are pure; the runtime feeds the parsed command to `AppCore`, takes
/// the `CommandReply` effect and formats it here.
public enum ControlProtocol {
    /// A parsed request.
    public enum Request: Sendable, Hashable {
        case command(ControlCommand)
        case status
        case help
        /// Finding and pairing sensors (the board carries it out).
        case sensors(SensorsControl)
        /// The courses on the card (the runtime reads them: `course list`).
        case courseList
        /// A course read from the card and loaded (`course load NAME`; the name as typed).
        case courseLoad(String)
    }

    /// Why a line is not a request.
    public enum ParseError: Error, Sendable, Hashable, CustomStringConvertible {
        case empty
        case notText
        case unknownCommand(String)
        case unexpectedArgument(command: String, argument: String)
        case unknownMarkerKind(String)
        case badMarkerValue(String)
        case badArguments(command: String, usage: String)

        public var description: String {
            switch self {
            case .empty: "empty line; send one of: \(ControlProtocol.commandWords)"
            case .notText: "the line has control characters or invalid UTF-8; send plain text commands"
            case .unknownCommand(let w): "unknown command '\(ControlProtocol.clip(w))'; send one of: \(ControlProtocol.commandWords)"
            case .unexpectedArgument(let c, let a): "'\(c)' takes no argument (got '\(ControlProtocol.clip(a))')"
            case .unknownMarkerKind(let k): "unknown marker kind '\(ControlProtocol.clip(k))'; use generic, water, food, note or segment"
            case .badMarkerValue(let v): "marker value '\(ControlProtocol.clip(v))' is not a whole number in 0...\(ControlProtocol.markerValueMax)"
            case .badArguments(let c, let usage): "bad arguments for '\(c)'; use: \(usage)"
            }
        }
    }

    public static let markerValueMax: Int64 = 1_000_000
    public static let commandWords = "start, pause, resume, lap, end, discard, dismiss, page, marker, target, zones, autopause, autolap, sensors, course, phone-time, status, help"

    static func clip(_ s: String) -> String { s.count > 32 ? String(s.prefix(32)) + "…" : s }

    /// Parses one request line (without its newline). Words are separated by spaces or tabs;
    /// case does not matter.
    public static func parse(_ line: String) -> Result<Request, ParseError> {
        for scalar in line.unicodeScalars where scalar.value < 0x20 && scalar != "\t" || scalar.value == 0x7F || scalar == "\u{FFFD}" {
            return .failure(.notText)
        }
        let typed = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
        if typed.first?.lowercased() == "sensors" { return SensorsControl.parse(Array(typed.dropFirst())) }
        let words = typed.map { $0.lowercased() }
        guard let word = words.first else { return .failure(.empty) }
        let args = words.dropFirst()
        let simple: ControlCommand?
        switch word {
        case "start": simple = .start
        case "pause": simple = .pause
        case "resume": simple = .resume
        case "lap": simple = .lap
        case "end", "stop", "save": simple = .end
        case "discard": simple = .discard
        case "dismiss": simple = .dismiss
        case "page": simple = .nextPage
        case "status", "help":
            if let extra = args.first { return .failure(.unexpectedArgument(command: word, argument: extra)) }
            return .success(word == "status" ? .status : .help)
        case "marker": return parseMarker(Array(args))
        case "target": return parseTarget(Array(args))
        case "zones": return parseZones(Array(args))
        case "autopause", "auto-pause": return parseAutoPause(Array(args))
        case "autolap", "auto-lap": return parseAutoLap(Array(args))
        case "course": return parseCourse(line)
        case "phone-time": return parsePhoneTime(Array(args))
        default: return .failure(.unknownCommand(word))
        }
        if let extra = args.first { return .failure(.unexpectedArgument(command: word, argument: extra)) }
        return .success(.command(simple!))
    }

    static func quantity(_ word: String) -> Quantity? {
        switch word {
        case "hr", "heart_rate", "heartrate": .heartRate
        case "power", "pwr": .power
        default: nil
        }
    }

    /// `target hr|power N` (the zone number shown, Z1…) or `target hr|power off`.
    static func parseTarget(_ args: [String]) -> Result<Request, ParseError> {
        guard args.count == 2, let q = quantity(args[0]) else { return .failure(.badArguments(command: "target", usage: "target hr|power ZONE|off")) }
        if args[1] == "off" { return .success(.command(.clearTargetZone(q))) }
        let digits = args[1].hasPrefix("z") ? String(args[1].dropFirst()) : args[1]
        guard let n = Int(digits), (0...20).contains(n) else { return .failure(.badArguments(command: "target", usage: "target hr|power ZONE|off, e.g. target hr 2")) }
        return .success(.command(.setTargetZoneNumber(q, n)))
    }

    /// `zones hr|power B1,B2,...` (custom zones for the next ride, boundaries in bpm or W) or
    /// `zones hr|power preferred`.
    static func parseZones(_ args: [String]) -> Result<Request, ParseError> {
        let usage = "zones hr|power B1,B2,...|preferred, e.g. zones hr 120,140,155,170"
        guard args.count == 2, let q = quantity(args[0]) else { return .failure(.badArguments(command: "zones", usage: usage)) }
        if args[1] == "preferred" { return .success(.command(.clearRideZones(q))) }
        let parts = args[1].split(separator: ",", omittingEmptySubsequences: false)
        guard parts.count <= ZoneConfiguration.boundariesMax else { return .failure(.badArguments(command: "zones", usage: usage)) }
        var boundaries: [Double] = []
        for p in parts {
            guard let v = Double(p), v.isFinite else { return .failure(.badArguments(command: "zones", usage: usage)) }
            boundaries.append(v)
        }
        do {
            return .success(.command(.setRideZones(try ZoneConfiguration(quantity: q, boundaries: boundaries))))
        } catch {
            return .failure(.badArguments(command: "zones", usage: "\(error); \(usage)"))
        }
    }

    /// `course` (where the rider is on it), `course list`, `course load NAME` (the name keeps its
    /// case and spaces), `course clear`.
    static func parseCourse(_ line: String) -> Result<Request, ParseError> {
        let usage = "course | course list | course load NAME | course clear"
        let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
        let verb = words.count > 1 ? words[1].lowercased() : "status"
        let rest = words.dropFirst(2).joined(separator: " ")
        switch verb {
        case "status" where rest.isEmpty: return .success(.command(.courseStatus))
        case "list" where rest.isEmpty: return .success(.courseList)
        case "clear" where rest.isEmpty: return .success(.command(.clearCourse))
        case "load" where !rest.isEmpty: return .success(.courseLoad(rest))
        default: return .failure(.badArguments(command: "course", usage: usage))
        }
    }

    /// `autopause on|off` (on: the default 3 km/h for 5 s).
    static func parseAutoPause(_ args: [String]) -> Result<Request, ParseError> {
        switch args.first {
        case "on" where args.count == 1: return .success(.command(.setAutoPause(AutoPauseSettings())))
        case "off" where args.count == 1: return .success(.command(.setAutoPause(nil)))
        default: return .failure(.badArguments(command: "autopause", usage: "autopause on|off"))
        }
    }

    /// `autolap off`, `autolap 5km`, `autolap 10min`.
    static func parseAutoLap(_ args: [String]) -> Result<Request, ParseError> {
        guard args.count == 1 else { return .failure(.badArguments(command: "autolap", usage: "autolap off|5km|10min")) }
        let a = args[0]
        if a == "off" { return .success(.command(.setAutoLap(nil))) }
        if a.hasSuffix("km"), let km = Double(a.dropLast(2)), km > 0, km <= 1_000 {
            return .success(.command(.setAutoLap(AutoLapSettings(everyDistanceM: km * 1000))))
        }
        if a.hasSuffix("min"), let min = Int(a.dropLast(3)), min > 0, min <= 24 * 60 {
            return .success(.command(.setAutoLap(AutoLapSettings(everyTimerMs: Int64(min) * 60_000))))
        }
        return .failure(.badArguments(command: "autolap", usage: "autolap off|5km|10min"))
    }

    static func parseMarker(_ args: [String]) -> Result<Request, ParseError> {
        var kind = RideEvent.MarkerKind.generic
        var rest = args[...]
        if let first = rest.first, Int64(first) == nil {
            switch first {
            case "generic": kind = .generic
            case "water": kind = .water
            case "food": kind = .food
            case "note": kind = .note
            case "segment": kind = .segment
            default: return .failure(.unknownMarkerKind(first))
            }
            rest = rest.dropFirst()
        }
        var value: Int64 = 0
        if let v = rest.first {
            guard let n = Int64(v), (0...markerValueMax).contains(n) else { return .failure(.badMarkerValue(v)) }
            value = n
            rest = rest.dropFirst()
        }
        if let extra = rest.first { return .failure(.unexpectedArgument(command: "marker", argument: extra)) }
        return .success(.command(.marker(kind, value: value)))
    }

    /// The command word of a command (for `ctl` and logs).
    public static func word(_ command: ControlCommand) -> String {
        switch command {
        case .start: "start"
        case .pause: "pause"
        case .resume: "resume"
        case .lap: "lap"
        case .end: "end"
        case .discard: "discard"
        case .dismiss: "dismiss"
        case .nextPage: "page"
        case .marker(let kind, let value):
            "marker \(markerWord(kind)) \(value)"
        case .setRideZones(let z): "zones \(z.quantity.name)"
        case .clearRideZones(let q): "zones \(q.name) preferred"
        case .setTargetZone(let t): "target \(t.quantity.name) \(t.zone)"
        case .setTargetZoneNumber(let q, let n): "target \(q.name) \(n)"
        case .showPairingCode(let code): code.map { "pairing-code \($0)" } ?? "pairing-code clear"
        case .clearTargetZone(let q): "target \(q.name) off"
        case .setAutoPause(let a): a == nil ? "autopause off" : "autopause on"
        case .setAutoLap(let a): a == nil ? "autolap off" : "autolap on"
        case .loadCourse: "course load"
        case .clearCourse: "course clear"
        case .courseStatus: "course"
        case .phoneTime(let ms): "phone-time \(ms)"
        }
    }

    static func markerWord(_ k: RideEvent.MarkerKind) -> String {
        switch k {
        case .generic: "generic"
        case .water: "water"
        case .food: "food"
        case .note: "note"
        case .segment: "segment"
        }
    }

    // MARK: Replies

    /// The reply line for the app core's answer to a command.
    public static func format(_ reply: CommandReply) -> String {
        "\(reply.ok ? "ok" : "error") \(reply.state): \(oneLine(reply.message))"
    }

    /// The reply when the app core produced no reply effect (the command had nothing to say).
    public static func formatAccepted(_ command: ControlCommand, state: SessionState) -> String {
        "ok \(state): \(word(command))"
    }

    public static func format(_ error: ParseError) -> String { "error \(oneLine(error.description))" }

    public static func formatHelp() -> String { "ok commands: \(commandWords)" }

    public static func format(_ status: StatusReport) -> String { "ok " + status.json() }

    /// Ends an `ok` reply whose state change is not durable yet (docs/board.md, "Control from
    /// a shell"): `ok running: started (not yet durable: STORAGE ERROR: ...)`.
    public static let notDurableMarker = "(not yet durable: "

    /// Whether a reply says its change is not durable yet (and why), for clients.
    public static func notDurableReason(_ line: String) -> String? {
        let text = Array(line.utf8), marker = Array(notDurableMarker.utf8)
        guard text.count >= marker.count else { return nil }
        for start in stride(from: text.count - marker.count, through: 0, by: -1)
        where text[start..<start + marker.count].elementsEqual(marker) {
            var why = text[(start + marker.count)...]
            if why.last == UInt8(ascii: ")") { why.removeLast() }
            return String(decoding: why, as: UTF8.self)
        }
        return nil
    }

    /// Splits a reply line into its verdict and body (the `ctl` client).
    public static func parseReply(_ line: String) -> (ok: Bool, body: String) {
        if line.hasPrefix("ok ") { return (true, String(line.dropFirst(3))) }
        if line == "ok" { return (true, "") }
        if line.hasPrefix("error ") { return (false, String(line.dropFirst(6))) }
        return (false, line.isEmpty ? "no reply from bikecomputer (it closed the connection)" : "unexpected reply: \(clip(line))")
    }

    static func oneLine(_ s: String) -> String {
        String(s.map { $0 == "\n" || $0 == "\r" ? " " : $0 })
    }
}

/// What `status` reports; the runtime fills it from the app core, the sensors, the loop and
/// the journal.
public struct StatusReport: Sendable, Hashable {
    /// One loop handler's latency figures (from `EventLoopStats`).
    public struct HandlerLatency: Sendable, Hashable {
        public var name: String
        public var calls: UInt64
        public var windowMaxUs: UInt64
        public var windowP99Us: UInt64
        /// Time spent in the handler since the start, all calls: where the loop's time goes.
        public var totalUs: UInt64
        public init(name: String, calls: UInt64, windowMaxUs: UInt64, windowP99Us: UInt64, totalUs: UInt64 = 0) {
            self.name = name
            self.calls = calls
            self.windowMaxUs = windowMaxUs
            self.windowP99Us = windowP99Us
            self.totalUs = totalUs
        }
    }

    /// The journal writer's health.
    public struct JournalHealth: Sendable, Hashable {
        public var condition: StorageCondition
        public var unsyncedRecords: Int
        public var lastSyncAgoMs: Int64?
        public var writeErrors: UInt64
        public init(condition: StorageCondition, unsyncedRecords: Int = 0, lastSyncAgoMs: Int64? = nil, writeErrors: UInt64 = 0) {
            self.condition = condition
            self.unsyncedRecords = unsyncedRecords
            self.lastSyncAgoMs = lastSyncAgoMs
            self.writeErrors = writeErrors
        }
    }

    public var state: SessionState
    public var timerMs: Int64
    public var distanceM: Double?
    public var sensors: [SensorStatus]
    public var loopTurns: UInt64
    public var loopTurnMaxUs: UInt64
    /// `(threshold ms, turns at least that long)`, the loop's slow turns (`turns_at_least_ms`).
    public var loopSlowTurns: [SlowTurns]
    public var handlers: [HandlerLatency]
    public var journal: JournalHealth
    public var uptimeMs: Int64
    /// The running program's version and, for a release build, its commit (docs/releasing.md).
    public var version = ProjectVersion.string
    public var commit = ProjectVersion.commit

    public init(state: SessionState, timerMs: Int64, distanceM: Double? = nil, sensors: [SensorStatus] = [],
                loopTurns: UInt64 = 0, loopTurnMaxUs: UInt64 = 0, loopSlowTurns: [SlowTurns] = [],
                handlers: [HandlerLatency] = [], journal: JournalHealth = JournalHealth(condition: .ok), uptimeMs: Int64 = 0) {
        self.state = state
        self.timerMs = timerMs
        self.distanceM = distanceM
        self.sensors = sensors
        self.loopTurns = loopTurns
        self.loopTurnMaxUs = loopTurnMaxUs
        self.loopSlowTurns = loopSlowTurns
        self.handlers = handlers
        self.journal = journal
        self.uptimeMs = uptimeMs
    }

    /// The loop's turns at least `ms` long (`EventLoopLimits.slowTurnThresholdsMs`).
    public struct SlowTurns: Hashable, Sendable {
        public let ms: UInt64
        public let turns: UInt64
        public init(ms: UInt64, turns: UInt64) { self.ms = ms; self.turns = turns }
    }

    /// The report as one line of JSON.
    public func json() -> String {
        var w = JSONWriter(pretty: false)
        w.beginObject()
        w.string("state", state.description)
        w.string("version", version)
        w.string("commit", commit)
        w.int("timer_ms", timerMs)
        w.number("distance_m", distanceM, decimals: 1)
        w.int("uptime_ms", uptimeMs)
        w.beginArray("sensors")
        for s in sensors {
            w.beginObject()
            w.string("role", s.role.description)
            w.string("state", s.state.description)
            w.int("battery_percent", s.batteryPercent.map(Int64.init))
            w.endObject()
        }
        w.endArray()
        w.beginObject("loop")
        w.int("turns", Int64(clamping: loopTurns))
        w.int("turn_max_us", Int64(clamping: loopTurnMaxUs))
        w.beginObject("turns_at_least_ms")
        for s in loopSlowTurns { w.int(String(s.ms), Int64(clamping: s.turns)) }
        w.endObject()
        w.beginArray("handlers")
        for h in handlers {
            w.beginObject()
            w.string("name", h.name)
            w.int("calls", Int64(clamping: h.calls))
            w.int("max_us", Int64(clamping: h.windowMaxUs))
            w.int("p99_us", Int64(clamping: h.windowP99Us))
            w.int("total_us", Int64(clamping: h.totalUs))
            w.endObject()
        }
        w.endArray()
        w.endObject()
        w.beginObject("journal")
        w.string("condition", Self.word(journal.condition))
        w.int("unsynced_records", Int64(journal.unsyncedRecords))
        w.int("last_sync_ago_ms", journal.lastSyncAgoMs)
        w.int("write_errors", Int64(clamping: journal.writeErrors))
        w.endObject()
        w.endObject()
        return w.text
    }

    static func word(_ c: StorageCondition) -> String {
        switch c {
        case .ok: "ok"
        case .low: "low"
        case .full: "full"
        case .failing: "failing"
        }
    }
}
