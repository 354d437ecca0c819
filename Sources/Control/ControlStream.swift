import AppCore
import RideModel
import Training

/// The control socket's event stream (docs/companion.md): turns the app core's effects and the
/// runtime's 1 Hz tick into numbered JSON lines for subscribers, and answers `subscribe` with
/// a snapshot of the current view plus a replay of the events a reconnecting client missed.
///
/// Pure: no I/O, no clock. The runtime adds it as a `RideObserver`, calls `tick(core:at:)`
/// once a second, hands `subscribe` requests to `subscribe(...)`, and points `sink` at the
/// socket server's broadcast. Every line the stream emits carries the next sequence number;
/// the snapshot carries the latest one (it is the state *after* that line).
///
/// Line kinds (`"type"`): `state` (session state or screen mode changed), `metrics` (1 Hz,
/// the whole live view), `zone` (the current heart-rate or power zone changed), `lap`,
/// `marker` (water, food, note... as journaled), `alert`, `reply` (the answer to any control
/// command), `ride_finished`, `ride_deleted`; and `snapshot`, sent only to a new subscriber.
public final class ControlStream: RideObserver {
    public enum Limits {
        /// Discrete events (everything but `metrics`) kept for replay to reconnecting clients.
        public static let replayEventsMax = 128
    }

    /// What a `subscribe` request gets: the reply line for the requesting client, then the
    /// lines that go to that client only (snapshot, then replayed events) before the stream.
    public struct Subscription: Sendable, Hashable {
        public var reply: String
        public var lines: [String]
        /// Lines emitted since the client's `from` sequence number (nil: unknown, e.g. the
        /// client followed another stream or passed none).
        public var missed: UInt64?
        /// Missed events replayed from the ring (metrics lines are never replayed: the
        /// snapshot supersedes them).
        public var replayed: Int
        /// True when every missed event was still in the ring.
        public var complete: Bool
    }

    private struct Entry: Sendable {
        var seq: UInt64
        /// The line after `{"seq":N,`.
        var body: String
    }

    /// Identifies this run of the device: sequence numbers restart with it.
    public let streamID: String
    /// The sequence number of the last line emitted (0: none yet).
    public private(set) var seq: UInt64 = 0
    /// Receives every emitted line (without newline): the socket server's broadcast.
    public var sink: ((String) -> Void)?

    private var ring: RingBuffer<Entry>
    /// The highest sequence number that fell out of the ring (0: none).
    private var evictedThrough: UInt64 = 0
    private var lastState: SessionState?
    private var lastModeWord: String?
    private var lastLap = 0

    public init(streamID: UInt64) {
        self.streamID = Self.hex(streamID)
        ring = RingBuffer(capacity: Limits.replayEventsMax)
    }

    // MARK: Inputs from the runtime

    public func observe(_ effect: AppEffect, core: AppCore, at now: MonotonicInstant) {
        switch effect {
        case .journal(.event(let e)):
            checkState(core, at: now)
            switch e.kind {
            case .lap:
                var w = JSONWriter(pretty: false)
                w.int("lap", Int64(core.screen.lapNumber))
                w.int("timer_ms", core.screen.timerMs)
                emit("lap", w, at: now, replayable: true)
            case .marker:
                var w = JSONWriter(pretty: false)
                w.string("kind", ControlProtocol.markerWord(e.markerKind))
                w.int("value", e.value)
                w.string("unit", Self.markerUnit(e.markerKind))
                w.int("timer_ms", core.screen.timerMs)
                emit("marker", w, at: now, replayable: true)
            default:
                break
            }
        case .journal, .syncJournal, .sensors, .clockTrusted, .courses, .powerOff:
            checkState(core, at: now)
        case .zoneUpdate(let z):
            checkState(core, at: now)
            var w = JSONWriter(pretty: false)
            w.string("quantity", z.quantity.name)
            w.int("zone", z.zone.map { Int64($0 + 1) })
            w.int("previous_zone", z.previousZone.map { Int64($0 + 1) })
            w.string("name", z.quantity == .power ? core.screen.powerZoneName : core.screen.heartRateZoneName)
            emit("zone", w, at: now, replayable: true)
        case .alert(let a):
            checkState(core, at: now)
            var w = JSONWriter(pretty: false)
            w.string("alert", a.description)
            emit("alert", w, at: now, replayable: true)
        case .reply(let r):
            checkState(core, at: now)
            var w = JSONWriter(pretty: false)
            w.bool("ok", r.ok)
            w.string("state", r.state.description)
            w.string("message", r.message)
            emit("reply", w, at: now, replayable: true)
        case .rideFinished(let id, let saved):
            checkState(core, at: now)
            var w = JSONWriter(pretty: false)
            w.string("ride_id", id.description)
            w.bool("saved", saved)
            emit("ride_finished", w, at: now, replayable: true)
        case .rideDeleted(let id):
            checkState(core, at: now)
            var w = JSONWriter(pretty: false)
            w.string("ride_id", id.description)
            emit("ride_deleted", w, at: now, replayable: true)
        case .pairingCodeDismissed:
            // The companion cancels the code (docs/companion.md, "Pairing").
            var w = JSONWriter(pretty: false)
            w.bool("shown", false)
            w.string("by", "button")
            emit("pairing", w, at: now, replayable: false)
        }
    }

    /// The 1 Hz live-metrics line (call once a second from the run loop's timer, after the
    /// core's own tick). Also catches state changes no effect announced; with `metrics` false
    /// (nobody follows) it does only that.
    public func tick(core: AppCore, metrics: Bool = true, at now: MonotonicInstant) {
        checkState(core, at: now)
        guard metrics else { return }
        var w = JSONWriter(pretty: false)
        Self.writeView(core, into: &w)
        emit("metrics", w, at: now, replayable: false)
    }

    // MARK: Subscribing

    /// Answers `subscribe [FROM_SEQ [STREAM_ID]]`: a snapshot of the view now, then the
    /// events after `from` that are still in the ring (history: the snapshot already includes
    /// them; they carry `"replay":true`). The client receives the stream after these lines.
    public func subscribe(from: UInt64?, streamID requested: String?, core: AppCore, at now: MonotonicInstant) -> Subscription {
        var missed: UInt64? = nil
        var replay: [Entry] = []
        var complete = false
        let sameStream = requested == nil || requested == streamID
        if let from, sameStream, from <= seq {
            missed = seq - from
            ring.forEach { if $0.seq > from { replay.append($0) } }
            complete = from >= evictedThrough
        }
        var w = JSONWriter(pretty: false)
        w.string("stream", streamID)
        w.int("missed", missed.map { Int64(clamping: $0) })
        w.int("replayed", Int64(replay.count))
        w.bool("complete", complete)
        Self.writeView(core, into: &w)
        var lines = ["{\"seq\":\(seq),\"type\":\"snapshot\",\"t_ms\":\(now.milliseconds),\(Self.inner(w))"]
        for e in replay { lines.append("{\"seq\":\(e.seq),\"replay\":true,\(e.body)") }
        let reply = "ok subscribed stream=\(streamID) latest=\(seq) missed=\(missed.map { String($0) } ?? "unknown") replayed=\(replay.count)"
        return Subscription(reply: reply, lines: lines, missed: missed, replayed: replay.count, complete: complete)
    }

    // MARK: Emitting

    private func checkState(_ core: AppCore, at now: MonotonicInstant) {
        let state = core.state
        let mode = Self.modeWord(core.screen.mode)
        let lap = core.screen.lapNumber
        defer { lastLap = lap }
        guard state != lastState || mode != lastModeWord else { return }
        lastState = state
        lastModeWord = mode
        var w = JSONWriter(pretty: false)
        w.string("state", state.description)
        w.string("mode", mode)
        w.int("countdown", Self.countdown(core.screen.mode))
        w.int("timer_ms", core.screen.timerMs)
        w.int("lap", Int64(lap))
        emit("state", w, at: now, replayable: true)
    }

    private func emit(_ type: String, _ fields: JSONWriter, at now: MonotonicInstant, replayable: Bool) {
        seq &+= 1
        let body = "\"type\":\"\(type)\",\"t_ms\":\(now.milliseconds),\(Self.inner(fields))"
        if replayable, let old = ring.append(Entry(seq: seq, body: body)) {
            evictedThrough = old.seq
        }
        sink?("{\"seq\":\(seq),\(body)")
    }

    /// A writer's object text without its opening brace (so fields can follow a prefix).
    private static func inner(_ w: JSONWriter) -> String {
        // JSONWriter with top-level keys writes `"k":v,...` with no enclosing braces.
        w.text + "}"
    }

    // MARK: The view

    /// The whole live view: state, timers, every metric, zones, sensors, overlay, storage.
    public static func writeView(_ core: AppCore, into w: inout JSONWriter) {
        let s = core.screen
        w.string("state", core.state.description)
        w.string("mode", modeWord(s.mode))
        w.int("countdown", countdown(s.mode))
        w.int("timer_ms", s.timerMs)
        w.int("elapsed_ms", s.elapsedMs)
        w.int("moving_ms", s.movingMs)
        w.int("lap", Int64(s.lapNumber))
        w.int("lap_timer_ms", s.lapTimerMs)
        w.beginObject("metrics")
        for m in Metric.allCases { w.number(m.description, s[m], decimals: 2) }
        w.endObject()
        w.beginObject("zones")
        w.beginObject("heart_rate")
        w.int("zone", s[.heartRateZone].map { Int64($0) })
        w.int("count", Int64(s.heartRateZoneCount))
        w.string("name", s.heartRateZoneName)
        w.int("target", s.heartRateTargetZone.map { Int64($0 + 1) })
        w.endObject()
        w.beginObject("power")
        w.int("zone", s[.powerZone].map { Int64($0) })
        w.int("count", Int64(s.powerZoneCount))
        w.string("name", s.powerZoneName)
        w.int("target", s.powerTargetZone.map { Int64($0 + 1) })
        w.endObject()
        w.endObject()
        w.beginObject("sensors")
        for role in SensorRole.allCases { w.string(role.key, s.sensor(role).description) }
        w.endObject()
        w.string("overlay", s.overlay?.description)
        w.string("storage", StatusReport.word(s.storage))
        w.bool("recovered", s.recovered)
        writeBattery(s, into: &w)
        if let sum = s.summary {
            w.beginObject("summary")
            w.string("ride_id", sum.rideID.description)
            w.bool("saved", sum.saved)
            w.int("timer_ms", sum.timerTimeMs)
            w.int("elapsed_ms", sum.elapsedTimeMs)
            w.int("moving_ms", sum.movingTimeMs)
            w.number("distance_m", sum.distanceM, decimals: 1)
            w.number("avg_speed_mps", sum.averageSpeedMps, decimals: 2)
            w.number("avg_power_w", sum.averagePowerW, decimals: 1)
            w.number("np_w", sum.normalizedPowerW, decimals: 1)
            w.number("avg_heart_rate", sum.averageHeartRate, decimals: 1)
            w.int("laps", Int64(sum.lapCount))
            w.endObject()
        } else {
            w.string("summary", nil)
        }
    }

    static func modeWord(_ m: ScreenMode) -> String {
        switch m {
        case .idle: "idle"
        case .countdown: "countdown"
        case .running: "running"
        case .paused: "paused"
        case .summary: "summary"
        case .confirmDiscard: "confirm_discard"
        case .sensors: "sensors"
        case .courses: "courses"
        }
    }

    static func countdown(_ m: ScreenMode) -> Int64? {
        if case .countdown(let n) = m { return Int64(n) }
        return nil
    }

    static func markerUnit(_ k: RideEvent.MarkerKind) -> String? {
        switch k {
        case .water: "ml"
        case .food: "kcal"
        default: nil
        }
    }

    static func hex(_ v: UInt64) -> String {
        let h = String(v, radix: 16)
        return String(repeating: "0", count: max(0, 16 - h.count)) + h
    }
}

// MARK: The stream's requests on the control socket

extension ControlProtocol {
    /// Requests beyond `parse`'s commands: checked first by the runtime's line handler.
    public enum StreamRequest: Sendable, Hashable {
        /// `subscribe [FROM_SEQ [STREAM_ID]]`: turn this connection into an event stream.
        case subscribe(fromSeq: UInt64?, streamID: String?)
        /// `pairing-code CODE`: show CODE (`PairingCode.digits` digits) on the unit's display;
        /// `pairing-code clear`: hide it.
        case pairingCode(UInt32?)
    }

    /// Why a `subscribe` or `pairing-code` line is malformed.
    public enum StreamRequestError: Error, Sendable, Hashable, CustomStringConvertible {
        case badSequence(String)
        case badStreamID(String)
        case badPairingCode(String)
        case missingPairingCode
        case unexpectedArgument(command: String, argument: String)

        public var description: String {
            switch self {
            case .badSequence(let s): "sequence number '\(ControlProtocol.clip(s))' is not a whole number; send `subscribe` or `subscribe LAST_SEQ`"
            case .badStreamID(let s): "stream id '\(ControlProtocol.clip(s))' is not 16 hex digits; send the `stream` value of a snapshot"
            case .badPairingCode(let s): "pairing code '\(ControlProtocol.clip(s))' must be six digits (the companion shows the code to type)"
            case .missingPairingCode: "`pairing-code` needs a code or `clear`"
            case .unexpectedArgument(let c, let a): "'\(c)' got an extra argument '\(ControlProtocol.clip(a))'"
            }
        }
    }

    public static let streamRequestWords = "subscribe [FROM_SEQ [STREAM_ID]], pairing-code CODE|clear"

    /// Parses `subscribe ...` and `pairing-code ...`; nil when the line is another request
    /// (hand it to `parse`).
    public static func parseStreamRequest(_ line: String) -> Result<StreamRequest, StreamRequestError>? {
        let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" })
        guard let first = words.first?.lowercased() else { return nil }
        let args = words.dropFirst().map(String.init)
        switch first {
        case "subscribe":
            if args.count > 2 { return .failure(.unexpectedArgument(command: "subscribe", argument: args[2])) }
            var from: UInt64? = nil
            var stream: String? = nil
            if let a = args.first {
                guard let n = UInt64(a) else { return .failure(.badSequence(a)) }
                from = n
            }
            if args.count == 2 {
                let s = args[1].lowercased()
                guard s.utf8.count == 16, s.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }) else {
                    return .failure(.badStreamID(args[1]))
                }
                stream = s
            }
            return .success(.subscribe(fromSeq: from, streamID: stream))
        case "pairing-code":
            guard let code = args.first else { return .failure(.missingPairingCode) }
            if args.count > 1 { return .failure(.unexpectedArgument(command: "pairing-code", argument: args[1])) }
            if code.lowercased() == "clear" { return .success(.pairingCode(nil)) }
            guard let value = PairingCode.parse(code) else { return .failure(.badPairingCode(code)) }
            return .success(.pairingCode(value))
        default:
            return nil
        }
    }

    public static func format(_ error: StreamRequestError) -> String { "error \(oneLine(error.description))" }
}
