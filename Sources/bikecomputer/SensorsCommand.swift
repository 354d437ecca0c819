import AppCore
import ArgumentParser
import BoardIO
import Configuration
import Control
import Device
import Sensors

/// `bikecomputer sensors [list]`: every paired sensor of the config with its connection state and
/// last battery level, as the running device sees them (from `ctl status`).
struct SensorsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sensors",
        abstract: "List the paired sensors with their connection and battery (asks the running bikecomputer).",
        discussion: """
            The sensors are the config's [[sensor]] blocks; their state and battery come from the \
            running device over the control socket. A battery under \(AppCoreBattery.lowPercent) % \
            is marked LOW (the device also alerts when a ride starts). Without a running device \
            the states are unknown and the command exits 2 after listing the sensors.
            """,
        subcommands: [List.self],
        defaultSubcommand: List.self)

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The paired sensors, their state and battery (the default).")

        @Option(help: "The config file (default: /etc/bikecomputer/config.toml if it exists).")
        var config: String?

        @Option(help: "The control socket (default: [control] socket from the config).")
        var socket: String?

        @Flag(help: "Print JSON instead of a table.")
        var json = false

        func run() throws {
            let device: DeviceConfig
            do { device = try ConfigFile.load(path: config).0 } catch {
                printError("bikecomputer sensors: \(error.description)")
                throw ExitCode(2)
            }
            let paired = ConfigMapping.dataSource(device).sensors
            let path = socket ?? device.control.socket
            var live: [String: (state: String, battery: Int?)] = [:]
            var unreachable: String?
            do {
                let reply = try ControlSocketClient.request("status", path: path)
                let (ok, body) = ControlProtocol.parseReply(reply)
                guard ok else { throw CommandFailure("bikecomputer sensors: status refused: \(body)") }
                for item in MiniJSON.parse(body)?["paired"]?.array ?? [] {
                    guard let id = item["sensor"]?.string else { continue }
                    live[id] = (item["state"]?.string ?? "?", item["battery_percent"]?.number.map { Int($0) })
                }
            } catch let e as CommandFailure {
                throw e
            } catch {
                unreachable = "cannot reach \(path) (\(error)): is bikecomputer running? (systemctl status bikecomputer)"
            }
            let roles = device.sensors.map(\.role.rawValue)
            if json {
                var w = JSONWriter(pretty: false)
                w.beginObject()
                w.bool("device_running", unreachable == nil)
                w.beginArray("sensors")
                for (i, p) in paired.enumerated() {
                    let id = p.identity.description
                    w.beginObject()
                    w.string("sensor", id)
                    w.string("role", i < roles.count ? roles[i] : nil)
                    w.string("state", live[id]?.state)
                    w.int("battery_percent", live[id]?.battery.map(Int64.init))
                    w.endObject()
                }
                w.endArray()
                w.endObject()
                print(w.text)
            } else if paired.isEmpty {
                print("No sensors paired: add [[sensor]] blocks to the config (docs/config.md).")
            } else {
                print("SENSOR" .padding(30) + "ROLE".padding(14) + "STATE".padding(14) + "BATTERY")
                for (i, p) in paired.enumerated() {
                    let id = p.identity.description
                    let state = unreachable == nil ? (live[id]?.state ?? "?") : "unknown"
                    var battery = live[id]?.battery.map { "\($0) %" } ?? "--"
                    if let b = live[id]?.battery, b < AppCoreBattery.lowPercent { battery += " LOW: replace or charge it" }
                    print(id.padding(30) + (i < roles.count ? roles[i] : "?").padding(14) + state.padding(14) + battery)
                }
            }
            if let unreachable {
                printError("bikecomputer sensors: \(unreachable)")
                throw ExitCode(2)
            }
        }
    }
}

/// The alert level, named once (AppCore's).
enum AppCoreBattery {
    static let lowPercent = AppCore.sensorBatteryLowPercent
}

/// Just enough JSON to read `ctl status` back (objects, arrays, strings, numbers, literals).
/// Bounded: input over `bytesMax` or nesting over `depthMax` is refused (nil).
indirect enum MiniJSON {
    case object([String: MiniJSON]), array([MiniJSON]), string(String), number(Double), bool(Bool), null

    static let bytesMax = 1 << 20
    static let depthMax = 32

    subscript(key: String) -> MiniJSON? { if case .object(let o) = self { o[key] } else { nil } }
    var array: [MiniJSON]? { if case .array(let a) = self { a } else { nil } }
    var string: String? { if case .string(let s) = self { s } else { nil } }
    var number: Double? { if case .number(let n) = self { n } else { nil } }

    static func parse(_ text: String) -> MiniJSON? {
        let bytes = Array(text.utf8)
        guard bytes.count <= bytesMax else { return nil }
        var i = 0
        guard let v = value(bytes, &i, depth: 0) else { return nil }
        skip(bytes, &i)
        return i == bytes.count ? v : nil
    }

    private static func skip(_ b: [UInt8], _ i: inout Int) {
        while i < b.count, b[i] == 0x20 || b[i] == 0x0A || b[i] == 0x0D || b[i] == 0x09 { i += 1 }
    }

    private static func value(_ b: [UInt8], _ i: inout Int, depth: Int) -> MiniJSON? {
        guard depth < depthMax else { return nil }
        skip(b, &i)
        guard i < b.count else { return nil }
        switch b[i] {
        case UInt8(ascii: "{"):
            i += 1
            var o: [String: MiniJSON] = [:]
            skip(b, &i)
            if i < b.count, b[i] == UInt8(ascii: "}") { i += 1; return .object(o) }
            while true {
                skip(b, &i)
                guard case .string(let k)? = string(b, &i) else { return nil }
                skip(b, &i)
                guard i < b.count, b[i] == UInt8(ascii: ":") else { return nil }
                i += 1
                guard let v = value(b, &i, depth: depth + 1) else { return nil }
                o[k] = v
                skip(b, &i)
                guard i < b.count else { return nil }
                if b[i] == UInt8(ascii: ",") { i += 1; continue }
                if b[i] == UInt8(ascii: "}") { i += 1; return .object(o) }
                return nil
            }
        case UInt8(ascii: "["):
            i += 1
            var a: [MiniJSON] = []
            skip(b, &i)
            if i < b.count, b[i] == UInt8(ascii: "]") { i += 1; return .array(a) }
            while true {
                guard let v = value(b, &i, depth: depth + 1) else { return nil }
                a.append(v)
                skip(b, &i)
                guard i < b.count else { return nil }
                if b[i] == UInt8(ascii: ",") { i += 1; continue }
                if b[i] == UInt8(ascii: "]") { i += 1; return .array(a) }
                return nil
            }
        case UInt8(ascii: "\""):
            return string(b, &i)
        case UInt8(ascii: "t"): return literal(b, &i, "true", .bool(true))
        case UInt8(ascii: "f"): return literal(b, &i, "false", .bool(false))
        case UInt8(ascii: "n"): return literal(b, &i, "null", .null)
        default:
            let start = i
            while i < b.count, (b[i] >= UInt8(ascii: "0") && b[i] <= UInt8(ascii: "9")) || b[i] == UInt8(ascii: "-")
                    || b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: ".") || b[i] == UInt8(ascii: "e") || b[i] == UInt8(ascii: "E") { i += 1 }
            guard i > start, let d = Double(String(decoding: b[start..<i], as: UTF8.self)) else { return nil }
            return .number(d)
        }
    }

    private static func literal(_ b: [UInt8], _ i: inout Int, _ word: String, _ v: MiniJSON) -> MiniJSON? {
        let w = Array(word.utf8)
        guard i + w.count <= b.count, Array(b[i..<i + w.count]) == w else { return nil }
        i += w.count
        return v
    }

    private static func string(_ b: [UInt8], _ i: inout Int) -> MiniJSON? {
        guard i < b.count, b[i] == UInt8(ascii: "\"") else { return nil }
        i += 1
        var out: [UInt8] = []
        while i < b.count {
            let c = b[i]
            i += 1
            if c == UInt8(ascii: "\"") { return .string(String(decoding: out, as: UTF8.self)) }
            if c == UInt8(ascii: "\\") {
                guard i < b.count else { return nil }
                let e = b[i]
                i += 1
                switch e {
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "u"):
                    guard i + 4 <= b.count, let u = UInt32(String(decoding: b[i..<i + 4], as: UTF8.self), radix: 16) else { return nil }
                    i += 4
                    out += Array(String(Unicode.Scalar(u).map(Character.init) ?? "?").utf8)
                default: out.append(e)
                }
            } else {
                out.append(c)
            }
        }
        return nil
    }
}
