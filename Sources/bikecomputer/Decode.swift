import ArgumentParser
import BoardIO
import Control
import Device
import Glibc
import RideModel
import Sensors

/// `bikecomputer decode`: decodes raw sensor payloads through the same stateful decoder the device
/// uses and prints one JSON object per payload.
struct Decode: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Decode raw BLE or ANT+ sensor payloads (hex) and print one JSON object per payload.",
        discussion: """
            Payloads are decoded in order by one stateful decoder, so rates (speed, cadence, power \
            averages) come from consecutive payloads. Examples:
              bikecomputer decode --ble 2a63 2000fa000a000010 2000fc000b000014
              bikecomputer decode --ant 121 --wheel-mm 2105 0000000000000000 00040200000c0300
            BLE profiles: 2a37 2a5b 2a63 2a65 2a19. ANT+ device types (decimal): 120 11 121 122 123.
            To check a bridge, listen instead and decode every frame it sends:
              bikecomputer decode --socket /tmp/sensors.sock      (then start the bridge on it)
              bikecomputer decode --serial /dev/ttyACM0 --count 100
            """)

    @Option(name: .customLong("ble"), help: "GATT characteristic UUID, hex (2a37, 2a5b, 2a63, 2a65, 2a19; 6a4e3203 for a Varia radar).")
    var bleUUID: String?

    @Option(name: .customLong("ant"), help: "ANT+ device type, decimal (120, 11, 121, 122, 123; 40 for a bike radar).")
    var antDeviceType: Int?

    @Option(name: .customLong("wheel-mm"), help: "Wheel circumference in millimetres.")
    var wheelMm: Int = SensorDecoder.defaultWheelCircumferenceMm

    @Option(name: .customLong("interval-ms"), help: "Time between payloads, for the hold and zero rules.")
    var intervalMs: Int64 = 250

    @Option(name: .customLong("socket"), help: "Listen on this SOCK_SEQPACKET path and decode a bridge's frames until it disconnects.")
    var socketPath: String?

    @Option(name: .customLong("serial"), help: "Read COBS-framed bridge frames from this tty and decode them.")
    var serialPath: String?

    @Option(name: .customLong("count"), help: "With --socket or --serial: stop after this many frames.")
    var frameCount: Int?

    @Argument(help: "Payloads in hex, one per argument, in the order they arrived.")
    var payloads: [String] = []

    var listening: Bool { socketPath != nil || serialPath != nil }

    func validate() throws {
        if listening {
            if socketPath != nil && serialPath != nil { throw ValidationError("give --socket or --serial, not both") }
            if !payloads.isEmpty || bleUUID != nil || antDeviceType != nil {
                throw ValidationError("--socket/--serial decode what the bridge sends: give no payloads, --ble or --ant")
            }
            return
        }
        if (bleUUID == nil) == (antDeviceType == nil) {
            throw ValidationError("give exactly one of --ble UUID or --ant DEVICE_TYPE")
        }
        if profile == nil {
            let ble = Profile.allCases.filter { $0.transport == .ble }.map { p in
                SensorKind.allCases.flatMap { zip($0.bleMeasurements, $0.bleMeasurementUUIDs) }.first { $0.0 == p.code }
                    .map { $0.1.hasPrefix("0000") ? String($0.1.dropFirst(4).prefix(4)) : String($0.1.prefix(8)) } ?? String(p.code, radix: 16)
            }
            let ant = Profile.allCases.filter { $0.transport == .ant }.map { String($0.code) }
            throw ValidationError("no decoder for \(bleUUID.map { "BLE \($0)" } ?? "ANT+ device type \(antDeviceType!)"); supported: --ble \(ble.joined(separator: "|")), --ant \(ant.joined(separator: "|"))")
        }
        if wheelMm < 100 || wheelMm > 5000 {
            throw ValidationError("--wheel-mm \(wheelMm) is not a wheel: give the circumference in millimetres, e.g. 2105 for 700x25c")
        }
        if payloads.isEmpty { throw ValidationError("give at least one hex payload") }
    }

    var profile: Profile? {
        if let b = bleUUID {
            return SensorKind.bleProfileCode(uuid: b).flatMap { Profile(transport: .ble, code: $0) }
        }
        if let a = antDeviceType, let code = UInt16(exactly: a) { return Profile(transport: .ant, code: code) }
        return nil
    }

    func run() throws {
        if listening {
            var listener = BridgeListener(wheelMm: wheelMm, countMax: frameCount)
            if let p = socketPath { try listener.runSocket(path: p) } else { try listener.runSerial(path: serialPath!) }
            return
        }
        let profile = profile!
        var decoder = SensorDecoder(profile: profile, wheelCircumferenceMm: wheelMm)
        var failures = 0
        for (index, hex) in payloads.enumerated() {
            let now = MonotonicInstant(milliseconds: Int64(index) * intervalMs)
            var fields = JSONFields()
            fields.json.int("index", Int64(index))
            fields.json.string("profile", profile.description)
            fields.json.number("t_s", Double(now.milliseconds) / 1000)
            guard let p = Payload(hex: hex) else {
                failures += 1
                fields.json.string("payload", hex)
                fields.json.string("error", "bad hex: give an even number of hex digits (0-9, a-f), at most \(Payload.bytesMax) bytes")
                print(fields.finish())
                continue
            }
            fields.json.string("payload", p.hex)
            do {
                let d = try decoder.decode(p, at: now, fields: &fields)
                d.visitFields(&fields)
                if d.warnings != 0 {
                    fields.json.beginArray("warnings")
                    for k in BadInput.allCases where d.has(k) { fields.json.string(nil, k.description) }
                    fields.json.endArray()
                }
            } catch {
                failures += 1
                fields.json.string("error", error.description)
            }
            print(fields.finish())
        }
        if failures > 0 { throw ExitCode(1) }
    }
}

/// Writes decoded fields into a one-line JSON object; a key already written is not repeated.
struct JSONFields: FieldVisitor {
    var json = JSONWriter(pretty: false)
    var seen: Set<String> = []

    init() { json.beginObject() }

    /// Continues `writer` with a new object.
    init(writer: JSONWriter) {
        json = writer
        json.beginObject()
    }

    mutating func fresh(_ name: String) -> Bool { seen.insert(name).inserted }

    mutating func int(_ name: String, _ value: Int64) { if fresh(name) { json.int(name, value) } }
    mutating func double(_ name: String, _ value: Double) { if fresh(name) { json.number(name, value, decimals: 6) } }
    mutating func bool(_ name: String, _ value: Bool) { if fresh(name) { json.bool(name, value) } }
    mutating func string(_ name: String, _ value: String) { if fresh(name) { json.string(name, value) } }
    mutating func doubles(_ name: String, count: Int, _ value: (Int) -> Double) {
        guard fresh(name) else { return }
        json.beginArray(name)
        for i in 0..<count { json.number(nil, value(i), decimals: 6) }
        json.endArray()
    }
    mutating func records(_ name: String, count: Int, _ record: (Int, inout JSONFields) -> Void) {
        guard fresh(name) else { return }
        json.beginArray(name)
        for i in 0..<count {
            // Each record has its own keys: written without this object's "seen" names.
            var r = JSONFields(writer: json)
            record(i, &r)
            json = r.json
            json.endObject()
        }
        json.endArray()
    }
    mutating func optionalDouble(_ name: String, _ value: Double?) {
        if fresh(name) { json.number(name, value, decimals: 6) }
    }

    mutating func finish() -> String {
        json.endObject()
        return json.text
    }
}

/// `decode --socket/--serial`: prints every frame a bridge sends, data frames decoded by one
/// stateful decoder per sensor and profile, timed by the bridge's clock.
struct BridgeListener {
    let wheelMm: Int
    let countMax: Int?
    var decoders: [String: SensorDecoder] = [:]
    var frames = 0
    var deframer = SerialDeframer()

    init(wheelMm: Int, countMax: Int?) {
        self.wheelMm = wheelMm
        self.countMax = countMax
    }

    var done: Bool { countMax.map { frames >= $0 } ?? false }

    mutating func runSocket(path: String) throws {
        let listener = try SeqPacketListener.listen(path: path)
        defer { listener.close() }
        FileHandleOut.log("listening on \(path); start the bridge with --socket \(path)")
        var connection: SeqPacketConnection?
        while connection == nil {
            try waitReadable(listener.fd)
            connection = try listener.accept()
        }
        let c = connection!
        defer { c.close() }
        var buffer = [UInt8](repeating: 0, count: 256)
        while !done {
            try waitReadable(c.fd)
            let r = try buffer.withUnsafeMutableBytes { try c.receive(into: $0) }
            switch r {
            case .wouldBlock: continue
            case .closed: FileHandleOut.log("the bridge disconnected"); return
            case let .data(n, truncated):
                if truncated { printError("packet longer than \(buffer.count) bytes: not a bridge frame"); continue }
                do { handle(try BridgeFrame.parse(Array(buffer[0..<n]))) } catch { printError(error.description) }
            }
        }
    }

    mutating func runSerial(path: String) throws {
        let port = try SerialPort.open(path)
        defer { port.close() }
        var buffer = [UInt8](repeating: 0, count: 512)
        var bad = deframer.bad.total
        while !done {
            try waitReadable(port.fd)
            let r = try buffer.withUnsafeMutableBytes { try port.read(into: $0) }
            switch r {
            case .wouldBlock: continue
            case .closed: FileHandleOut.log("the serial line hung up"); return
            case let .data(n, _):
                var d = deframer
                var got: [BridgeFrame] = []
                d.feed(Array(buffer[0..<n])) { got.append($0) }
                deframer = d
                for f in got where !done { handle(f) }
                if deframer.bad.total != bad {
                    bad = deframer.bad.total
                    printError("serial framing errors so far: \(bad) (garbage, CRC or COBS); resynchronised")
                }
            }
        }
    }

    func waitReadable(_ fd: FileDescriptor) throws {
        var p = pollfd(fd: fd.rawValue, events: Int16(POLLIN), revents: 0)
        while poll(&p, 1, -1) < 0 {
            if errno != EINTR { throw SystemError.current("poll", "\(fd)") }
        }
    }

    func printError(_ message: String) {
        var j = JSONWriter(pretty: false)
        j.beginObject()
        j.string("error", message)
        j.endObject()
        print(j.text)
    }

    mutating func handle(_ frame: BridgeFrame) {
        frames += 1
        var fields = JSONFields()
        fields.json.int("bridge_time_us", Int64(bitPattern: frame.bridgeTimeUs))
        switch frame.message {
        case let .hello(v, radios, id):
            fields.json.string("kind", "hello")
            fields.json.int("protocol_version_max", Int64(v))
            fields.json.int("radios", Int64(radios))
            fields.json.int("bridge_id", Int64(id))
        case let .heartbeat(seq):
            fields.json.string("kind", "heartbeat")
            fields.json.int("sequence", Int64(seq))
        case let .link(who, code, state):
            fields.json.string("kind", "link")
            fields.json.string("sensor", who.description)
            fields.json.int("profile_code", Int64(code))
            fields.json.string("state", state.description)
        case let .data(who, code, payload):
            fields.json.string("kind", "data")
            fields.json.string("sensor", who.description)
            fields.json.string("payload", payload.hex)
            guard let radio = who.radio, let profile = Profile(transport: radio, code: code) else {
                fields.json.int("profile_code", Int64(code))
                fields.json.string("error", DecodeError(.unknownProfile).description)
                break
            }
            fields.json.string("profile", profile.description)
            let key = "\(who)|\(code)"
            var decoder = decoders[key] ?? SensorDecoder(profile: profile, wheelCircumferenceMm: wheelMm)
            let now = MonotonicInstant(milliseconds: Int64(frame.bridgeTimeUs / 1000))
            do {
                let d = try decoder.decode(payload, at: now, fields: &fields)
                d.visitFields(&fields)
            } catch {
                fields.json.string("error", error.description)
            }
            decoders[key] = decoder
        case let .configState(readable, line, note):
            fields.json.string("kind", "config_state")
            fields.json.bool("readable", readable)
            fields.json.int("line", Int64(line))
            fields.json.string("reason", note.text)
        case let .found(f):
            fields.json.string("kind", "found")
            fields.json.string("sensor", f.identity.description)
            fields.json.int("profile_code", Int64(f.profileCode))
            fields.json.int("rssi", f.rssi.map(Int64.init))
            fields.json.string("name", f.name.text)
        case let .scanState(running, radios, found):
            fields.json.string("kind", "scan")
            fields.json.bool("running", running)
            fields.json.int("radios", Int64(radios))
            fields.json.int("found", Int64(found))
        case let .notificationSocket(who, code):
            fields.json.string("kind", "notification_socket")
            fields.json.string("sensor", who.description)
            fields.json.int("profile_code", Int64(code))
        case let .appHello(v, flags):
            fields.json.string("kind", "app_hello")
            fields.json.int("protocol_version_max", Int64(v))
            fields.json.int("flags", Int64(flags))
        case let .scanRequest(start, radios, seconds):
            fields.json.string("kind", "scan_request")
            fields.json.bool("start", start)
            fields.json.int("radios", Int64(radios))
            fields.json.int("seconds", Int64(seconds))
        case .reload:
            fields.json.string("kind", "reload")
        case let .socketReturned(who, code):
            fields.json.string("kind", "socket_returned")
            fields.json.string("sensor", who.description)
            fields.json.int("profile_code", Int64(code))
        }
        print(fields.finish())
    }
}

/// Progress messages go to standard error, so standard output stays one JSON object per line.
enum FileHandleOut {
    static func log(_ s: String) {
        let line = "bikecomputer decode: " + s + "\n"
        _ = try? FileDescriptor(rawValue: 2).writeAll(Array(line.utf8))
    }
}
